"""examples/fp8_gemm.py on the GPU, after the float8 dot's paths (`dot_checks`): e4m3 x e4m3 -> bf16 at 4096^3 and 8192^3 with row-wise and
per-tensor scales against torch._scaled_mm (cuBLAS), and with DeepGEMM's block scales (1 x 128
activations, 128 x 128 weights) at M=4096, N=7168, K=16384 beside _scaled_mm's row-wise product
of the same shape (an anchor: torch has no such block scaling on sm_90 to compare with). Every
output is checked first, against float64 of the dequantized operands and, where it runs,
_scaled_mm; then each point is timed in interleaved launches (matmul_rounds.py): tile one
program per tile, tile persistent (one program per SM), torch. A JSON summary (median ms,
TFLOP/s, torch's time over tile's with quartiles) to stdout and to $OUT/fp8_gemm.json where
OUT is set.

    python3 benchmarks/fp8_gemm_on_device.py --compile-only   # CPU machine: fills the sm_90a cache
    python3 benchmarks/fp8_gemm_on_device.py                  # a GPU

or through the device scripts: `bash benchmarks/checks_for_device.sh fp8_gemm_on_device` here, then
`bash benchmarks/checks_on_device.sh fp8_gemm_on_device` on the GPU machine (carry .device).
"""

from __future__ import annotations

import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SCALED_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]
BLOCK_SHAPE = (4096, 7168, 16384)  # DeepSeek-V3's projection shape, DeepGEMM's benchmark
SMS = 132  # H100 SXM and H200: the persistent grid in a compile-only pass
LAUNCHES = 50


def _inputs(M, N, K, scaling, dev):
    """Quantized operands and their scales (fp8_gemm.quantize); on meta, tensors of their shapes."""
    import torch

    import fp8_gemm as g

    if dev == "meta":
        e4m3 = torch.float8_e4m3fn
        a, b = torch.empty(M, K, dtype=e4m3, device=dev), torch.empty(N, K, dtype=e4m3, device=dev)
        if scaling == "block":
            kb = -(-K // g.BLOCK)
            return a, b, torch.empty(M, kb, device=dev), torch.empty(-(-N // g.BLOCK), kb, device=dev)
        n = (M, N) if scaling == "row" else (1, 1)
        return a, b, torch.empty(n[0], 1, device=dev), torch.empty(n[1], device=dev)
    a, sa = g.quantize(torch.randn(M, K, device=dev), scaling)
    if scaling == "block":
        b, sb = g.quantize_weight(torch.randn(N, K, device=dev) / K ** 0.5)
    else:
        b, sb = g.quantize(torch.randn(N, K, device=dev) / K ** 0.5, scaling)
        sb = sb.reshape(-1)
    return a, b, sa, sb


def _check(name, got, want, theirs) -> dict:
    """got's largest error relative to the largest |want| (float64), and to _scaled_mm's output."""
    scale = want.abs().max().item()
    err = (got.double() - want).abs().max().item() / scale
    out = {"max_rel_err_vs_float64": err, "ok": err < 2e-2}
    if theirs is not None:
        e2 = (got.float() - theirs.float()).abs().max().item() / scale
        out.update(max_rel_err_vs_scaled_mm=e2, ok=out["ok"] and e2 < 2e-2)
    print(f"{name}: {'matches torch' if out['ok'] else 'FAIL'} {out}", flush=True)
    return out


def dot_checks(compile_only: bool) -> dict:
    """The float8 dot's sm_90a paths (tests/test_fp8_dot.py's kernels) on the GPU against float64:
    B K-major as a TMA-copied block, N-major (stored transposed), K-major by pointer increments
    (loaded N x K, tutorial 03's form), transposed in the kernel outside a loop; e4m3, e5m2, mixed."""
    import torch

    sys.path.insert(0, os.path.join(os.getcwd(), "tests"))  # (run from the repository's root, as the device scripts are)
    import test_fp8_dot as t

    dev = "meta" if compile_only else "cuda"
    e4, e5 = torch.float8_e4m3fn, torch.float8_e5m2
    M, N, K = 300, 260, 512
    big = dict(BLOCK_M=128, BLOCK_N=128, num_warps=8, num_stages=3)
    out = {}

    def operands(da, db, b_k_major):
        a = (torch.randn(M, K, device=dev) * 4).to(da)
        b = (torch.randn(N, K, device=dev) * 4).to(db).T if b_k_major else (torch.randn(K, N, device=dev) * 4).to(db)
        return a, b

    cases = [(f"{da}x{db} B {'K' if km else 'N'}-major", kernel, da, db, km, tiles) for kernel, da, db, km, tiles in (
        (t.fp8_matmul_kernel, e4, e4, True, dict(big, BLOCK_K=64)), (t.fp8_matmul_kernel, e4, e4, False, dict(big, BLOCK_K=64)),
        (t.fp8_matmul_kernel, e5, e5, True, dict(big, BLOCK_K=128)), (t.fp8_matmul_kernel, e4, e5, True, dict(big, BLOCK_K=64)),
        (t.fp8_pointer_increments_kernel, e4, e5, True, dict(big, BLOCK_K=128)))]
    for name, kernel, da, db, km, tiles in cases:
        name = f"{kernel.name} {name}".replace("torch.float8_", "")
        a, b = operands(da, db, km)
        c = torch.full((M, N), float("nan"), device=dev,
                       dtype=torch.bfloat16 if kernel is t.fp8_pointer_increments_kernel else torch.float32)
        grid = (-(-M // tiles["BLOCK_M"]), -(-N // tiles["BLOCK_N"]))
        kernel[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), **tiles)
        if not compile_only:
            out[name] = _check(name, c, a.double() @ b.double(), None)
    a, b = (torch.randn(64, 64, device=dev) * 4).to(e4), (torch.randn(32, 64, device=dev) * 4).to(e4)
    c = torch.empty(64, 32, device=dev)
    t.fp8_dot_transposed_kernel[(1, )](a, b, c, N=32, K=64, num_warps=4)
    if not compile_only:
        out["dot(x, y.T) outside a loop"] = _check("dot(x, y.T) outside a loop", c, a.double() @ b.double().T, None)
    if compile_only:
        print("float8 dot checks: kernels compiled", flush=True)
    return out


def point(M, N, K, scaling, compile_only: bool, launches: int, sms: int) -> dict:
    import torch

    import fp8_gemm as g
    from matmul_rounds import interleaved_launches, ratio_summary

    dev = "meta" if compile_only else "cuda"
    a, b, sa, sb = _inputs(M, N, K, scaling, dev)
    out = torch.empty(M, N, dtype=torch.bfloat16, device=dev)
    fns = {"tile": lambda: g.fp8_gemm(a, b, sa, sb, scaling, out=out),
           "tile persistent": lambda: g.fp8_gemm(a, b, sa, sb, scaling, programs=sms, out=out)}
    label = f"{scaling} {M}x{N}x{K}"
    if compile_only:
        for f in fns.values():
            f()
        print(f"{label}: kernels compiled", flush=True)
        return {}
    entry = {"shape": {"M": M, "N": N, "K": K}, "scaling": scaling, "programs": sms, "checks": {}}
    want = g.reference(a, b, sa, sb, scaling)
    theirs = g.scaled_mm(a, b, sa, sb, scaling)
    for name, f in fns.items():
        out.fill_(float("nan"))
        f()
        entry["checks"][name] = _check(f"{label} {name}", out, want, theirs)
    del want
    if scaling == "block":  # (the anchor: a row-wise product of the same shape)
        ra, rb, rsa, rsb = _inputs(M, N, K, "row", dev)
        fns["torch row-wise (anchor)"] = lambda: g.scaled_mm(ra, rb, rsa, rsb, "row")
        entry["checks"]["torch row-wise (anchor)"] = {"ok": g.scaled_mm(ra, rb, rsa, rsb, "row") is not None}
    elif theirs is not None:
        fns["torch"] = lambda: g.scaled_mm(a, b, sa, sb, scaling)
    steps = interleaved_launches({k: (lambda f=f: f()) for k, f in fns.items()}, (), launches=launches)
    flop = 2 * M * N * K
    ms = {k: statistics.median(t[k] for t in steps) for k in fns}
    entry["timing"] = {k: {"median_ms": ms[k], "tflop_per_s": flop / ms[k] / 1e9} for k in fns}
    for k in fns:
        if not k.startswith("tile"):
            for t in ("tile", "tile persistent"):
                entry["timing"][k][f"time_over_{t.replace(' ', '_')}"] = ratio_summary(steps, k, t)
    print(f"{label}: " + ", ".join(f"{k} {ms[k]:.3f} ms {flop / ms[k] / 1e9:.0f} TFLOP/s" for k in fns), flush=True)
    return entry


def main() -> int:
    from device_checks import script_args

    args = script_args(LAUNCHES)
    import torch

    torch.manual_seed(0)
    sms = SMS if args.compile_only else torch.cuda.get_device_properties(0).multi_processor_count
    checks = dot_checks(args.compile_only)
    points = [point(*shape, scaling, args.compile_only, args.launches, sms)
              for shape in SCALED_SHAPES for scaling in ("row", "tensor")]
    points.append(point(*BLOCK_SHAPE, "block", args.compile_only, args.launches, sms))
    if args.compile_only:
        return 0
    summary = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "dot_checks": checks,
               "points": points}
    print(json.dumps(summary, indent=1))
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "fp8_gemm.json"), "w") as fh:
            json.dump(summary, fh, indent=1)
    ok = all(c["ok"] for c in checks.values()) and all(c["ok"] for p in points for c in p["checks"].values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
