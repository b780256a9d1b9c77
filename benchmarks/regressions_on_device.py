"""The GPU half of tests/test_fuzz_regressions.py: kernels that once crashed the compiler,
now built on the CPU machine, run on the GPU and checked against torch.

    TILE_TARGET=sm_90a TILE_COMPILE_ONLY=1 python3 benchmarks/regressions_on_device.py --compile-only
    python3 benchmarks/regressions_on_device.py          # on the GPU, with that cache
"""

from __future__ import annotations

import sys

import torch

import tile


@tile.kernel
def small_dot_kernel(a, b, c, BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr):
    rm, rn, rk = tile.arange(0, BM), tile.arange(0, BN), tile.arange(0, BK)
    acc = tile.dot(tile.load(a + rm[:, None] * BK + rk[None, :]), tile.load(b + rk[:, None] * BN + rn[None, :]))
    tile.store(c + rm[:, None] * BN + rn[None, :], acc)


@tile.kernel
def bool_kernel(x, f, out, n, BLOCK: tile.constexpr):
    o = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    b = tile.load(x + o, mask=o < n, other=False)
    tile.store(out + o, b & (tile.load(f + o, mask=o < n, other=0.0) > 0.5), mask=o < n)


def main() -> int:
    compile_only = "--compile-only" in sys.argv
    device = "meta" if compile_only else "cuda"
    failed = []

    def check(name, got, want, **tol):
        if compile_only:
            return
        try:
            torch.testing.assert_close(got.cpu(), want.cpu(), **tol)
            print(f"{name}: matches torch")
        except AssertionError as e:
            failed.append(name)
            print(f"{name}: FAIL {str(e)[:300]}")

    # one m16n8 fragment a warp (mma.sync / wgmma), and tiles too small for the warps (linalg)
    for bm, bn, warps in [(16, 32, 4), (16, 16, 4), (64, 16, 8)]:
        g = torch.Generator().manual_seed(bm * bn + warps)
        a = torch.randn(bm, 16, generator=g).half().to(device)
        b = torch.randn(16, bn, generator=g).half().to(device)
        c = torch.empty(bm, bn, device=device)
        small_dot_kernel[(1,)](a, b, c, BM=bm, BN=bn, BK=16, num_warps=warps)
        if not compile_only:
            check(f"dot {bm}x16 by 16x{bn} at {warps} warps", c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    n = 1000
    x = (torch.rand(n) > 0.5).to(device)
    f = torch.rand(n).to(device)
    out = torch.zeros(n, dtype=torch.bool, device=device)
    bool_kernel[(tile.cdiv(n, 128),)](x, f, out, n, BLOCK=128)
    if not compile_only:
        check("bool tensors", out, x & (f > 0.5))
    print("failed:", failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
