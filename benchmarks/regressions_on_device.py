"""The GPU half of tests/test_fuzz_regressions.py and tests/test_fuzz_gpu_codegen.py: kernels that once crashed the compiler,
now built on the CPU machine, run on the GPU and checked against torch.

    TILE_TARGET=sm_90a TILE_COMPILE_ONLY=1 python3 benchmarks/regressions_on_device.py --compile-only
    python3 benchmarks/regressions_on_device.py          # on the GPU, with that cache
    python3 benchmarks/regressions_on_device.py --cpu    # the same checks on the CPU target
"""

from __future__ import annotations

import os
import sys

import torch

import tile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (imported from the tests, too)
from device_checks import DeviceChecks  # noqa: E402


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
    acc = tile.dot(tile.load(a + r[:, None] * B + r[None, :]), tile.load(b + r[:, None] * B + r[None, :]),
                   input_precision="ieee")  # (a GPU's default for f32 is tf32, as Triton's)
    tile.store(old + r[:, None] * B + r[None, :], tile.atomic_add(c + r[:, None] * B + r[None, :], acc))


@tile.kernel
def int_ops_kernel(x, y, out, sums, n, BLOCK: tile.constexpr):
    """Guarded integer division in masked-off lanes, an int8 tile's sum and max, and a
    program that ends early (`if pid >= n: return`)."""
    pid = tile.program_id(0)
    if pid >= n:
        return
    o = tile.arange(0, BLOCK)
    a, b = tile.load(x + o), tile.load(y + o, mask=o < BLOCK // 2, other=0)
    tile.store(out + pid * BLOCK + o, a // b + a % b, mask=o < BLOCK // 2)
    small = a.to(tile.int8)
    tile.store(sums + 2 * pid, tile.sum(small, axis=0))
    tile.store(sums + 2 * pid + 1, tile.max(small, axis=0).to(tile.int32))


@tile.kernel
def int64_offsets_kernel(x, out, n, s, BLOCK: tile.constexpr):
    o = tile.arange(0, BLOCK)
    tile.store(out + o, tile.load(x + o.to(tile.int64) * s, mask=o < n, other=-1.0))


@tile.kernel
def wide_dot_kernel(a, b, c, M, N, K, BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr):
    """More accumulator than registers (256x128 on 4 warps): built with .maxnreg 255 when it spills."""
    rm, rn, rk = tile.arange(0, BM), tile.arange(0, BN), tile.arange(0, BK)
    acc = tile.zeros((BM, BN), tile.float32)
    for k0 in range(0, K, BK):
        ka = k0 + rk
        x = tile.load(a + rm[:, None] * K + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        y = tile.load(b + ka[:, None] * N + rn[None, :], mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tile.dot(x, y, acc)
    tile.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@tile.kernel
def int8_abs_kernel(x, out, BLOCK: tile.constexpr):
    o = tile.arange(0, BLOCK)
    tile.store(out + o, tile.abs(tile.load(x + o)))


def main() -> int:
    checks = DeviceChecks()
    compile_only, device, failed, check = checks.compile_only, checks.device, checks.failed, checks.check

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
    atomic_dot_kernel[(1,)](a, a.clone(), c, old, B=16)
    if not compile_only:
        check("atomic_add of an f32 dot (linalg path): sums", c, c0 + a @ a, rtol=1e-4, atol=1e-4)
        check("atomic_add of an f32 dot (linalg path): old values", old, c0)
    # bools of 8 elements a thread (BLOCK 1024 at 4 warps), read and written byte by byte
    x = (torch.rand(5000) > 0.5).to(device)
    f = torch.rand(5000).to(device)
    out = torch.zeros(5000, dtype=torch.bool, device=device)
    bool_kernel[(tile.cdiv(5000, 1024),)](x, f, out, 5000, BLOCK=1024)
    if not compile_only:
        check("bool tensors, 8 a thread", out, x & (f > 0.5))
    g = torch.Generator().manual_seed(1)
    xi = torch.randint(-100, 100, (256,), generator=g, dtype=torch.int32).to(device)
    yi = torch.randint(-5, 6, (256,), generator=g, dtype=torch.int32).to(device)
    got, sums = torch.full((3, 256), -7, dtype=torch.int32, device=device), torch.zeros(6, dtype=torch.int32, device=device)
    int_ops_kernel[(3,)](xi, yi, got, sums, 2, BLOCK=256)
    if not compile_only:
        xc, yc = xi.cpu(), yi.cpu()
        safe = torch.where((yc == 0) | (yc == -1), torch.ones_like(yc), yc)
        quot = torch.where(yc == -1, -xc, torch.div(xc, safe, rounding_mode="trunc"))
        want = torch.full((3, 256), -7, dtype=torch.int32)
        want[:2, :128] = (quot + torch.fmod(xc, safe))[:128]
        check("integer // and % (zero divisors in masked-off lanes), early return", got, want)
        small = xc.to(torch.int8)
        check("int8 sum and max", sums, torch.tensor([small.sum().item(), small.max().item()] * 2 + [0, 0],
                                                     dtype=torch.int32))
    x, out = torch.arange(32, dtype=torch.float32).to(device), torch.zeros(8, device=device)
    int64_offsets_kernel[(1,)](x, out, 7, 3, BLOCK=8)
    if not compile_only:
        check("int64 offsets, predicated 4-byte loads", out, torch.tensor([0.0, 3, 6, 9, 12, 15, 18, -1]))
    g = torch.Generator().manual_seed(2)
    a = torch.randn(256, 32, generator=g).bfloat16().to(device)
    b = torch.randn(32, 123, generator=g).bfloat16().to(device)
    c = torch.zeros(256, 123, device=device)
    wide_dot_kernel[(1,)](a, b, c, 256, 123, 32, BM=256, BN=128, BK=32, num_warps=4)
    if not compile_only:
        check("256x128 accumulator on 4 warps (spills)", c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    x = torch.arange(-128, 128, dtype=torch.int32).to(torch.int8).to(device)
    out = torch.zeros(256, dtype=torch.int8, device=device)
    int8_abs_kernel[(1,)](x, out, BLOCK=256, num_warps=2)
    if not compile_only:
        check("abs of int8 (-128 wraps)", out, x.abs())
    transposed_operands(device, compile_only, check)
    print("failed:", failed)
    return 1 if failed else 0


def transposed_operands(device, compile_only, check):
    """Operands contiguous down dim 0 (`tile-column-loads`), at the blocks that put their dots on
    wgmma: the tutorial GEMM on A = X.T (its ring slot read M-major in place), on B = W.T and on
    both, K ragged; vLLM's prefix prefill, K^T read through a block table (head dim 128)."""
    sys.path.insert(0, os.path.join(os.getcwd(), "tests"))  # (run from the repository root: a device build's snapshot has no tests)
    from test_transposed_access_kernels import _fwd_kernel_prefix, _matmul_kernel, _prefix_prefill_inputs

    g = torch.Generator().manual_seed(3)
    M, N, K = 304, 272, 208  # (ragged blocks; sizes and row strides multiples of 16 elements, as copies want)
    for a_cols, b_cols in ((True, False), (True, True), (False, True)):
        a = torch.randn(K, M + 16, generator=g).bfloat16().to(device)[:, :M].T if a_cols else \
            torch.randn(M, K, generator=g).bfloat16().to(device)
        b = torch.randn(N, K + 16, generator=g).bfloat16().to(device)[:, :K].T if b_cols else \
            torch.randn(K, N, generator=g).bfloat16().to(device)
        c = torch.empty(M, N, dtype=torch.bfloat16, device=device)
        _matmul_kernel[(tile.cdiv(M, 128) * tile.cdiv(N, 128),)](
            a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8,
            num_warps=8, num_stages=3)
        if not compile_only:
            check(f"GEMM, A{' = X.T' if a_cols else ''}, B{' = W.T' if b_cols else ''}", c.float(),
                  a.float() @ b.float(), rtol=2e-2, atol=5e-2)
    (q, k, v, kc, vc, b_loc, start, seqlen, ctxlen, scale, ref, max_new, group, page) = \
        _prefix_prefill_inputs(128, torch.bfloat16)
    q, k, v, kc, vc, b_loc, start, seqlen, ctxlen = (t.contiguous().to(device) for t in (q, k, v, kc, vc, b_loc, start,
                                                                                         seqlen, ctxlen))
    out = torch.empty_like(q)
    _fwd_kernel_prefix[(len(seqlen), q.shape[1], tile.cdiv(max_new, 64))](
        q, k, v, kc, vc, b_loc, scale, start, seqlen, ctxlen, out, *b_loc.stride(), q.stride(0), q.stride(1),
        k.stride(0), k.stride(1), v.stride(0), v.stride(1), out.stride(0), out.stride(1), *kc.stride(), *vc.stride(),
        num_queries_per_kv=group, BLOCK_SIZE=page, BLOCK_M=64, BLOCK_DMODEL=128, BLOCK_DMODEL_PADDED=128, BLOCK_N=64,
        num_warps=4, num_stages=2)
    if not compile_only:
        check("prefix prefill, K^T through the block table", out.float(), ref, rtol=1e-2, atol=2e-2)


if __name__ == "__main__":
    sys.exit(main())
