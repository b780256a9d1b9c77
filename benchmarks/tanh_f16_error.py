"""How far tile's f16 tanh (`tanh.approx.f16x2` on the GPU) is from the exact tanh, over every
finite f16 input, next to tanh computed in f32 (`tanh.approx.f32`) and rounded to f16: the
largest absolute error and the largest error in f16 ulps of the exact result.

    python3 benchmarks/tanh_f16_error.py --compile-only    # CPU machine, TILE_TARGET=sm_90a
    python3 benchmarks/tanh_f16_error.py                   # the GPU (or --device cpu)
"""

from __future__ import annotations

import argparse

import torch

import tile


@tile.kernel
def tanh_kernel(x, out, n, BLOCK: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    m = offs < n
    tile.store(out + offs, tile.tanh(tile.load(x + offs, mask=m)), mask=m)


def tanh(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    tanh_kernel[(-(-x.numel() // 1024),)](x, out, x.numel(), BLOCK=1024, num_warps=4)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    if args.compile_only:
        for dt in (torch.float16, torch.float32):
            tanh(torch.empty(1 << 16, dtype=dt, device="meta"))
        return
    bits = torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16)
    x = bits.view(torch.float16)
    x = x[torch.isfinite(x)].to(args.device)
    exact = torch.tanh(x.double())
    # an f16 ulp at the exact result: 2^(e - 11) for |tanh| = m 2^e, m in [0.5, 1); 2^-24 below the normals
    ulp = torch.ldexp(torch.ones_like(exact), torch.frexp(exact)[1] - 11).clamp_min(2.0 ** -24)
    for label, got in (("f16", tanh(x)), ("f32, rounded to f16", tanh(x.float()).half())):
        err = (got.double() - exact).abs()
        print(f"tanh in {label}: max abs error {err.max().item():.3g}, max {(err / ulp).max().item():.2f} f16 ulp, "
              f"mean {(err / ulp).mean().item():.3f} ulp over {x.numel()} inputs")


if __name__ == "__main__":
    main()
