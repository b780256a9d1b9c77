"""Matmul configs (tile sizes, warps, stages) of examples/matmul.py, side by side on the GPU.

Here (no GPU), into the device cache:   python benchmarks/matmul_sweep.py --compile-only
On the GPU machine (cache carried):     python benchmarks/matmul_sweep.py --out DIR

Each config is first checked against torch (bias + gelu at 4096^3, and an odd
shape with a column-major B), then timed (CUDA events, median) at 4096^3 and
8192^3, plain and with the bias + gelu epilogue. torch.matmul (cuBLAS) is timed
in the same process. The table goes to stdout and DIR/matmul_sweep.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))

CONFIGS = [  # BM, BN, BK, num_warps, num_stages
    (128, 128, 32, 4, 3), (128, 128, 32, 8, 3), (128, 128, 32, 8, 4), (128, 128, 64, 8, 3), (128, 128, 64, 8, 4),
    (128, 256, 32, 8, 3), (128, 256, 32, 8, 4), (128, 256, 64, 8, 3), (256, 128, 32, 8, 3), (256, 128, 64, 8, 3),
    (128, 128, 64, 4, 3), (128, 128, 64, 4, 4), (128, 256, 64, 8, 4), (256, 128, 64, 8, 4), (128, 128, 32, 4, 4),
]
SIZES = (4096, 8192)
ODD = (1000, 1000, 1000)  # tails in M, N and K; B column-major


def cfg_dict(c, activation):
    bm, bn, bk, nw, ns = c
    return dict(BM=bm, BN=bn, BK=bk, GROUP=8, num_warps=nw, num_stages=ns, ACTIVATION=activation)


def launch(mm, a, b, bias, out, cfg):
    M, K = a.shape
    N = b.shape[1]
    grid = ((-(-M // cfg["BM"])) * (-(-N // cfg["BN"])),)
    mm.matmul_kernel[grid](a, b, bias, out, M, N, K, *a.stride(), *b.stride(), *out.stride(), **cfg)
    return out


def inputs(torch, M, N, K, device, col_major_b=False, col_major_a=False):
    a = (torch.randn(M, K, device=device) / K ** 0.25).to(torch.bfloat16)
    a = a.t().contiguous().t() if col_major_a else a
    b = (torch.randn(N, K, device=device) / K ** 0.25).to(torch.bfloat16)
    b = b.t() if col_major_b else b.t().contiguous()
    bias = torch.randn(N, device=device).to(torch.bfloat16)
    return a, b, bias, torch.empty(M, N, device=device, dtype=torch.bfloat16)


def time_ms(torch, fn) -> float:
    """Median ms of CUDA-event-timed runs, as the harness times its matmul points."""
    import harness

    return harness.time_ms(fn, torch.cuda.synchronize, **harness.MATMUL_TIMING)[0]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--configs", default=None, help="instead of CONFIGS: 'BM,BN,BK,warps,stages;...'")
    ap.add_argument("--col-major", default="", choices=["", "a", "b", "ab"],
                    help="the operands stored column-major at 4096^3 and 8192^3 too (b: x @ W.T)")
    args = ap.parse_args()
    layouts = {"col_major_a": "a" in args.col_major, "col_major_b": "b" in args.col_major}
    configs = [tuple(int(x) for x in c.split(",")) for c in args.configs.split(";")] if args.configs else CONFIGS
    import torch

    import matmul as mm

    device = "meta" if args.compile_only else "cuda"
    if args.compile_only:
        os.environ.setdefault("TILE_COMPILE_ONLY", "1")
        os.environ.setdefault("TILE_TARGET", "sm_90a")
    rows, failures = [], 0
    for c in configs:
        row = {"config": dict(zip(("BM", "BN", "BK", "num_warps", "num_stages"), c))}
        try:
            for act in ("none", "gelu"):
                cfg = cfg_dict(c, act)
                for n in SIZES[:1]:
                    x = inputs(torch, n, n, n, device, **layouts)
                    got = launch(mm, *x, cfg)
                    if args.compile_only:
                        continue
                    want = mm.reference(*x[:3], activation=act)
                    err = (got.float() - want.float()).abs().max().item()
                    row[f"max_err_{act}"] = err
                    if not err < 0.1:
                        raise AssertionError(f"{act} {n}: max error {err}")
                x = inputs(torch, *ODD, device, col_major_b=True)
                got = launch(mm, *x, cfg)
                if not args.compile_only:
                    want = mm.reference(*x[:3], activation=act)
                    err = (got.float() - want.float()).abs().max().item()
                    row[f"odd_max_err_{act}"] = err
                    if not err < 0.1:
                        raise AssertionError(f"odd {ODD} {act}: max error {err}")
            if not args.compile_only:
                for act in ("none", "gelu"):
                    for n in SIZES:
                        x = inputs(torch, n, n, n, device, **layouts)
                        ms = time_ms(torch, lambda: launch(mm, *x, cfg_dict(c, act)))
                        row[f"tflops_{act}_{n}"] = round(2 * n ** 3 / ms / 1e9, 1)
        except Exception as e:  # noqa: BLE001  (one failing config must not hide the others)
            row["error"] = f"{type(e).__name__}: {e}"[:300]
            failures += 1
        rows.append(row)
        print(json.dumps(row), flush=True)
    if not args.compile_only:
        ref = {}
        for n in SIZES:
            a, b, _, _ = inputs(torch, n, n, n, device, **layouts)
            ms = time_ms(torch, lambda: torch.matmul(a, b))
            ref[f"cublas_tflops_{n}"] = round(2 * n ** 3 / ms / 1e9, 1)
        print(json.dumps(ref))
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, "matmul_sweep.json"), "w") as f:
                json.dump({"configs": rows, "reference": ref, "device": torch.cuda.get_device_name()}, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
