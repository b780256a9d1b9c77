"""Kernels written the way serving and training libraries write Triton (examples/fused_moe.py's
mixture-of-experts GEMM over sorted token ids with a run-time early return, per-token-group fp8 quantization,
a scaled GEMM whose epilogue indexes tiles of pointers and casts to `c_ptr.type.element_ty`,
a gated activation), run by rename on the CPU against torch and compiled for sm_90a."""

import pytest
import torch

import tile
from as_triton import run_in_triton
from fused_moe import fused_moe, fused_moe_kernel, reference

@tile.jit
def scaled_mm_kernel(a_ptr, b_ptr, scale_a_ptr, scale_b_ptr, c_ptr, bias_ptr,
                     M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     ACCUMULATOR_DTYPE: tile.constexpr, BLOCK_SIZE_SCALE_A: tile.constexpr,
                     BLOCK_SIZE_SCALE_B: tile.constexpr,
                     BLOCK_SIZE_M: tile.constexpr, BLOCK_SIZE_N: tile.constexpr, BLOCK_SIZE_K: tile.constexpr):
    pid = tile.program_id(axis=0)
    num_pid_n = tile.cdiv(N, BLOCK_SIZE_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    accumulator_dtype = ACCUMULATOR_DTYPE
    accumulator = tile.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=accumulator_dtype)
    offsets_am = pid_m * BLOCK_SIZE_M + tile.arange(0, BLOCK_SIZE_M).to(tile.int64)
    masks_am = offsets_am < M
    offsets_bn = pid_n * BLOCK_SIZE_N + tile.arange(0, BLOCK_SIZE_N).to(tile.int64)
    masks_bn = offsets_bn < N
    offsets_k = tile.arange(0, BLOCK_SIZE_K).to(tile.int64)
    offsets_a = (stride_am * offsets_am[:, None] + stride_ak * offsets_k[None, :])
    offsets_b = (stride_bk * offsets_k[:, None] + stride_bn * offsets_bn[None, :])
    offsets_scale_am = (tile.arange(0, BLOCK_SIZE_SCALE_A) + (BLOCK_SIZE_SCALE_A > 1) * pid_m * BLOCK_SIZE_M)
    masks_scale_am = offsets_scale_am < M
    offsets_scale_bn = (tile.arange(0, BLOCK_SIZE_SCALE_B) + (BLOCK_SIZE_SCALE_B > 1) * pid_n * BLOCK_SIZE_N)
    masks_scale_bn = offsets_scale_bn < N
    a_ptrs = a_ptr + offsets_a
    b_ptrs = b_ptr + offsets_b
    scale_a_ptrs = scale_a_ptr + offsets_scale_am
    scale_b_ptrs = scale_b_ptr + offsets_scale_bn
    for k in range(0, tile.cdiv(K, BLOCK_SIZE_K)):
        masks_k = offsets_k < K
        masks_a = masks_am[:, None] & masks_k[None, :]
        a = tile.load(a_ptrs, mask=masks_a)
        masks_b = masks_k[:, None] & masks_bn[None, :]
        b = tile.load(b_ptrs, mask=masks_b)
        accumulator = tile.dot(a, b, accumulator, out_dtype=accumulator_dtype)
        offsets_k += BLOCK_SIZE_K
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    masks_scale_a = masks_scale_am[:, None] & (tile.arange(0, 1) < 1)[:, None]
    scale_a = tile.load(scale_a_ptrs[:, None], masks_scale_a)
    scale_a = scale_a.broadcast_to((BLOCK_SIZE_M, 1))
    accumulator = scale_a * accumulator.to(tile.float32)
    masks_scale_b = masks_scale_bn[:, None] & (tile.arange(0, 1) < 1)[None, :]
    scale_b = tile.load(scale_b_ptrs[:, None], masks_scale_b)
    scale_b = scale_b.broadcast_to((BLOCK_SIZE_N, 1))
    accumulator = scale_b.T * accumulator.to(tile.float32)
    c = accumulator.to(c_ptr.type.element_ty)
    if bias_ptr:
        offsets_bias = offsets_bn
        bias_ptrs = bias_ptr + offsets_bias
        bias_mask = offsets_bias < N
        bias = tile.load(bias_ptrs, bias_mask)
        c += bias
    offs_cm = pid_m * BLOCK_SIZE_M + tile.arange(0, BLOCK_SIZE_M).to(tile.int64)
    offs_cn = pid_n * BLOCK_SIZE_N + tile.arange(0, BLOCK_SIZE_N).to(tile.int64)
    offs_cm = offs_cm.to(tile.int64)
    offs_cn = offs_cn.to(tile.int64)
    c_ptrs = (c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :])
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tile.store(c_ptrs, c, mask=c_mask)


@tile.jit
def _per_token_group_quant_fp8(
    y_ptr, y_q_ptr, y_s_ptr,
    group_size,
    y_num_columns, y_row_stride,
    eps,
    fp8_min,
    fp8_max,
    use_ue8m0: tile.constexpr,
    BLOCK: tile.constexpr,
):
    groups_per_row = y_num_columns // group_size
    g_id = tile.program_id(0)
    row = g_id // groups_per_row
    row_g_id = g_id % groups_per_row
    y_ptr += (row * y_row_stride) + (row_g_id * group_size)
    y_q_ptr += g_id * group_size
    y_s_ptr += g_id
    cols = tile.arange(0, BLOCK)
    mask = cols < group_size
    y = tile.load(y_ptr + cols, mask=mask, other=0.0).to(tile.float32)
    _absmax = tile.maximum(tile.max(tile.abs(y)), eps)
    scale_raw = _absmax / fp8_max
    y_s = tile.math.exp2(tile.ceil(tile.log2(scale_raw))) if use_ue8m0 else scale_raw
    y_q = tile.clamp(y / y_s, fp8_min, fp8_max).to(y_q_ptr.dtype.element_ty)
    tile.store(y_q_ptr + cols, y_q, mask=mask)
    tile.store(y_s_ptr, y_s)


@tile.jit
def _silu_and_mul_kernel(o_ptr, o_stride, x_ptr, x_stride, d, BLOCK_SIZE: tile.constexpr) -> None:
    i = tile.program_id(axis=0).to(tile.int64)
    j = tile.program_id(axis=1)
    o_row_ptr = o_ptr + o_stride * i
    x_row_ptr = x_ptr + x_stride * i
    offsets = j * BLOCK_SIZE + tile.arange(0, BLOCK_SIZE)
    mask = offsets < d
    a = tile.load(x_row_ptr + offsets, mask=mask).to(tile.float32)
    b = tile.load(x_row_ptr + offsets + d, mask=mask).to(tile.float32)
    result = (a * tile.sigmoid(a) * b).to(x_ptr.dtype.element_ty)
    tile.store(o_row_ptr + offsets, result, mask=mask)


@pytest.mark.parametrize("M,K,N", [(33, 80, 72), (8, 64, 64)])
def test_fused_moe(M, K, N):
    torch.manual_seed(0)
    E, top_k = 4, 2
    a = torch.randn(M, K, dtype=torch.float16)
    w = torch.randn(E, N, K, dtype=torch.float16) / 8
    topk_ids = torch.randint(0, E, (M, top_k), dtype=torch.int32)
    topk_weights = torch.rand(M, top_k)
    c = fused_moe(a, w, topk_weights, topk_ids, BLOCK_SIZE_M=16, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32)
    torch.testing.assert_close(c.float(), reference(a, w, topk_weights, topk_ids), rtol=1e-2, atol=1e-2)


def test_fused_moe_sm90a(gpu_target):
    gpu_target("sm_90a")
    M, K, N, E = 64, 256, 128, 8
    meta = lambda *shape, dtype=torch.float16: torch.empty(shape, dtype=dtype, device="meta")  # noqa: E731
    a, w, c = meta(M, K), meta(E, N, K), meta(M, 2, N)
    launcher = fused_moe_kernel.compile(
        a, w, c, meta(M, 2, dtype=torch.float32), meta(256, dtype=torch.int32), meta(16, dtype=torch.int32),
        meta(1, dtype=torch.int32), N, K, 256, 2 * M, K, 1, N * K, 1, K, N, 1,
        BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, MUL_ROUTED_WEIGHT=True, top_k=2,
        compute_type=tile.float16, num_warps=4, num_stages=3,
    )
    ptx = launcher.asm["ptx"]
    assert "mma" in ptx and launcher.metadata["ptxas"]["spill_stores"] == 0
    # The expert weights, [E, N, K] read as B = W.T, go through cp.async rings 16 bytes at a
    # time (tile-k-major-loads), not element by element.
    assert "cp.async.cg" in ptx and "ld.global.b16" not in ptx


@pytest.mark.parametrize("bias", [True, False])
def test_scaled_mm_epilogue_indexes_pointer_tiles(bias):
    torch.manual_seed(0)
    M, N, K = 70, 96, 200
    a = torch.randint(-8, 8, (M, K), dtype=torch.int8).half()
    b = torch.randint(-8, 8, (K + 4, N), dtype=torch.int8).half()[2:K + 2]  # (a strided view)
    sa, sb = torch.rand(M, 1), torch.rand(N, 1)
    bias_t = torch.randn(N, dtype=torch.float16) if bias else None
    c = torch.empty(M, N, dtype=torch.float16)
    scaled_mm_kernel[(tile.cdiv(M, 32) * tile.cdiv(N, 32),)](
        a, b, sa, sb, c, bias_t, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
        c.stride(0), c.stride(1), ACCUMULATOR_DTYPE=tile.float32, BLOCK_SIZE_SCALE_A=32,
        BLOCK_SIZE_SCALE_B=32, BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32,
    )
    ref = (a.float() @ b.float()) * sa * sb.T
    ref = ref.half() + (bias_t if bias else 0)
    torch.testing.assert_close(c, ref, rtol=2e-3, atol=0.5)


@pytest.mark.parametrize("ue8m0", [False, True])
def test_per_token_group_quant_fp8(ue8m0):
    torch.manual_seed(0)
    M, N, G = 5, 384, 128
    y = torch.randn(M, N + 16, dtype=torch.bfloat16)[:, :N]
    finfo = torch.finfo(torch.float8_e4m3fn)
    y_q = torch.empty(M, N, dtype=torch.float8_e4m3fn)
    y_s = torch.empty(M, N // G, dtype=torch.float32)
    _per_token_group_quant_fp8[(M * N // G,)](
        y, y_q, y_s, G, N, y.stride(0), 1e-10, finfo.min, finfo.max, use_ue8m0=ue8m0, BLOCK=G, num_warps=1,
    )
    groups = y.float().view(M, N // G, G)
    s = groups.abs().amax(-1).clamp(min=1e-10) / finfo.max
    if ue8m0:
        s = torch.exp2(torch.ceil(torch.log2(s)))
    torch.testing.assert_close(y_s, s)
    q = (groups / s[..., None]).clamp(finfo.min, finfo.max).to(torch.float8_e4m3fn)
    assert torch.equal(y_q.view(torch.uint8), q.view(M, N).view(torch.uint8))


def test_silu_and_mul():
    x = torch.randn(7, 600, dtype=torch.float16)
    o = torch.empty(7, 300, dtype=torch.float16)
    _silu_and_mul_kernel[(7, tile.cdiv(300, 128))](o, o.stride(0), x, x.stride(0), 300, BLOCK_SIZE=128)
    torch.testing.assert_close(o, (torch.nn.functional.silu(x[:, :300].float()) * x[:, 300:].float()).half(),
                               rtol=2e-3, atol=2e-3)


def test_library_kernels_sm90a(gpu_target):
    gpu_target("sm_90a")
    e = lambda *shape, dtype=torch.float16: torch.empty(shape, dtype=dtype, device="meta")  # noqa: E731
    mm = scaled_mm_kernel.compile(
        e(256, 512), e(512, 256), e(256, 1, dtype=torch.float32), e(256, 1, dtype=torch.float32), e(256, 256),
        e(256), 256, 256, 512, 512, 1, 256, 1, 256, 1, ACCUMULATOR_DTYPE=tile.float32, BLOCK_SIZE_SCALE_A=128,
        BLOCK_SIZE_SCALE_B=128, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, num_warps=4, num_stages=3,
    )
    assert "wgmma" in mm.asm["ptx"] and mm.metadata["ptxas"]["spill_stores"] == 0
    quant = _per_token_group_quant_fp8.compile(
        e(64, 512, dtype=torch.bfloat16), e(64, 512, dtype=torch.float8_e4m3fn), e(64, 4, dtype=torch.float32),
        128, 512, 512, 1e-10, -448.0, 448.0, use_ue8m0=True, BLOCK=128, num_warps=1,
    )
    assert "cvt.rn.satfinite.e4m3x2.f32" in quant.asm["ptx"]  # (the clamp, then the hardware conversion)


TWIN_SCRIPT = """
sys.path.insert(0, os.path.join(os.path.dirname(sys.argv[1]), "examples"))
import fused_moe as fm
twin = triton_twin(fm, ["write_zeros_to_output", "fused_moe_kernel"])
torch.manual_seed(0)
M, K, N, E = 33, 80, 72, 4
a, w = torch.randn(M, K, dtype=torch.float16), (torch.randn(E, N, K) / 8).half()
topk_ids = torch.stack([torch.randperm(E)[:2] for _ in range(M)]).to(torch.int32)
tw = torch.rand(M, 2)
cfg = dict(BLOCK_SIZE_M=16, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32, GROUP_SIZE_M=8)
ids, experts, padded = fm.moe_align_block_size(topk_ids, 16, E)
c = torch.empty(M, 2, N, dtype=a.dtype)
grid = (-(-ids.numel() // 16) * -(-N // 32),)
twin.fused_moe_kernel[grid](a, w, c, tw, ids, experts, padded, N, K, ids.numel(), M * 2, a.stride(0), a.stride(1),
                            w.stride(0), w.stride(2), w.stride(1), c.stride(1), c.stride(2), MUL_ROUTED_WEIGHT=True,
                            top_k=2, compute_type=tl.float16, **cfg)
ours = fm.fused_moe(a, w, tw, topk_ids, **cfg)
# (tile folds `accumulator += dot(a, b)` into the dot, as Triton's compiler does and its
# interpreter does not: the sums' rounding differs by an f16 ulp or so)
torch.testing.assert_close(ours, c, rtol=2e-3, atol=2e-3)
print("same")
"""


def test_fused_moe_matches_its_triton_twin_in_the_interpreter():
    """The example renamed back to Triton (`tile.` -> `tl.`, as the GPU benchmark times it) and run
    by Triton's interpreter gives tile's CPU result (to f16 rounding: see the script)."""
    pytest.importorskip("triton")
    run = run_in_triton(TWIN_SCRIPT)
    assert run.returncode == 0 and "same" in run.stdout, run.stderr[-2000:]
