"""A probe: does a persistent row kernel that loads its next row before reducing this one
beat one program per row at the memory's limit? Softmax f32 16384x4096 and layer norm f16
16384x8192, tile and Triton, each one program per row and persistent with the next row's
loads in flight (in registers) across this row's reductions, in interleaved launches.

    python3 benchmarks/row_prefetch_probe.py --compile-only    # CPU machine, TILE_TARGET=sm_90a
    python3 benchmarks/row_prefetch_probe.py                   # the H200
"""

from __future__ import annotations

import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tile  # noqa: E402

from matmul_rounds import interleaved_launches, ratio_summary  # noqa: E402
from probe_device import probe_device  # noqa: E402


@tile.kernel
def softmax_prefetch(x, out, n_rows, n_cols, xs, os_, BLOCK: tile.constexpr):
    cols = tile.arange(0, BLOCK)
    mask = cols < n_cols
    first = tile.program_id(0)
    step = tile.num_programs(0)
    v = tile.load(x + first * xs + cols, mask=mask, other=-float("inf"))
    for row in range(first, n_rows, step):
        nxt = tile.minimum(row + step, n_rows - 1)
        v_next = tile.load(x + nxt * xs + cols, mask=mask, other=-float("inf"))
        e = tile.exp(v - tile.max(v, axis=0))
        tile.store(out + row * os_ + cols, e / tile.sum(e, axis=0), mask=mask)
        v = v_next


@tile.kernel
def layer_norm_prefetch(x, w, b, out, n_rows, n_cols, xs, os_, eps, BLOCK: tile.constexpr):
    cols = tile.arange(0, BLOCK)
    mask = cols < n_cols
    first = tile.program_id(0)
    step = tile.num_programs(0)
    v = tile.load(x + first * xs + cols, mask=mask)
    for row in range(first, n_rows, step):
        nxt = tile.minimum(row + step, n_rows - 1)
        v_next = tile.load(x + nxt * xs + cols, mask=mask)
        f = v.to(tile.float32)
        mean = tile.sum(f, axis=0) / n_cols
        d = tile.where(mask, f - mean, 0.0)
        rstd = tile.rsqrt(tile.sum(d * d, axis=0) / n_cols + eps)
        wv = tile.load(w + cols, mask=mask).to(tile.float32)
        bv = tile.load(b + cols, mask=mask).to(tile.float32)
        tile.store(out + row * os_ + cols, d * rstd * wv + bv, mask=mask)
        v = v_next


POINTS = [("softmax", (16384, 4096), torch.float32, 16), ("layer_norm", (16384, 8192), torch.float16, 8),
          ("layer_norm", (16384, 8192), torch.float16, 16)]
PER_SM = (1, 2, 3, 4)


def tile_prefetch(kernel, programs, warps):
    if kernel == "softmax":
        def run(x):
            out = torch.empty_like(x)
            softmax_prefetch[(programs,)](x, out, x.shape[0], x.shape[1], x.stride(0), out.stride(0),
                                          BLOCK=x.shape[1], num_warps=warps)
            return out
    else:
        def run(x, w, b):
            out = torch.empty_like(x)
            layer_norm_prefetch[(programs,)](x, w, b, out, x.shape[0], x.shape[1], x.stride(0), out.stride(0), 1e-5,
                                             BLOCK=x.shape[1], num_warps=warps)
            return out
    return run


def triton_prefetch(kernel, programs, warps):
    """The same persistent prefetching kernels in Triton (defined here: Triton only on the GPU machine)."""
    import triton
    import triton.language as tl

    global _TRITON
    if "_TRITON" not in globals():
        @triton.jit
        def sm(x, out, n_rows, n_cols, xs, os_, BLOCK: tl.constexpr):
            cols = tl.arange(0, BLOCK)
            mask = cols < n_cols
            first = tl.program_id(0)
            step = tl.num_programs(0)
            v = tl.load(x + first * xs + cols, mask=mask, other=-float("inf"))
            for row in range(first, n_rows, step):
                nxt = tl.minimum(row + step, n_rows - 1)
                v_next = tl.load(x + nxt * xs + cols, mask=mask, other=-float("inf"))
                e = tl.exp(v - tl.max(v, axis=0))
                tl.store(out + row * os_ + cols, e / tl.sum(e, axis=0), mask=mask)
                v = v_next

        @triton.jit
        def ln(x, w, b, out, n_rows, n_cols, xs, os_, eps, BLOCK: tl.constexpr):
            cols = tl.arange(0, BLOCK)
            mask = cols < n_cols
            first = tl.program_id(0)
            step = tl.num_programs(0)
            v = tl.load(x + first * xs + cols, mask=mask, other=0.0)
            for row in range(first, n_rows, step):
                nxt = tl.minimum(row + step, n_rows - 1)
                v_next = tl.load(x + nxt * xs + cols, mask=mask, other=0.0)
                f = v.to(tl.float32)
                mean = tl.sum(f, axis=0) / n_cols
                d = tl.where(mask, f - mean, 0.0)
                rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)
                wv = tl.load(w + cols, mask=mask).to(tl.float32)
                bv = tl.load(b + cols, mask=mask).to(tl.float32)
                tl.store(out + row * os_ + cols, (d * rstd * wv + bv).to(out.dtype.element_ty), mask=mask)
                v = v_next

        _TRITON = {"softmax": sm, "layer_norm": ln}
    k = _TRITON[kernel]
    if kernel == "softmax":
        def run(x):
            out = torch.empty_like(x)
            k[(programs,)](x, out, x.shape[0], x.shape[1], x.stride(0), out.stride(0), BLOCK=x.shape[1], num_warps=warps)
            return out
    else:
        def run(x, w, b):
            out = torch.empty_like(x)
            k[(programs,)](x, w, b, out, x.shape[0], x.shape[1], x.stride(0), out.stride(0), 1e-5, BLOCK=x.shape[1],
                           num_warps=warps)
            return out
    return run


def main() -> None:
    dev = probe_device()
    sms = 132 if dev == "meta" else torch.cuda.get_device_properties(0).multi_processor_count
    for kernel, shape, dtype, warps in POINTS:
        torch.manual_seed(0)
        x = torch.randn(shape, dtype=dtype, device=dev)
        ins = (x,) if kernel == "softmax" else (x, torch.randn(shape[1], dtype=dtype, device=dev),
                                                 torch.randn(shape[1], dtype=dtype, device=dev))
        fns = {f"tile persistent {k}/SM": tile_prefetch(kernel, k * sms, warps) for k in PER_SM}
        if dev == "meta":
            for fn in fns.values():
                fn(*ins)
            continue
        from implementations import reference, tile_impl, triton_impl
        fns["tile row"] = tile_impl(kernel, shape, warps)[0]
        fns["triton row"] = triton_impl(kernel, shape, warps)[0]
        for k in PER_SM:
            fns[f"triton persistent {k}/SM"] = triton_prefetch(kernel, k * sms, warps)
        want = reference(kernel, ins)
        for name, fn in fns.items():
            torch.testing.assert_close(fn(*ins), want, rtol=1e-2, atol=1e-2, msg=lambda m: f"{name}: {m}")
        steps = interleaved_launches(fns, ins)
        nbytes = 2 * x.numel() * x.element_size()
        for name in fns:
            ms = statistics.median(t[name] for t in steps)
            r = ratio_summary(steps, "triton row", name)
            print(f"{kernel} {shape} {warps}w {name}: {ms * 1e3:.1f} us, {nbytes / ms / 1e6:.0f} GB/s, "
                  f"vs triton row {r['median']:.4f}x ({r['low']:.4f}-{r['high']:.4f})", flush=True)


if __name__ == "__main__":
    main()
