"""Tutorial 03's matmul with strides axis info cannot prove 4-byte aligned (an odd K): the
cp.async ring is filled element by element (`_element_copy` in
codegen/gpu/distributed_async_copy.py), each element a predicated `ld.global.b16` (no branch
around it) whose run of consecutive columns shares one 64-bit address. On the CPU against
torch; compiled for sm_90a at Triton's autotune configs without spills, in the tutorial's
pointer-increment form and in the index form. And float8 rows proven 2-byte aligned only,
whose copies took the first byte of each 2-byte run alone."""

import os
import re
import sys

import pytest
import torch

import tile
from test_induction_offsets import index_matmul_kernel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "triton_tutorials"))
import t03_matrix_multiplication as t03  # noqa: E402

CONFIGS = {  # two of the tutorial's CUDA autotune configs
    "128x128x32": dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, num_warps=4, num_stages=4),
    "64x128x32": dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, num_warps=4, num_stages=4),
}


def _args(a, b, c):
    (M, K), N = a.shape, b.shape[1]
    return (a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride())


def test_odd_strides_on_cpu():
    """A and B as views with odd row strides (columns sliced off wider tensors)."""
    torch.manual_seed(0)
    M, N, K = 53, 41, 37
    a = torch.randn(M, K + 2, dtype=torch.float16)[:, 1:-1]
    b = torch.randn(K, N + 1, dtype=torch.float16)[:, :N]
    c = torch.empty(M, N, dtype=torch.float16)
    index_matmul_kernel[(tile_count(M, N, 32),)](*_args(a, b, c), BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=16,
                                                 GROUP_SIZE_M=2)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=2e-2, rtol=1e-2)


def tile_count(M, N, block):
    return -(-M // block) * -(-N // block)


def _compile(kernel, config, **extra):
    M, N, K = 999, 999, 999  # every stride odd
    a, b, c = (torch.empty(r, s, dtype=torch.float16, device="meta") for r, s in ((M, K), (K, N), (M, N)))
    return kernel.compile(*_args(a, b, c), **CONFIGS[config], **extra)


@pytest.mark.parametrize("form, config", [("pointers", "128x128x32"), ("index", "64x128x32")])
def test_odd_strides_on_sm90a(gpu_target, form, config):
    gpu_target("sm_90a")
    if form == "pointers":
        launcher = _compile(t03.matmul_kernel.kernel, config, ACTIVATION="")
    else:
        launcher = _compile(index_matmul_kernel, config)
    info = launcher.metadata["ptxas"]
    assert info["stack_frame"] == info["spill_stores"] == info["spill_loads"] == 0, info
    ptx = launcher.asm["ptx"]
    loads = re.findall(r"^\s*(.*)ld\.global\.b16 %rs\d+, \[%rd\d+\];", ptx, re.M)
    # (BM + BN) x BK elements over 128 threads, for the prologue's 3 stages and the loop's 1
    blocks = CONFIGS[config]
    assert len(loads) == (blocks["BLOCK_SIZE_M"] + blocks["BLOCK_SIZE_N"]) * blocks["BLOCK_SIZE_K"] // 128 * 4
    assert all(re.fullmatch(r"@%p\d+ ", pred) for pred in loads)  # predicated, not branched around
    # A's 8 consecutive columns a thread: one address, the other seven 2 to 14 bytes on (B's
    # columns, `% N`, are not provably consecutive)
    shifted = re.findall(r"add\.s64\s+%rd\d+, %rd\d+, (\d+);", ptx)
    a_loads = blocks["BLOCK_SIZE_M"] * blocks["BLOCK_SIZE_K"] // 128 * 4
    assert sum(s in {"2", "4", "6", "8", "10", "12", "14"} for s in shifted) == a_loads * 7 // 8
    if config == "64x128x32":  # (254 registers when each element took an address and a branch)
        assert info["registers"] <= 192, info


@tile.jit
def fp8_rows_matmul(a_ptr, b_ptr, c_ptr, M, N, K, STRIDE: tile.constexpr,
                    BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr,
                    ):
    """float8 A and B (N x K) in rows `STRIDE` bytes apart, a constexpr: 2-byte runs proven, 4 not."""
    offs_m = tile.program_id(0) * BM + tile.arange(0, BM)
    offs_n = tile.program_id(1) * BN + tile.arange(0, BN)
    offs_k = tile.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * STRIDE + offs_k[None, :]
    b_ptrs = b_ptr + offs_n[:, None] * STRIDE + offs_k[None, :]
    acc = tile.zeros((BM, BN), dtype=tile.float32)
    for _ in range(0, tile.cdiv(K, BK)):
        a = tile.load(a_ptrs, mask=offs_m[:, None] < M, other=0.0)
        b = tile.load(b_ptrs, mask=offs_n[:, None] < N, other=0.0)
        acc = tile.dot(a, b.T, acc)
        a_ptrs += BK
        b_ptrs += BK
    c_ptrs = c_ptr + offs_m[:, None] * N + offs_n[None, :]
    tile.store(c_ptrs, acc.to(tile.float16), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def test_fp8_two_byte_runs_on_cpu():
    torch.manual_seed(0)
    M, N, K, stride = 40, 24, 64, 66
    a = torch.randn(M, stride).to(torch.float8_e4m3fn)
    b = torch.randn(N, stride).to(torch.float8_e4m3fn)
    c = torch.empty(M, N, dtype=torch.float16)
    fp8_rows_matmul[(tile_count(M, 1, 32), tile_count(N, 1, 32))](a, b, c, M, N, K, STRIDE=stride, BM=32, BN=32, BK=32)
    ref = a[:, :K].float() @ b[:, :K].float().T
    torch.testing.assert_close(c.float(), ref, atol=5e-2, rtol=1e-2)


def test_fp8_two_byte_runs_copy_every_byte_on_sm90a(gpu_target):
    """Runs of 2 bytes, narrower than cp.async's 4: one load per element (the first of each
    run alone was copied, half the operands left as whatever the ring held)."""
    gpu_target("sm_90a")
    M, N, K, stride = 256, 256, 1024, 1090
    a = torch.empty(M, stride, dtype=torch.float8_e4m3fn, device="meta")
    c = torch.empty(M, N, dtype=torch.float16, device="meta")
    launcher = fp8_rows_matmul.compile(a, a, c, M, N, K, STRIDE=stride, BM=64, BN=64, BK=64, num_warps=4, num_stages=3)
    loads = re.findall(r"@%p\d+ ld\.global\.u8", launcher.asm["ptx"])
    assert len(loads) == 2 * 64 * 64 // 128 * 3  # A and B, 32 bytes a thread each, the prologue's 2 stages and the loop's
