"""Pointers a loop advances (`a_ptrs += BLOCK_K * stride_ak`, Triton's tutorial matmul and
most Triton code) are the same access as offsets computed from the loop index
(`tile-induction-offsets`): correct on the CPU in every form a loop can advance them, and on
the GPU pipelined as the index form is (cp.async rings or TMA, wgmma), where before the
sm_90a compile failed with an internal error in `tile-pipeline`."""

import re

import pytest
import torch

import tile


@tile.kernel
def tutorial_matmul_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_SIZE_M: tile.constexpr, BLOCK_SIZE_N: tile.constexpr, BLOCK_SIZE_K: tile.constexpr,
    GROUP_SIZE_M: tile.constexpr,
):
    """Triton's tutorial 03 kernel, as written there (but for `tile.minimum`)."""
    pid = tile.program_id(axis=0)
    num_pid_m = tile.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tile.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = tile.minimum(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tile.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tile.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tile.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tile.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tile.float32)
    for k in range(0, tile.cdiv(K, BLOCK_SIZE_K)):
        a = tile.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tile.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tile.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(tile.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tile.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tile.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tile.store(c_ptrs, c, mask=c_mask)


@tile.kernel
def index_matmul_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_SIZE_M: tile.constexpr, BLOCK_SIZE_N: tile.constexpr, BLOCK_SIZE_K: tile.constexpr,
    GROUP_SIZE_M: tile.constexpr,
):
    """The same kernel with its offsets computed from the loop index."""
    pid = tile.program_id(axis=0)
    num_pid_m = tile.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tile.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = tile.minimum(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tile.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tile.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tile.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tile.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tile.float32)
    for k in range(0, tile.cdiv(K, BLOCK_SIZE_K)):
        a = tile.load(a_ptrs + k * (BLOCK_SIZE_K * stride_ak), mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tile.load(b_ptrs + k * (BLOCK_SIZE_K * stride_bk), mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tile.dot(a, b, accumulator)
    c = accumulator.to(tile.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tile.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tile.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tile.store(c_ptrs, c, mask=c_mask)


@tile.kernel
def masked_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                         BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr):
    """Pointer increments with masks at the tensors' bounds (no `% M`): TMA on sm_90a."""
    offs_m = tile.program_id(0) * BM + tile.arange(0, BM)
    offs_n = tile.program_id(1) * BN + tile.arange(0, BN)
    offs_k = tile.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tile.zeros((BM, BN), dtype=tile.float32)
    for k in range(0, tile.cdiv(K, BK)):
        a = tile.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BK), other=0.0)
        b = tile.load(b_ptrs, mask=(offs_k[:, None] < K - k * BK) & (offs_n[None, :] < N), other=0.0)
        acc += tile.dot(a, b)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tile.store(c_ptrs, acc.to(tile.float16), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _tutorial_args(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    return (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))


TUTORIAL_META = dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, num_warps=8, num_stages=3)


@pytest.mark.parametrize("kernel", [tutorial_matmul_kernel, index_matmul_kernel])
@pytest.mark.parametrize("M, N, K, b_transposed", [(96, 80, 200, False), (64, 48, 72, True)])
def test_tutorial_matmul_on_cpu(kernel, M, N, K, b_transposed):
    """Odd sizes (K not a multiple of the block: the masks advance with the pointers) and a
    strided view of B (its transpose)."""
    torch.manual_seed(0)
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(N, K, dtype=torch.float16).T if b_transposed else torch.randn(K, N, dtype=torch.float16)
    c = torch.empty(M, N, dtype=torch.float16)
    meta = dict(TUTORIAL_META, BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32, num_warps=4)
    kernel[(tile.cdiv(M, 32) * tile.cdiv(N, 32),)](*_tutorial_args(a, b, c), **meta)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=2e-2, rtol=1e-2)


def _ptx(kernel, *args, target, **meta):
    return kernel.compile(*args, target=target, **meta).asm["ptx"]


def _sm90a_tutorial_ptx(kernel):
    a = torch.empty(4096, 4096, dtype=torch.float16, device="meta")
    c = torch.empty(4096, 4096, dtype=torch.float16, device="meta")
    return _ptx(kernel, *_tutorial_args(a, a, c), target="sm_90a", **TUTORIAL_META)


def test_tutorial_matmul_pipelined_on_sm90a(gpu_target):
    """Both operands in cp.async rings of 16-byte copies (the `% M` rows keep their runs along
    K, and `% N` columns theirs: N a nonzero multiple of 16), wgmma, no element loads."""
    gpu_target()
    ptx = _sm90a_tutorial_ptx(tutorial_matmul_kernel)
    assert "wgmma.mma_async" in ptx
    # 8 16-byte copies an iteration (128x64 and 64x128 f16 over 256 threads), issued for the
    # prologue's 2 iterations and once in the loop
    assert len(re.findall(r"cp\.async\.cg\.shared\.global \[[^]]+\], \[[^]]+\], 16", ptx)) == 8 * 3
    assert "ld.global" not in ptx
    # In the loop a slot's copies go at immediate offsets from one address an operand (rows 8
    # apart keep the swizzle's phase: SharedTile.run_offsets), not an address computed for each.
    loop = ptx[ptx.index("wgmma.commit_group"):]
    block = loop[:min(loop.index(end) for end in ("cp.async.commit_group", "bra.uni") if end in loop)]
    dsts = re.findall(r"cp\.async\.cg\.shared\.global \[(%rd\d+)(\+\d+)?\]", block)
    assert len(dsts) == 8 and len({base for base, _ in dsts}) == 2, dsts
    # A prefetch past the loop's end is not issued (one branch around the copies), rather than
    # zero-filled by a second select of each copy's size (two selp a copy, as before).
    assert len(re.findall(r"selp\.b32", block)) <= len(dsts), block
    # The warpgroup the wgmma descriptors start from is broadcast once, before the loop (a shuffle
    # at the dot was not hoisted: a SHFL and an R2UR each iteration).
    assert "shfl.sync" not in loop and ptx.count("shfl.sync.idx") == 1


def test_pointer_increments_give_the_index_form_ptx(gpu_target):
    """The bar of the issue: the canonical pointer-increment loop is the same PTX as the
    index form: the same instructions, but for the kernel's name, the order of a few
    parameter loads and so the numbers of the registers."""
    gpu_target()

    def instructions(kernel):
        ptx = _sm90a_tutorial_ptx(kernel).replace(kernel.name, "K")
        return sorted(re.sub(r"%[a-z]+\d+", "%r", line) for line in ptx.splitlines())

    pointer, index = instructions(tutorial_matmul_kernel), instructions(index_matmul_kernel)
    assert len(pointer) > 1000 and pointer == index


def test_masked_pointer_increments_use_tma(gpu_target):
    gpu_target()
    a = torch.empty(512, 512, dtype=torch.float16, device="meta")
    args = (a, a, a, 512, 512, 512, 512, 1, 512, 1, 512, 1)
    ptx = _ptx(masked_matmul_kernel, *args, target="sm_90a", BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
    assert "cp.async.bulk.tensor" in ptx and "wgmma.mma_async" in ptx
    assert "ld.global" not in ptx
    sm80 = _ptx(masked_matmul_kernel, *args, target="sm_80", BM=128, BN=128, BK=32, num_warps=4, num_stages=3)
    assert "mma.sync" in sm80 and "cp.async.cg" in sm80 and "ld.global" not in sm80


def test_masked_pointer_increments_on_cpu():
    a = torch.randn(70, 90, dtype=torch.float16)
    b = torch.randn(90, 50, dtype=torch.float16)
    c = torch.empty(70, 50, dtype=torch.float16)
    masked_matmul_kernel[(3, 2)](a, b, c, 70, 50, 90, *a.stride(), *b.stride(), *c.stride(), BM=32, BN=32, BK=32)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=2e-2, rtol=1e-2)


# The other ways a loop advances a pointer or an offset; each is checked against torch.

@tile.kernel
def walk_back_kernel(x, out, n_blocks, BLOCK: tile.constexpr):
    """Blocks summed from the last one down (`p -= BLOCK`), scaled by their order."""
    p = x + (n_blocks - 1) * BLOCK + tile.arange(0, BLOCK)
    acc = tile.zeros((BLOCK,), tile.float32)
    for i in range(0, n_blocks):
        acc = acc * 2.0 + tile.load(p)
        p -= BLOCK
    tile.store(out + tile.arange(0, BLOCK), acc)


def test_pointer_walking_back():
    x = torch.randn(5 * 16)
    out = torch.empty(16)
    walk_back_kernel[(1,)](x, out, 5, BLOCK=16)
    expected = torch.zeros(16)
    for i in range(4, -1, -1):
        expected = expected * 2 + x[i * 16:(i + 1) * 16]
    torch.testing.assert_close(out, expected)


@tile.kernel
def strided_steps_kernel(x, out, start, stop, step, row_stride, extra, BLOCK: tile.constexpr):
    """A loop from `start` by `step` (run-time), a pointer advanced twice an iteration by
    run-time amounts, a scalar offset carried beside it, and the pointer read after the loop."""
    cols = tile.arange(0, BLOCK)
    p = x + start * row_stride + cols
    off = start * row_stride
    acc = tile.zeros((BLOCK,), tile.float32)
    for i in range(start, stop, step):
        acc += tile.load(p, mask=cols < row_stride) + tile.load(x + off + cols, mask=cols < row_stride) * (i * 1.0)
        p += row_stride * (step - extra)
        p += extra * row_stride
        off = off + step * row_stride
    acc += tile.load(p - row_stride * step, mask=cols < row_stride) * 100.0
    tile.store(out + cols, acc, mask=cols < row_stride)


def test_pointers_advanced_by_run_time_steps():
    rows, width = 23, 13
    x = torch.randn(rows, width)
    out = torch.empty(width)
    strided_steps_kernel[(1,)](x, out, 2, 21, 3, width, 1, BLOCK=16)
    expected = torch.zeros(width)
    for i in range(2, 21, 3):
        expected += x[i] + x[i] * i
    expected += x[20] * 100.0
    torch.testing.assert_close(out, expected)


@tile.kernel
def conditional_steps_kernel(x, out, n, BLOCK: tile.constexpr):
    """A pointer advanced only on some iterations, and one carried through a while loop:
    not rewritten (still correct)."""
    cols = tile.arange(0, BLOCK)
    p = x + cols
    q = x + cols
    acc = tile.zeros((BLOCK,), tile.float32)
    for i in range(0, n):
        acc += tile.load(p)
        if i % 2 == 1:
            p += BLOCK
    j = 0
    while j < n:
        acc += tile.load(q) * 10.0
        q += BLOCK
        j += 1
    tile.store(out + cols, acc)


def test_conditional_and_while_loop_pointers():
    x = torch.randn(6 * 8)
    out = torch.empty(8)
    conditional_steps_kernel[(1,)](x, out, 6, BLOCK=8)
    rows = x.view(6, 8)
    expected = sum(rows[i // 2] for i in range(6)) + 10.0 * rows.sum(0)
    torch.testing.assert_close(out, expected)
