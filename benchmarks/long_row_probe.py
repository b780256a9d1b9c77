"""A probe: the layer norm of 4096 rows of 32768 f16 (the sweep's slowest point, 67% of copy
for tile and Triton alike, both looping over 16384-column chunks and reading each row twice)
with shorter chunks or the whole row in one tile instead, at several warp counts, tile and
Triton, in interleaved launches; every output checked against torch first.

    python3 benchmarks/long_row_probe.py --compile-only    # CPU machine, TILE_TARGET=sm_90a
    python3 benchmarks/long_row_probe.py                   # the H200
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from implementations import EPS, _examples, reference  # noqa: E402
from matmul_rounds import interleaved_launches, ratio_summary  # noqa: E402

SHAPE = (4096, 32768)
# (BLOCK, num_warps): the sweep's config first (two chunks a row), then shorter chunks, then
# the whole row (the Triton tutorial's choice for this row: BLOCK 32768, 8 warps).
CONFIGS = [(16384, 32), (16384, 16), (8192, 16), (8192, 8), (4096, 8), (4096, 4), (32768, 8), (32768, 16), (32768, 32)]


def tile_ln(block, warps):
    layer_norm = _examples()[2]

    def run(x, w, b):
        out = torch.empty_like(x)
        layer_norm.layer_norm_kernel[(x.shape[0],)](x, w, b, out, x.shape[1], x.stride(0), out.stride(0), EPS,
                                                    BLOCK=block, ONE_BLOCK=block >= x.shape[1], num_warps=warps)
        return out
    return run


def triton_ln(block, warps):
    import triton_kernels as tk

    def run(x, w, b):
        out = torch.empty_like(x)
        tk.layer_norm_fwd_kernel[(x.shape[0],)](x, w, b, out, x.stride(0), out.stride(0), x.shape[1], EPS,
                                                BLOCK=block, ONE_BLOCK=block >= x.shape[1], num_warps=warps)
        return out
    return run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    dev = "meta" if args.compile_only else "cuda"
    torch.manual_seed(0)
    ins = (torch.randn(SHAPE, dtype=torch.float16, device=dev), torch.randn(SHAPE[1], dtype=torch.float16, device=dev),
           torch.randn(SHAPE[1], dtype=torch.float16, device=dev))
    fns = {f"tile {blk}/{w}w": tile_ln(blk, w) for blk, w in CONFIGS}
    if args.compile_only:
        for fn in fns.values():
            fn(*ins)
        return
    fns.update({f"triton {blk}/{w}w": triton_ln(blk, w) for blk, w in CONFIGS})
    want = reference("layer_norm", ins)
    for name, fn in fns.items():
        torch.testing.assert_close(fn(*ins), want, rtol=1e-2, atol=1e-2, msg=lambda m: f"{name}: {m}")
    steps = interleaved_launches(fns, ins)
    base = f"triton {CONFIGS[0][0]}/{CONFIGS[0][1]}w"
    nbytes = 2 * ins[0].numel() * ins[0].element_size()
    for name in fns:
        ms = statistics.median(t[name] for t in steps)
        r = ratio_summary(steps, base, name)
        print(f"layer_norm {SHAPE} {name}: {ms * 1e3:.1f} us, {nbytes / ms / 1e6:.0f} GB/s, "
              f"vs {base} {r['median']:.4f}x ({r['low']:.4f}-{r['high']:.4f})", flush=True)


if __name__ == "__main__":
    main()
