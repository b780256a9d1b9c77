"""examples/flash_attention_bwd.py on the GPU at B=4, H=32, N=4096, D=128, bf16, causal and
not: dQ, dK, dV (both dQ ways) checked against torch autograd of the f32 reference, then the
forward and the backward timed beside torch's scaled_dot_product_attention (default backend)
in interleaved launches (matmul_rounds.py); a JSON summary with TFLOP/s (forward
4*B*H*N*N*D flops, backward 2.5 times that, halved when causal) to stdout and to
$OUT/attention_bwd.json where OUT is set. The backward is timed beside its Triton twin too:
the example's own kernels renamed `tile.` -> `tl.` (`triton_twin`), launched by the same
`attention_backward` at the same blocks, checked like tile's: whether a gap to torch is
tile's code generation or the algorithm. (The twin is JIT-compiled on the GPU: not built by
--compile-only.)

    python3 benchmarks/attention_bwd_on_device.py --compile-only   # CPU machine: fills the cache (sm_90a)
    python3 benchmarks/attention_bwd_on_device.py                  # a GPU
"""

from __future__ import annotations

import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SHAPE = (4, 32, 4096, 128)
LAUNCHES = 50
# tile's default num_stages, given to the twin as well (Triton's default is 3)
STAGES = 2
# What the backward's kernels use, helpers and constants before their users
TWIN_NAMES = ["LOG2E", "key_range", "bwd_preprocess", "dkdv_blocks", "bwd_dkdv", "dq_blocks", "bwd_dq"]


def fab_twin():
    """examples/flash_attention_bwd.py's kernels as Triton's: `attention_backward(...,
    kernels=fab_twin())` runs the same algorithm through Triton's compiler."""
    import flash_attention_bwd as fab
    from library_kernels_on_device import triton_twin

    return triton_twin(fab, TWIN_NAMES)


def main() -> int:
    from device_checks import script_args

    args = script_args(LAUNCHES)
    import torch

    from matmul_rounds import interleaved_launches, ratio_summary
    import flash_attention
    import flash_attention_bwd as fab

    torch.manual_seed(0)
    dev = "meta" if args.compile_only else "cuda"
    B, H, N, D = SHAPE
    q, k, v, do = (torch.randn(SHAPE, dtype=torch.bfloat16, device=dev) for _ in range(4))
    summary = {"shape": {"B": B, "H": H, "N": N, "D": D}, "dtype": "bfloat16", "triton_twin_num_stages": STAGES,
               "results": []}
    twin = None if args.compile_only else fab_twin()
    for causal in (False, True):
        o, lse = flash_attention.attention(q, k, v, causal, return_lse=True, **fab.FORWARD)
        for dq_atomic in (False, True):
            fab.attention_backward(q, k, v, o, do, lse, causal, dq_atomic=dq_atomic)
        if args.compile_only:
            print(f"causal={causal}: forward and backward kernels compiled", flush=True)
            continue
        entry = {"causal": causal, "checks": {}}
        variants = {"dq kernel": {}, "dq atomic": {"dq_atomic": True},
                    "triton twin": {"kernels": twin, "num_stages": STAGES},
                    "triton twin dq atomic": {"kernels": twin, "dq_atomic": True, "num_stages": STAGES}}
        # The reference in f32 by autograd, one (batch) at a time to bound its N x N memory.
        for label, how in variants.items():
            got = fab.attention_backward(q, k, v, o, do, lse, causal, **how)
            worst = {}
            for b in range(B):
                qf, kf, vf = (t[b:b + 1].float().requires_grad_() for t in (q, k, v))
                fab.reference(qf, kf, vf, causal).backward(do[b:b + 1].float())
                for name, g, w in zip(("dq", "dk", "dv"), got, (qf.grad, kf.grad, vf.grad)):
                    err = (g[b:b + 1].float() - w).abs().max().item() / max(w.abs().max().item(), 1e-6)
                    worst[name] = max(worst.get(name, 0.0), err)
            ok = all(e < 2e-2 for e in worst.values())
            entry["checks"][label] = {"ok": ok, "max_rel_err": worst}
            print(f"causal={causal} {label}: {'ok' if ok else 'MISMATCH'} {worst}", flush=True)

        def sdpa(q, k, v, do):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

        fwd = {"tile": lambda q, k, v, do: flash_attention.attention(q, k, v, causal, return_lse=True, **fab.FORWARD),
               "torch sdpa": sdpa}
        qg, kg, vg = (t.detach().clone().requires_grad_() for t in (q, k, v))
        out_t = sdpa(qg, kg, vg, do)
        timed = {"tile": "dq kernel", "tile dq atomic": "dq atomic", "triton twin": "triton twin",
                 "triton twin dq atomic": "triton twin dq atomic"}
        bwd = {name: lambda q, k, v, do, how=variants[label]: fab.attention_backward(q, k, v, o, do, lse, causal,
                                                                                      **how)
               for name, label in timed.items()}
        bwd["torch sdpa"] = lambda q, k, v, do: torch.autograd.grad(out_t, (qg, kg, vg), do, retain_graph=True)
        flops = 4 * B * H * N * N * D / (2 if causal else 1)
        for part, fns, f in (("forward", fwd, flops), ("backward", bwd, 2.5 * flops)):
            steps = interleaved_launches(fns, (q, k, v, do), launches=args.launches)
            ms = {name: statistics.median(t[name] for t in steps) for name in fns}
            entry[part] = {name: {"median_ms": ms[name], "tflops": f / ms[name] / 1e9} for name in fns}
            for name in fns:
                if name != "torch sdpa":
                    entry[part][name]["sdpa_time_over_tile"] = ratio_summary(steps, "torch sdpa", name)
            for name in ("tile", "tile dq atomic"):
                twin_name = name.replace("tile", "triton twin")
                if twin_name in fns:  # (the backward: Triton's time for the same kernels over tile's)
                    entry[part][name]["triton_twin_time_over_tile"] = ratio_summary(steps, twin_name, name)
            print(f"causal={causal} {part}: " + ", ".join(
                f"{n} {ms[n]:.3f} ms {f / ms[n] / 1e9:.0f} TFLOP/s" for n in fns), flush=True)
        summary["results"].append(entry)
    if not args.compile_only:
        summary["device"] = torch.cuda.get_device_name()
        print(json.dumps(summary, indent=1))
        if os.environ.get("OUT"):
            with open(os.path.join(os.environ["OUT"], "attention_bwd.json"), "w") as fh:
                json.dump(summary, fh, indent=1)
        return 0 if all(c["ok"] for e in summary["results"] for c in e["checks"].values()) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
