"""`tile.dot` of float8 tiles (e4m3, e5m2, one of each) with an f32 accumulator: on the CPU
against torch (float8 inputs made by torch's `.to(float8)`, reference in float64 of the
dequantized values); on sm_90a wgmma `m64nNk32` reads both operands K-major from shared
memory (B copied transposed, or stored transposed from registers: `passes/fp8_dots.py`);
on sm_80 the operands are widened to f16 for mma.sync."""

import re

import pytest
import torch

import tile

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2


@tile.jit
def fp8_matmul_kernel(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                      BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr, BLOCK_K: tile.constexpr, ):
    pid_m, pid_n = tile.program_id(0), tile.program_id(1)
    rm = pid_m * BLOCK_M + tile.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tile.arange(0, BLOCK_N)
    rk = tile.arange(0, BLOCK_K)
    acc = tile.zeros((BLOCK_M, BLOCK_N), dtype=tile.float32)
    for k in range(0, K, BLOCK_K):
        kk = k + rk
        x = tile.load(a + rm[:, None] * stride_am + kk[None, :] * stride_ak, mask=(rm[:, None] < M) & (kk[None, :] < K),
                      other=0.0)
        y = tile.load(b + kk[:, None] * stride_bk + rn[None, :] * stride_bn, mask=(kk[:, None] < K) & (rn[None, :] < N),
                      other=0.0)
        acc = tile.dot(x, y, acc)
    tile.store(c + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@tile.jit
def fp8_pointer_increments_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                                  stride_cn, BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr, BLOCK_K: tile.constexpr, ):
    """Tutorial 03's form: pointers advanced along K, K masked, acc= as a keyword, rows wrapped by % M."""
    pid_m, pid_n = tile.program_id(0), tile.program_id(1)
    offs_am = (pid_m * BLOCK_M + tile.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tile.arange(0, BLOCK_N)) % N
    offs_k = tile.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tile.zeros((BLOCK_M, BLOCK_N), dtype=tile.float32)
    for k in range(0, tile.cdiv(K, BLOCK_K)):
        x = tile.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        y = tile.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tile.dot(x, y, acc=acc, out_dtype=tile.float32)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tile.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tile.arange(0, BLOCK_N)
    tile.store(c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn, acc.to(tile.bfloat16),
               mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def _fp8(shape, dtype, scale=4.0, transposed=False):
    """Random float8 values over most of the format's range (subnormals and zeros too)."""
    x = torch.randn(shape[::-1] if transposed else shape, dtype=torch.float32) * scale
    x = x.to(dtype)
    return x.T if transposed else x


def _reference(a, b):
    return a.double() @ b.double()


def _close(got, ref, K, rel=2.0**-22):
    """got within f32 accumulation error of the exact sums: K roundings of partial sums no
    larger than the sum of |products|."""
    bound = rel * K * (ref.abs().max() + 1) + 1e-6
    assert (got.double() - ref).abs().max() <= bound, (got.double() - ref).abs().max()


@pytest.mark.parametrize("da, db", [(E4M3, E4M3), (E5M2, E5M2), (E4M3, E5M2)])
@pytest.mark.parametrize("b_k_major", [False, True])
def test_fp8_dot_matches_torch(da, db, b_k_major):
    torch.manual_seed(0)
    M, N, K = 70, 50, 100  # (none a multiple of the blocks)
    a, b = _fp8((M, K), da), _fp8((K, N), db, transposed=b_k_major)
    c = torch.full((M, N), float("nan"))
    fp8_matmul_kernel[(2, 1)](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), BLOCK_M=64, BLOCK_N=64,
                              BLOCK_K=32)
    _close(c, _reference(a, b), K)


def test_fp8_dot_exact_products():
    """Every e4m3 code by every e4m3 code of a row (products exact in f32, one term a sum):
    bit-exact against float64."""
    codes = torch.arange(256, dtype=torch.uint8).view(E4M3)
    finite = codes[~codes.float().isnan()]  # (0x7f and 0xff are NaN)
    a = torch.zeros(64, 32, dtype=E4M3)
    b = torch.zeros(32, 256, dtype=E4M3)
    a[:, 0] = finite[torch.arange(64) * 3 % len(finite)]
    b[0, : len(finite)] = finite
    c = torch.empty(64, 256)
    fp8_matmul_kernel[(1, 4)](a, b, c, 64, 256, 32, *a.stride(), *b.stride(), *c.stride(), BLOCK_M=64, BLOCK_N=64,
                              BLOCK_K=32)
    assert torch.equal(c.double(), _reference(a, b))


def test_fp8_dot_pointer_increments_on_a_strided_view():
    torch.manual_seed(1)
    M, N, K = 45, 77, 130
    a = _fp8((M, 2 * K), E4M3)[:, ::2]  # (a stride along K of 2)
    b = _fp8((K, N), E5M2, transposed=True)
    c = torch.empty(M, N, dtype=torch.bfloat16)
    fp8_pointer_increments_kernel[(1, 2)](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), BLOCK_M=64,
                                          BLOCK_N=64, BLOCK_K=64)
    torch.testing.assert_close(c, _reference(a, b).to(torch.bfloat16), rtol=2**-8, atol=1e-6)  # (one bf16 rounding)


@tile.jit
def fp8_by_f16_kernel(a, b, c):
    r = tile.arange(0, 32)
    x = tile.load(a + r[:, None] * 32 + r[None, :])
    y = tile.load(b + r[:, None] * 32 + r[None, :])
    tile.store(c + r[:, None] * 32 + r[None, :], tile.dot(x, y))


def test_fp8_by_f16_is_an_error():
    with pytest.raises(tile.CompilationError, match="float8 tiles on both sides") as info:
        fp8_by_f16_kernel[(1, )](torch.zeros(32, 32, dtype=E4M3), torch.zeros(32, 32, dtype=torch.float16),
                                 torch.empty(32, 32))
    assert "tile.dot(x, y)" in str(info.value)


def _meta(M, N, K, da, db, b_k_major):
    a = torch.empty(M, K, dtype=da, device="meta")
    b = torch.empty(N, K, dtype=db, device="meta").T if b_k_major else torch.empty(K, N, dtype=db, device="meta")
    c = torch.empty(M, N, device="meta")
    return (a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride())


@pytest.mark.parametrize("da, db, b_k_major, name", [
    (E4M3, E4M3, True, "e4m3.e4m3"), (E4M3, E4M3, False, "e4m3.e4m3"), (E5M2, E5M2, True, "e5m2.e5m2"),
    (E4M3, E5M2, True, "e4m3.e5m2"),
])
def test_fp8_dot_sm90a_wgmma(gpu_target, da, db, b_k_major, name):
    """Float8 wgmma (m64n128k32 at 128x128x64 on 8 warps), both operands from shared memory,
    no spills; a K-major B is TMA-copied into a transposed ring slot, an N-major one is
    stored transposed from registers."""
    gpu_target("sm_90a")
    launcher = fp8_matmul_kernel.compile(*_meta(512, 512, 512, da, db, b_k_major), BLOCK_M=128, BLOCK_N=128,
                                         BLOCK_K=64, num_warps=8, num_stages=3)
    ptx = launcher.asm["ptx"]
    assert f"wgmma.mma_async.sync.aligned.m64n128k32.f32.{name} " in ptx
    assert "mma.sync" not in ptx and "cvt.rn.f16x2" not in ptx  # (no widening)
    info = launcher.metadata["ptxas"]
    assert info["stack_frame"] == info["spill_stores"] == info["spill_loads"] == 0, info
    tma_copies = len(re.findall(r"cp\.async\.bulk\.tensor", ptx))
    assert tma_copies >= (2 if b_k_major else 1)


def test_fp8_dot_sm80_widens_to_f16(gpu_target):
    gpu_target("sm_80")
    launcher = fp8_matmul_kernel.compile(*_meta(256, 256, 256, E4M3, E5M2, True), BLOCK_M=128, BLOCK_N=128,
                                         BLOCK_K=64, num_warps=8, num_stages=3)
    ptx = launcher.asm["ptx"]
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx and "wgmma" not in ptx
    info = launcher.metadata["ptxas"]
    assert info["stack_frame"] == info["spill_stores"] == info["spill_loads"] == 0, info


def test_fp8_dot_sm90a_small_m_widens(gpu_target):
    """A dot wgmma cannot take (M = 16: not whole 64-row instructions) is widened to f16 on sm_90a too."""
    gpu_target("sm_90a")
    launcher = fp8_matmul_kernel.compile(*_meta(16, 256, 256, E4M3, E4M3, True), BLOCK_M=16, BLOCK_N=64, BLOCK_K=64,
                                         num_warps=4, num_stages=2)
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in launcher.asm["ptx"]


def test_fp8_dot_sm90a_k_major_b_by_pointer_increments(gpu_target):
    """Tutorial 03's form (rows wrapped by % N, pointers advanced along K): B = w.T is no block
    a copy lands transposed, so it is loaded N x K (K contiguous, 16-byte cp.async into its ring)
    and the dot reads the slot as its K-major B: no byte-wise shared stores, no spills."""
    gpu_target("sm_90a")
    M, N, K = 512, 512, 512
    a = torch.empty(M, K, dtype=E4M3, device="meta")
    b = torch.empty(N, K, dtype=E5M2, device="meta").T
    c = torch.empty(M, N, dtype=torch.bfloat16, device="meta")
    launcher = fp8_pointer_increments_kernel.compile(a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(),
                                                     BLOCK_M=128, BLOCK_N=128, BLOCK_K=128, num_warps=8, num_stages=3)
    ptx = launcher.asm["ptx"]
    assert "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e5m2 " in ptx
    assert not re.search(r"st\.shared\.(b8|u8|s8)", ptx)
    assert re.search(r"cp\.async\.cg\.shared\.global \[%rd?\d+\], \[%rd\d+\], 16", ptx)
    assert "wgmma.wait_group.sync.aligned 1;" in ptx  # (its dot stays in flight while the next copies start)
    info = launcher.metadata["ptxas"]
    assert info["stack_frame"] == info["spill_stores"] == info["spill_loads"] == 0, info


@tile.jit
def fp8_dot_transposed_kernel(a, b, c, N: tile.constexpr, K: tile.constexpr):
    """c = a @ b.T for one 64 x N tile, b (N x K) loaded as it lies, transposed in the kernel."""
    rm = tile.arange(0, 64)
    rn = tile.arange(0, N)
    rk = tile.arange(0, K)
    x = tile.load(a + rm[:, None] * K + rk[None, :])
    y = tile.load(b + rn[:, None] * K + rk[None, :])
    tile.store(c + rm[:, None] * N + rn[None, :], tile.dot(x, y.T))


def test_fp8_dot_of_a_transpose():
    torch.manual_seed(2)
    a, b = _fp8((64, 64), E4M3), _fp8((32, 64), E4M3)
    c = torch.empty(64, 32)
    fp8_dot_transposed_kernel[(1, )](a, b, c, N=32, K=64)
    _close(c, _reference(a, b.T), 64)


def test_fp8_dot_of_a_transpose_sm90a(gpu_target):
    """Outside a loop the transpose of a register tile goes to the dot, which stores the N x K
    tile as it is (vector stores along K) as its K-major B."""
    gpu_target("sm_90a")
    a = torch.empty(64, 64, dtype=E4M3, device="meta")
    b = torch.empty(32, 64, dtype=E4M3, device="meta")
    launcher = fp8_dot_transposed_kernel.compile(a, b, torch.empty(64, 32, device="meta"), N=32, K=64, num_warps=4)
    ptx = launcher.asm["ptx"]
    assert "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 " in ptx
    assert not re.search(r"st\.shared\.(b8|u8|s8)", ptx)
