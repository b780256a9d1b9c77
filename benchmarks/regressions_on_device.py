"""The GPU half of tests/test_fuzz_regressions.py: kernels that once crashed the compiler,
now built on the CPU machine, run on the GPU and checked against torch.

    TILE_TARGET=sm_90a TILE_COMPILE_ONLY=1 python3 benchmarks/regressions_on_device.py --compile-only
    python3 benchmarks/regressions_on_device.py          # on the GPU, with that cache
    python3 benchmarks/regressions_on_device.py --cpu    # the same checks on the CPU target
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


@tile.kernel
def atomic_dot_kernel(a, b, c, old, B: tile.constexpr):
    """An exact f32 dot (the linalg path on a GPU) added atomically, its old values kept."""
    r = tile.arange(0, B)
    acc = tile.dot(tile.load(a + r[:, None] * B + r[None, :]), tile.load(b + r[:, None] * B + r[None, :]))
    tile.store(old + r[:, None] * B + r[None, :], tile.atomic_add(c + r[:, None] * B + r[None, :], acc))


def main() -> int:
    compile_only = "--compile-only" in sys.argv
    device = "meta" if compile_only else ("cpu" if "--cpu" in sys.argv else "cuda")
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
    a, c0 = torch.randn(16, 16).to(device), torch.randn(16, 16).to(device)
    c, old = c0.clone(), torch.zeros(16, 16, device=device)
    atomic_dot_kernel[(1,)](a, a, c, old, B=16)
    if not compile_only:
        check("atomic_add of an f32 dot (linalg path): sums", c, c0 + a @ a, rtol=1e-4, atol=1e-4)
        check("atomic_add of an f32 dot (linalg path): old values", old, c0)
    print("failed:", failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
