"""examples/cross_entropy.py (B*T = 8192 rows, V = 32000, bf16, label smoothing 0.1, a tenth
of the rows ignored) and examples/rms_norm_backward.py (8192 x 4096, bf16, with a weight) on
the GPU: each checked against torch, then timed beside its Triton twin
(benchmarks/triton_training_kernels.py: the same algorithm, blocks and warps) and torch in
interleaved launches (matmul_rounds.py); a JSON summary (median ms, GB/s of the bytes each
kernel must move, Triton's time over tile's with quartiles) to stdout and to
$OUT/training_kernels.json where OUT is set.

    python3 benchmarks/training_kernels_on_device.py --compile-only   # CPU machine: fills the cache (sm_90a)
    python3 benchmarks/training_kernels_on_device.py                  # a GPU
"""

from __future__ import annotations

import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

CE_SHAPE = (8192, 32000)
RMS_SHAPE = (8192, 4096)
SMS = 132  # H100 SXM and H200: the backward's programs in a compile-only pass
LAUNCHES = 50


def _timed(fns: dict, args: tuple, launches: int, nbytes: int, entry: dict, label: str) -> None:
    """Interleaved launches of fns: median ms and GB/s each, and the other's time over tile's."""
    from matmul_rounds import interleaved_launches, ratio_summary

    steps = interleaved_launches(fns, args, launches=launches)
    ms = {name: statistics.median(t[name] for t in steps) for name in fns}
    entry[label] = {name: {"median_ms": ms[name], "gb_per_s": nbytes / ms[name] / 1e6} for name in fns}
    for name in fns:
        if name != "tile":
            entry[label][name]["time_over_tile"] = ratio_summary(steps, name, "tile")
    print(f"{label}: " + ", ".join(f"{n} {ms[n]:.3f} ms {nbytes / ms[n] / 1e6:.0f} GB/s" for n in fns), flush=True)


def _rel_err(got, want) -> float:
    return (got.float() - want.float()).abs().max().item() / max(want.float().abs().max().item(), 1e-6)


def cross_entropy(compile_only: bool, launches: int) -> dict:
    import torch

    import cross_entropy as ce

    rows, vocab = CE_SHAPE
    dev = "meta" if compile_only else "cuda"
    logits = torch.randn(rows, vocab, device=dev).mul(3).to(torch.bfloat16)
    target = torch.randint(0, vocab, (rows,), generator=torch.Generator().manual_seed(0))
    target[::10] = -100
    n = int((target != -100).sum().item())  # (the same count in the build: an int's divisibility is specialized)
    target = target.to(dev)
    grad = torch.empty_like(logits)
    for in_place in (False, True):
        ce.cross_entropy_forward_backward(logits.clone() if in_place else logits, target, label_smoothing=0.1,
                                          grad=None if in_place else grad, in_place=in_place, n_non_ignore=n)
    if compile_only:
        print("cross_entropy: kernels compiled", flush=True)
        return {}
    import triton_training_kernels as tk

    ref = logits.float().requires_grad_()
    want = torch.nn.functional.cross_entropy(ref, target, ignore_index=-100, label_smoothing=0.1)
    want.backward()
    entry = {"shape": {"rows": rows, "vocab": vocab}, "dtype": "bfloat16", "label_smoothing": 0.1, "checks": {}}
    for name, f in (("tile", ce.cross_entropy_forward_backward), ("triton", tk.cross_entropy_forward_backward)):
        loss, g = f(logits.clone(), target, label_smoothing=0.1, in_place=True)
        errs = {"loss": _rel_err(loss, want), "grad": _rel_err(g, ref.grad)}
        entry["checks"][name] = {"ok": all(e < 2e-2 for e in errs.values()), "max_rel_err": errs}
        print(f"cross_entropy {name}: {entry['checks'][name]}", flush=True)

    def torch_ce(x, t, g):
        xg = x.detach().requires_grad_()
        loss = torch.nn.functional.cross_entropy(xg, t, ignore_index=-100, label_smoothing=0.1)
        return loss, torch.autograd.grad(loss, xg)[0]

    fns = {"tile": lambda x, t, g: ce.cross_entropy_forward_backward(x, t, label_smoothing=0.1, grad=g,
                                                                     n_non_ignore=n),
           "triton": lambda x, t, g: tk.cross_entropy_forward_backward(x, t, label_smoothing=0.1, grad=g,
                                                                       n_non_ignore=n),
           "torch": torch_ce}
    # Two reads of the logits and one write of the gradient (bf16).
    _timed(fns, (logits, target, grad), launches, 3 * rows * vocab * 2, entry, "forward+backward")
    return entry


def rms_norm(compile_only: bool, launches: int) -> dict:
    import torch

    import rms_norm_backward as rn

    rows, cols = RMS_SHAPE
    dev = "meta" if compile_only else "cuda"
    x, dy = (torch.randn(rows, cols, device=dev).to(torch.bfloat16) for _ in range(2))
    w = (1 + 0.1 * torch.randn(cols, device=dev)).to(torch.bfloat16)
    sms = SMS if compile_only else torch.cuda.get_device_properties(0).multi_processor_count
    y, rstd = rn.rms_norm_forward(x, w)
    for atomic_dw in (False, True):
        rn.rms_norm_backward(dy, x, w, rstd, atomic_dw=atomic_dw, n_programs=sms)
    if compile_only:
        print("rms_norm: kernels compiled", flush=True)
        return {}
    import triton_training_kernels as tk

    xr, wr = x.float().requires_grad_(), w.float().requires_grad_()
    want = rn.reference(xr, wr)
    want.backward(dy.float())
    entry = {"shape": {"rows": rows, "cols": cols}, "dtype": "bfloat16", "programs": sms, "checks": {}}
    for name, fwd, bwd in (("tile", rn.rms_norm_forward, lambda *a, at: rn.rms_norm_backward(*a, atomic_dw=at)),
                           ("triton", tk.rms_norm_forward, lambda *a, at: tk.rms_norm_backward(*a, sms, atomic_dw=at))):
        y, rstd = fwd(x, w)
        for at in (False, True):
            dx, dw = bwd(dy, x, w, rstd, at=at)
            errs = {"y": _rel_err(y, want), "dx": _rel_err(dx, xr.grad), "dw": _rel_err(dw, wr.grad)}
            key = f"{name} {'atomic' if at else 'partial rows'}"
            entry["checks"][key] = {"ok": all(e < 2e-2 for e in errs.values()), "max_rel_err": errs}
            print(f"rms_norm {key}: {entry['checks'][key]}", flush=True)

    def torch_fwd(x, w, dy, rstd):
        return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)

    _timed({"tile": lambda x, w, dy, rstd: rn.rms_norm_forward(x, w),
            "triton": lambda x, w, dy, rstd: tk.rms_norm_forward(x, w),
            "torch": torch_fwd}, (x, w, dy, rstd), launches, 2 * rows * cols * 2, entry, "forward")
    for at in (False, True):
        _timed({"tile": lambda x, w, dy, rstd: rn.rms_norm_backward(dy, x, w, rstd, atomic_dw=at),
                "triton": lambda x, w, dy, rstd: tk.rms_norm_backward(dy, x, w, rstd, sms, atomic_dw=at)},
               (x, w, dy, rstd), launches, 3 * rows * cols * 2, entry, f"backward ({'atomic' if at else 'partial'} dW)")
    # the autotuner's choice, and each of its configs timed alone (the same compiled kernels)
    import tile

    tuned = rn.rms_norm_backward_atomic_kernel
    entry["atomic dW autotuned config"] = [str(c) for c in tuned.cache.values()]
    configs, cache = tuned.configs, tuned.cache
    for c in configs:
        tuned.configs, tuned.cache = [tile.Config({}, num_warps=c.num_warps)], {}
        _timed({"tile": lambda x, w, dy, rstd: rn.rms_norm_backward(dy, x, w, rstd, atomic_dw=True),
                "triton": lambda x, w, dy, rstd: tk.rms_norm_backward(dy, x, w, rstd, sms, atomic_dw=True)},
               (x, w, dy, rstd), launches, 3 * rows * cols * 2, entry, f"backward (atomic dW, tile at {c.num_warps} warps)")
    tuned.configs, tuned.cache = configs, cache
    return entry


def main() -> int:
    from device_checks import script_args

    args = script_args(LAUNCHES)
    import torch

    torch.manual_seed(0)
    summary = {"cross_entropy": cross_entropy(args.compile_only, args.launches),
               "rms_norm": rms_norm(args.compile_only, args.launches)}
    if args.compile_only:
        return 0
    summary["device"] = torch.cuda.get_device_name()
    print(json.dumps(summary, indent=1))
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "training_kernels.json"), "w") as fh:
            json.dump(summary, fh, indent=1)
    return 0 if all(c["ok"] for part in ("cross_entropy", "rms_norm") for c in summary[part]["checks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
