"""Triton's subtiled epilogue, `split(permute(reshape(acc, (M, 2, N // 2)), (0, 2, 1)))`, as
two column slices of the accumulator (passes/column_halves.py): against torch on the CPU (odd
sizes, masks, pointer increments; other ranks of the same idiom), and compiled for sm_90a,
where each half is picked from the registers of the wgmma accumulator: no shared memory
beyond the store's own, no spills (tutorial 09's descriptor kernel is the other style, in
tests/test_triton_tutorials.py)."""

import re

import pytest
import torch

import tile


@tile.jit
def subtiled_matmul(a_ptr, b_ptr, c_ptr, M, N, K,
                    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                    BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr, BLOCK_K: tile.constexpr,
                    SUBTILE: tile.constexpr,
                    ):
    pid_m = tile.program_id(0)
    pid_n = tile.program_id(1)
    offs_m = pid_m * BLOCK_M + tile.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tile.arange(0, BLOCK_N)
    offs_k = tile.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tile.zeros((BLOCK_M, BLOCK_N), dtype=tile.float32)
    for k in range(0, tile.cdiv(K, BLOCK_K)):
        a = tile.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_K), other=0.0)
        b = tile.load(b_ptrs, mask=(offs_k[:, None] < K - k * BLOCK_K) & (offs_n[None, :] < N), other=0.0)
        acc = tile.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    if SUBTILE:
        halves = tile.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2))
        acc0, acc1 = tile.split(tile.permute(halves, (0, 2, 1)))
        half_n = pid_n * BLOCK_N + tile.arange(0, BLOCK_N // 2)
        ptrs = c_ptr + offs_m[:, None] * stride_cm + half_n[None, :] * stride_cn
        tile.store(ptrs, acc0.to(tile.float16), mask=(offs_m[:, None] < M) & (half_n[None, :] < N))
        ptrs += (BLOCK_N // 2) * stride_cn
        tile.store(ptrs, acc1.to(tile.float16), mask=(offs_m[:, None] < M) & (half_n[None, :] + BLOCK_N // 2 < N))
    else:
        tile.store(c_ptrs, acc.to(tile.float16), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _matmul(a, b, c, **meta):
    M, K = a.shape
    N = b.shape[1]
    grid = (tile.cdiv(M, meta["BLOCK_M"]), tile.cdiv(N, meta["BLOCK_N"]))
    args = (a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride())
    return subtiled_matmul[grid](*args, **meta) if a.device.type != "meta" else subtiled_matmul.compile(*args, **meta)


def test_subtiled_epilogue_on_cpu():
    torch.manual_seed(0)
    M, N, K = 45, 83, 37
    a, b = torch.randn(M, K, dtype=torch.float16), torch.randn(K, N, dtype=torch.float16)
    c = torch.full((M, N), -1.0, dtype=torch.float16)
    _matmul(a, b, c, BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, SUBTILE=True)
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), atol=1e-2, rtol=1e-2)


@tile.jit
def split_ranks(x, out1, out3, N: tile.constexpr, R: tile.constexpr):
    """The idiom on a 1-D tile (reshape to (2, N), transpose) and on a 3-D one; the second
    half of the 1-D tile scaled, so the halves cannot be swapped unnoticed."""
    flat = tile.load(x + tile.arange(0, 2 * N))
    lo, hi = tile.split(tile.permute(tile.reshape(flat, (2, N)), (1, 0)))
    tile.store(out1 + tile.arange(0, N), lo - 2 * hi)
    r = tile.arange(0, R)[:, None, None]
    s = tile.arange(0, R)[None, :, None]
    n = tile.arange(0, 2 * N)[None, None, :]
    cube = tile.load(x + (r * R + s) * 2 * N + n)
    first, second = tile.split(tile.permute(tile.reshape(cube, (R, R, 2, N)), (0, 1, 3, 2)))
    half = tile.arange(0, N)[None, None, :]
    tile.store(out3 + (r * R + s) * N + half, second * 3 + first)


def test_split_halves_of_other_ranks_on_cpu():
    N, R = 8, 2
    x = torch.randn(R * R * 2 * N)
    out1, out3 = torch.empty(N), torch.empty(R * R * N)
    split_ranks[(1,)](x, out1, out3, N=N, R=R)
    torch.testing.assert_close(out1, x[:N] - 2 * x[N:2 * N])
    cube = x.view(R, R, 2, N)
    torch.testing.assert_close(out3.view(R, R, N), cube[:, :, 1] * 3 + cube[:, :, 0])


def _shared_stores(ptx: str) -> int:
    return len(re.findall(r"\bst\.shared\.", ptx))


@pytest.mark.parametrize("config", [
    dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, num_warps=8, num_stages=3),
    dict(BLOCK_M=64, BLOCK_N=128, BLOCK_K=32, num_warps=4, num_stages=4),
])
def test_subtiled_epilogue_stays_in_registers_on_sm90a(gpu_target, config):
    """Each half is the wgmma accumulator's own registers: the split adds no shared-memory
    stores to the store's layout conversion, and nothing spills."""
    gpu_target("sm_90a")
    M, N, K = 1000, 1008, 1024  # (M not a multiple of the block; the strides multiples of 16)
    a = torch.empty(M, K, dtype=torch.float16, device="meta")
    b = torch.empty(K, N, dtype=torch.float16, device="meta")
    c = torch.empty(M, N, dtype=torch.float16, device="meta")
    split = _matmul(a, b, c, SUBTILE=True, **config)
    whole = _matmul(a, b, c, SUBTILE=False, **config)
    info = split.metadata["ptxas"]
    assert info["stack_frame"] == info["spill_stores"] == info["spill_loads"] == 0, info
    assert re.search(r'"tile.gather".*-> tensor<\d+x\d+xf32, #tile.wgmma<', split.asm["tile-opt"])
    assert _shared_stores(split.asm["ptx"]) == _shared_stores(whole.asm["ptx"]) > 0
