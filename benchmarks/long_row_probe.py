"""A probe: the layer norm of 4096 rows of 32768 f16 (the sweep's slowest point, 67% of copy
for tile and Triton alike, both looping over 16384-column chunks and reading each row twice)
with shorter chunks or the whole row in one tile instead, at several warp counts, tile and
Triton, in interleaved launches; every output checked against torch first.

    python3 benchmarks/long_row_probe.py --compile-only    # CPU machine, TILE_TARGET=sm_90a
    python3 benchmarks/long_row_probe.py                   # the H200
    (both with --stages: tile's chunk loops pipelined, at a few stage counts)
"""

from __future__ import annotations

import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from implementations import EPS, _examples, reference  # noqa: E402
from matmul_rounds import interleaved_launches, ratio_summary  # noqa: E402
from probe_device import probe_device  # noqa: E402

SHAPE = (4096, 32768)
# (BLOCK, num_warps): the sweep's config first (two chunks a row), then shorter chunks, then
# the whole row (the Triton tutorial's choice for this row: BLOCK 32768, 8 warps).
HINTED = [(8192, 16), (8192, 8), (4096, 8), (16384, 32)]  # looped, with L2 eviction hints (Triton only)
CONFIGS = [(16384, 32), (16384, 16), (8192, 16), (8192, 8), (4096, 8), (4096, 4), (32768, 8), (32768, 16), (32768, 32)]
# With --stages: the harness's chunking (8192 columns, 16 warps) and shorter chunks, tile's loops
# pipelined through shared-memory rings (STAGES; 1 = not), against Triton's looped kernel.
STAGED = [(8192, 16, 1), (8192, 16, 2), (8192, 16, 3), (4096, 8, 1), (4096, 8, 2), (4096, 8, 3), (4096, 16, 3)]


def tile_ln(block, warps, stages=1):
    layer_norm = _examples()[2]

    def run(x, w, b):
        out = torch.empty_like(x)
        layer_norm.layer_norm_kernel[(x.shape[0],)](x, w, b, out, x.shape[1], x.stride(0), out.stride(0), EPS,
                                                    BLOCK=block, ONE_BLOCK=block >= x.shape[1], STAGES=stages,
                                                    num_warps=warps)
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


def triton_ln_hinted(block, warps):
    """The looped kernel with L2 hints: the first pass keeps the row (evict_last) for the
    second, which lets it go (evict_first). Defined here: Triton only on the GPU machine."""
    import triton
    import triton.language as tl

    global _HINTED
    if "_HINTED" not in globals():
        @triton.jit
        def kernel(x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            x_row = x_ptr + row * x_row_stride
            out_row = out_ptr + row * out_row_stride
            cols = tl.arange(0, BLOCK)
            acc = tl.zeros((BLOCK,), tl.float32)
            acc_sq = tl.zeros((BLOCK,), tl.float32)
            for start in range(0, n_cols, BLOCK):
                v = tl.load(x_row + start + cols, mask=start + cols < n_cols, other=0.0,
                            eviction_policy="evict_last").to(tl.float32)
                acc += v
                acc_sq += v * v
            mean = tl.sum(acc, axis=0) / n_cols
            var = tl.maximum(tl.sum(acc_sq, axis=0) / n_cols - mean * mean, 0.0)
            rstd = 1.0 / tl.sqrt(var + eps)
            for start in range(0, n_cols, BLOCK):
                mask = start + cols < n_cols
                v = tl.load(x_row + start + cols, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
                w = tl.load(w_ptr + start + cols, mask=mask).to(tl.float32)
                b = tl.load(b_ptr + start + cols, mask=mask).to(tl.float32)
                tl.store(out_row + start + cols, ((v - mean) * rstd * w + b).to(out_ptr.dtype.element_ty), mask=mask)

        _HINTED = kernel

    def run(x, w, b):
        out = torch.empty_like(x)
        _HINTED[(x.shape[0],)](x, w, b, out, x.stride(0), out.stride(0), x.shape[1], EPS, BLOCK=block, num_warps=warps)
        return out
    return run


def main() -> None:
    dev = probe_device()
    ins = (torch.randn(SHAPE, dtype=torch.float16, device=dev), torch.randn(SHAPE[1], dtype=torch.float16, device=dev),
           torch.randn(SHAPE[1], dtype=torch.float16, device=dev))
    staged = "--stages" in sys.argv
    if staged:
        fns = {f"tile {blk}/{w}w/{s}s": tile_ln(blk, w, s) for blk, w, s in STAGED}
    else:
        fns = {f"tile {blk}/{w}w": tile_ln(blk, w) for blk, w in CONFIGS}
    if dev == "meta":
        for fn in fns.values():
            fn(*ins)
        return
    triton_configs = sorted({(blk, w) for blk, w, _ in STAGED}) if staged else CONFIGS
    fns.update({f"triton {blk}/{w}w": triton_ln(blk, w) for blk, w in triton_configs})
    if not staged:
        fns.update({f"triton hinted {blk}/{w}w": triton_ln_hinted(blk, w) for blk, w in HINTED})
    want = reference("layer_norm", ins)
    for name, fn in fns.items():
        torch.testing.assert_close(fn(*ins), want, rtol=1e-2, atol=1e-2, msg=lambda m: f"{name}: {m}")
    steps = interleaved_launches(fns, ins)
    base = "triton 8192/16w" if staged else f"triton {CONFIGS[0][0]}/{CONFIGS[0][1]}w"
    nbytes = 2 * ins[0].numel() * ins[0].element_size()
    for name in fns:
        ms = statistics.median(t[name] for t in steps)
        r = ratio_summary(steps, base, name)
        print(f"layer_norm {SHAPE} {name}: {ms * 1e3:.1f} us, {nbytes / ms / 1e6:.0f} GB/s, "
              f"vs {base} {r['median']:.4f}x ({r['low']:.4f}-{r['high']:.4f})", flush=True)


if __name__ == "__main__":
    main()
