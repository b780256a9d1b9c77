"""`tile.dot` of int8 tiles into an int32 accumulator (Triton's int8 x int8 -> int32): on the
CPU exact against torch's int64 matmul, sums past 2^24 included (where an f32 accumulator
would round); on sm_90a wgmma `m64nNk32.s32.s8.s8` reads both operands K-major from shared
memory (`passes/fp8_dots.py`), on sm_80 (and tiles wgmma cannot take)
`mma.sync.m16n8k32.row.col.s32.s8.s8.s32`. vLLM's W8A8 Triton fallback (its scaled-mm kernel,
tests/test_library_kernels.py) runs as written with int8 operands."""

import re

import pytest
import torch

import tile
from test_library_kernels import scaled_mm_kernel  # (vLLM's `triton_scaled_mm` kernel, by rename)


@tile.jit
def int8_matmul_kernel(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                       BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr, BLOCK_K: tile.constexpr, ):
    """Index arithmetic along K, every edge masked; `acc += dot(x, y)`, whose int8 dot gives int32."""
    rm = tile.program_id(0) * BLOCK_M + tile.arange(0, BLOCK_M)
    rn = tile.program_id(1) * BLOCK_N + tile.arange(0, BLOCK_N)
    acc = tile.zeros((BLOCK_M, BLOCK_N), dtype=tile.int32)
    for k in range(0, K, BLOCK_K):
        rk = k + tile.arange(0, BLOCK_K)
        in_m, in_k, in_n = rm[:, None] < M, rk < K, rn[None, :] < N
        x = tile.load(a + rm[:, None] * stride_am + rk[None, :] * stride_ak, mask=in_m & in_k[None, :], other=0)
        y = tile.load(b + rk[:, None] * stride_bk + rn[None, :] * stride_bn, mask=in_k[:, None] & in_n, other=0)
        acc += tile.dot(x, y)
    tile.store(c + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@tile.jit
def int8_pointer_increments_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                                   stride_cn, BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr,
                                   BLOCK_K: tile.constexpr, ):
    """Tutorial 03's form: pointers advanced along K, K masked, rows wrapped by % M, acc= as a keyword."""
    pid_m, pid_n = tile.program_id(0), tile.program_id(1)
    offs_am = (pid_m * BLOCK_M + tile.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tile.arange(0, BLOCK_N)) % N
    offs_k = tile.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tile.zeros((BLOCK_M, BLOCK_N), dtype=tile.int32)
    for k in range(0, tile.cdiv(K, BLOCK_K)):
        x = tile.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0)
        y = tile.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0)
        acc = tile.dot(x, y, acc=acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tile.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tile.arange(0, BLOCK_N)
    tile.store(c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn, acc,
               mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@tile.jit
def int8_dot_no_acc_kernel(a, b, c, M: tile.constexpr, N: tile.constexpr, K: tile.constexpr):
    """`tile.dot(x, y)` of int8 tiles with no accumulator gives int32 (stored into an int32 c)."""
    rm, rn, rk = tile.arange(0, M), tile.arange(0, N), tile.arange(0, K)
    x = tile.load(a + rm[:, None] * K + rk[None, :])
    y = tile.load(b + rk[:, None] * N + rn[None, :])
    z = tile.dot(x, y)
    tile.static_assert(z.dtype == tile.int32)
    tile.store(c + rm[:, None] * N + rn[None, :], z)


def _int8(shape, transposed=False, values=None, generator=None):
    """Random int8 values over the whole range (or drawn from `values`); `transposed`: the
    transpose of a contiguous tensor (stride 1 along dim 0, as `W.T`)."""
    full = shape[::-1] if transposed else shape
    if values is None:
        x = torch.randint(-128, 128, full, dtype=torch.int8, generator=generator)
    else:
        pool = torch.tensor(values, dtype=torch.int8)
        x = pool[torch.randint(0, len(pool), full, generator=generator)]
    return x.T if transposed else x


def _reference(a, b):
    return a.long() @ b.long()


def _matmul(kernel, a, b, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, **meta):
    M, K = a.shape
    N = b.shape[1]
    c = torch.full((M, N), -7, dtype=torch.int32)
    grid = (tile.cdiv(M, BLOCK_M), tile.cdiv(N, BLOCK_N))
    kernel[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                 BLOCK_K=BLOCK_K, **meta)
    return c


@pytest.mark.parametrize("b_k_major", [False, True])
def test_int8_dot_matches_torch(b_k_major):
    """Odd M, N, K (none a multiple of the blocks), B as stored or as `W.T` (stride_bk == 1)."""
    g = torch.Generator().manual_seed(0)
    M, N, K = 70, 50, 100
    a, b = _int8((M, K), generator=g), _int8((K, N), b_k_major, generator=g)
    assert torch.equal(_matmul(int8_matmul_kernel, a, b).long(), _reference(a, b))


def test_int8_dot_sums_past_2_to_the_24():
    """Sums beyond f32's exact integers (2^24): K = 2048 products of -128 by -128 (2^25), and
    rows mostly -128 with some 127 and 1 (odd sums past 2^24, which no f32 holds): every sum
    exact in int32."""
    g = torch.Generator().manual_seed(1)
    K = 2048
    a = torch.full((64, K), -128, dtype=torch.int8)
    b = torch.full((K, 64), -128, dtype=torch.int8)
    extremes = [-128] * 14 + [127, 1]
    a[1:] = _int8((63, K), values=extremes, generator=g)
    b[:, 1:] = _int8((K, 63), values=extremes, generator=g)
    ref = _reference(a, b)
    assert ref[0, 0] == K * 128 * 128
    assert ((ref > 2 ** 24) & (ref % 2 == 1)).sum() > 1000
    c = _matmul(int8_matmul_kernel, a, b, BLOCK_K=64)
    assert torch.equal(c.long(), ref)


def test_int8_dot_pointer_increments_on_a_strided_view():
    """Pointer increments along K of an A with a stride of 2 along K and a B that is `W.T`."""
    g = torch.Generator().manual_seed(2)
    M, N, K = 45, 77, 130
    a = _int8((M, 2 * K), generator=g)[:, ::2]
    b = _int8((K, N), transposed=True, generator=g)
    c = _matmul(int8_pointer_increments_kernel, a, b, BLOCK_K=64)
    assert torch.equal(c.long(), _reference(a, b))


def test_int8_dot_without_an_accumulator():
    g = torch.Generator().manual_seed(3)
    a, b = _int8((32, 64), generator=g), _int8((64, 16), generator=g)
    c = torch.empty(32, 16, dtype=torch.int32)
    int8_dot_no_acc_kernel[(1,)](a, b, c, M=32, N=16, K=64)
    assert torch.equal(c.long(), _reference(a, b))


def _scaled_mm(a, b, scale_a, scale_b, out_dtype, bias=None, block=(32, 64, 32), **meta):
    """vLLM's `triton_scaled_mm` launch (per-token scale_a when it has a row a token): its W8A8 int8
    fallback, int8 a and b into an int32 accumulator, then the scaled epilogue."""
    M, K = a.shape
    N = b.shape[1]
    BM, BN, BK = block
    c = torch.empty(M, N, dtype=out_dtype, device=a.device)
    grid = (tile.cdiv(M, BM) * tile.cdiv(N, BN),)
    scaled_mm_kernel[grid](a, b, scale_a, scale_b, c, bias, M, N, K, *a.stride(), *b.stride(), *c.stride(),
                           ACCUMULATOR_DTYPE=tile.int32, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK,
                           BLOCK_SIZE_SCALE_A=BM if scale_a.numel() > 1 else 1,
                           BLOCK_SIZE_SCALE_B=BN if scale_b.numel() > 1 else 1, **meta)
    return c


@pytest.mark.parametrize("per_token, bias", [(True, True), (False, False)])
def test_vllm_scaled_mm(per_token, bias):
    """The scaled epilogue (`scale_a * acc.to(float32)`, then `scale_b.T * ...`) against the
    same arithmetic in torch on the exact int32 product: equal."""
    g = torch.Generator().manual_seed(4)
    M, N, K = 33, 70, 100
    a, b = _int8((M, K), generator=g), _int8((K, N), transposed=True, generator=g)  # (b = W.T, as vLLM passes it)
    scale_a = torch.rand(M if per_token else 1, 1, generator=g) * 0.01
    scale_b = torch.rand(N, 1, generator=g) * 0.01
    bias_t = torch.randn(N, generator=g).to(torch.bfloat16) if bias else None
    c = _scaled_mm(a, b, scale_a, scale_b, torch.bfloat16, bias_t)
    ref = (scale_b.T * (scale_a * _reference(a, b).float())).to(torch.bfloat16)
    if bias:
        ref = ref + bias_t
    assert torch.equal(c, ref)


@tile.jit
def bad_dot_kernel(a, b, c, N: tile.constexpr, CASE: tile.constexpr):
    r = tile.arange(0, N)
    x = tile.load(a + r[:, None] * N + r[None, :])
    y = tile.load(b + r[:, None] * N + r[None, :])
    if CASE == "f32 acc":
        z = tile.dot(x, y, tile.zeros((N, N), dtype=tile.float32))
    elif CASE == "out_dtype":
        z = tile.dot(x, y, tile.zeros((N, N), dtype=tile.int32), out_dtype=tile.float32)
    elif CASE == "out_dtype f16":
        z = tile.dot(x, y, out_dtype=tile.float16)
    elif CASE == "out_dtype bf16":
        z = tile.dot(x, y, out_dtype=tile.bfloat16)
    else:
        z = tile.dot(x, y)
    tile.store(c + r[:, None] * N + r[None, :], z)


@pytest.mark.parametrize("da, db, n, case, match", [
    (torch.int8, torch.float16, 32, "", "dot operands must have one dtype, got tile.int8 and tile.float16"),
    (torch.uint8, torch.uint8, 32, "", "takes int8 operands .* got tile.uint8"),
    (torch.int32, torch.int32, 32, "", "takes int8 operands .* got tile.int32"),
    (torch.int8, torch.int8, 16, "", "K >= 32"),
    (torch.int8, torch.int8, 32, "f32 acc", "int8 operands accumulates in tile.int32 .* tile.float32 accumulator"),
    (torch.int8, torch.int8, 32, "out_dtype", "expected accumulator dtype tile.float32, got tile.int32"),
    (torch.int8, torch.int8, 32, "out_dtype f16", "accumulates in tile.int32 .* got out_dtype=tile.float16"),
    (torch.float16, torch.float16, 32, "out_dtype", "expected accumulator dtype tile.float32, got tile.int32"),
    (torch.bfloat16, torch.bfloat16, 32, "out_dtype f16", "bfloat16 operands accumulates in tile.float32, got out_dtype"),
    (torch.float16, torch.float16, 32, "out_dtype bf16", "out_dtype=bfloat16 is unsupported"),
])
def test_bad_dots_are_errors_at_their_line(da, db, n, case, match):
    with pytest.raises(tile.CompilationError, match=match) as info:
        bad_dot_kernel[(1,)](torch.zeros(n, n, dtype=da), torch.zeros(n, n, dtype=db), torch.empty(n, n), N=n,
                             CASE=case)
    assert "z = tile.dot(x, y" in str(info.value)


@tile.jit
def f16_accumulator_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                           stride_cn, BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr, BLOCK_K: tile.constexpr, ):
    """Triton's f16 accumulator: `tile.dot(x, y, acc, out_dtype=tile.float16)` of f16 tiles."""
    offs_am = (tile.program_id(0) * BLOCK_M + tile.arange(0, BLOCK_M)) % M
    offs_bn = (tile.program_id(1) * BLOCK_N + tile.arange(0, BLOCK_N)) % N
    offs_k = tile.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tile.zeros((BLOCK_M, BLOCK_N), dtype=tile.float16)
    for k in range(0, tile.cdiv(K, BLOCK_K)):
        x = tile.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        y = tile.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tile.dot(x, y, acc, out_dtype=tile.float16)
        tile.static_assert(acc.dtype == tile.float16)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = tile.program_id(0) * BLOCK_M + tile.arange(0, BLOCK_M)
    offs_cn = tile.program_id(1) * BLOCK_N + tile.arange(0, BLOCK_N)
    tile.store(c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn, acc,
               mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def test_f16_accumulator():
    """Each dot's sums rounded to f16 (they are made in f32): against the same per-step
    rounding in torch, within an f16 rounding or two of it."""
    g = torch.Generator().manual_seed(5)
    M, N, K, BK = 70, 50, 200, 32
    a, b = torch.randn(M, K, generator=g).half(), torch.randn(N, K, generator=g).half().T
    c = torch.empty(M, N, dtype=torch.float16)
    f16_accumulator_kernel[(2, 1)](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), BLOCK_M=64, BLOCK_N=64,
                                   BLOCK_K=BK)
    ref = torch.zeros(M, N, dtype=torch.float16)
    for k in range(0, K, BK):
        ref = (ref.float() + a[:, k:k + BK].float() @ b[k:k + BK].float()).half()
    torch.testing.assert_close(c, ref, rtol=2 ** -9, atol=2 ** -5)


def test_f16_accumulator_sm90a(gpu_target):
    gpu_target("sm_90a")
    a = torch.empty(512, 512, dtype=torch.float16, device="meta")
    c = torch.empty(512, 512, dtype=torch.float16, device="meta")
    launcher = f16_accumulator_kernel.compile(a, a, c, 512, 512, 512, *a.stride(), *a.stride(), *c.stride(),
                                              BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=4, num_stages=3)
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " in launcher.asm["ptx"]
    _no_spills(launcher)


def _meta(M, N, K, b_k_major):
    a = torch.empty(M, K, dtype=torch.int8, device="meta")
    b = torch.empty(N, K, dtype=torch.int8, device="meta").T if b_k_major else \
        torch.empty(K, N, dtype=torch.int8, device="meta")
    c = torch.empty(M, N, dtype=torch.int32, device="meta")
    return (a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride())


def _no_spills(launcher):
    info = launcher.metadata["ptxas"]
    assert info["stack_frame"] == info["spill_stores"] == info["spill_loads"] == 0, info
    assert "ld.local" not in launcher.asm["ptx"] and "st.local" not in launcher.asm["ptx"]


@pytest.mark.parametrize("kernel", [int8_matmul_kernel, int8_pointer_increments_kernel])
@pytest.mark.parametrize("b_k_major", [True, False])
def test_int8_dot_sm90a_wgmma(gpu_target, kernel, b_k_major):
    """128x128x64 on 4 warps: int8 wgmma (m64n128k32, s32 accumulator), both operands from
    shared memory, no widening, no spills. A K-major B is copied into a transposed ring slot
    (or, by pointer increments, loaded N x K), an N-major one stored transposed from registers."""
    gpu_target("sm_90a")
    launcher = kernel.compile(*_meta(512, 512, 512, b_k_major), BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=4,
                              num_stages=3)
    ptx = launcher.asm["ptx"]
    assert "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 " in ptx
    assert "mma.sync" not in ptx and "cvt.rn.f32.s32" not in ptx and ".f16" not in ptx  # (no widening)
    _no_spills(launcher)
    if b_k_major:
        assert not re.search(r"st\.shared\.(b8|u8|s8)", ptx)  # (B's slot is K-major as copied)


def test_int8_dot_sm90a_small_m_takes_mma_sync(gpu_target):
    """A dot wgmma cannot take (M = 16) goes to int8 mma.sync on sm_90a."""
    gpu_target("sm_90a")
    launcher = int8_matmul_kernel.compile(*_meta(16, 256, 256, True), BLOCK_M=16, BLOCK_N=64, BLOCK_K=64, num_warps=4,
                                          num_stages=2)
    ptx = launcher.asm["ptx"]
    assert "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32" in ptx and "wgmma" not in ptx
    _no_spills(launcher)


@pytest.mark.parametrize("b_k_major", [True, False])
def test_int8_dot_sm80_mma_sync(gpu_target, b_k_major):
    gpu_target("sm_80")
    launcher = int8_matmul_kernel.compile(*_meta(256, 256, 256, b_k_major), BLOCK_M=128, BLOCK_N=128, BLOCK_K=64,
                                          num_warps=8, num_stages=3)
    ptx = launcher.asm["ptx"]
    assert "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32" in ptx and "wgmma" not in ptx
    assert ".satfinite" not in ptx and ".f16" not in ptx  # (sums wrap as the CPU's do; no widening)
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
    _no_spills(launcher)


@pytest.mark.parametrize("target, block, instruction", [
    ("sm_90a", (128, 128, 128), "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 "),
    ("sm_90a", (16, 64, 128), "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"),
    ("sm_80", (64, 128, 128), "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"),
])
def test_vllm_scaled_mm_compiles(gpu_target, target, block, instruction):
    """vLLM's kernel at its tile shapes (its `triton_scaled_mm` picks 16x64x128 .. 128x128x128):
    B (`W.T`) copied K-major with cp.async, no byte-wise shared stores, no spills."""
    gpu_target(target)
    M, N, K = 1024, 512, 512
    a = torch.empty(M, K, dtype=torch.int8, device="meta")
    b = torch.empty(N, K, dtype=torch.int8, device="meta").T
    scale_a, scale_b = torch.empty(M, 1, device="meta"), torch.empty(N, 1, device="meta")
    bias = torch.empty(N, dtype=torch.bfloat16, device="meta")
    c = torch.empty(M, N, dtype=torch.bfloat16, device="meta")
    BM, BN, BK = block
    launcher = scaled_mm_kernel.compile(a, b, scale_a, scale_b, c, bias, M, N, K, *a.stride(), *b.stride(), *c.stride(),
                                        ACCUMULATOR_DTYPE=tile.int32, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK,
                                        BLOCK_SIZE_SCALE_A=BM, BLOCK_SIZE_SCALE_B=BN, num_warps=4, num_stages=3)
    ptx = launcher.asm["ptx"]
    assert instruction in ptx
    assert not re.search(r"st\.shared\.(b8|u8|s8)", ptx) and "cp.async.cg.shared.global" in ptx
    _no_spills(launcher)
