"""Triton tutorial 10, block-scaled matmul, as tile code.

After python/tutorials/10-block-scaled-matmul.py of triton-lang/triton (MIT license, in LICENSE here;
Copyright 2018-2020 Philippe Tillet, 2020-2022 OpenAI): `dot_scaled` of fp8 (or fp4) blocks
with one e8m0 scale per 32 elements along K, the operands and their scales (in the 5-D
layout the tensor cores read them in) through host tensor descriptors, pipelined by
`range(..., num_stages=)`. The kernel is Triton code with `tl.` spelled `tile.` and
`@triton.jit` spelled `@tile.jit`. Differs from the tutorial: only the mxfp8 case is built
by the host code (the fp4 packing of `triton.tools.mxfp` is left out; the kernel keeps the
fp4 branches), main() checks a small product against torch instead of the tutorial's
Blackwell-only test, and the benchmarks and proton profiling are left out.
"""

import torch

import tile
from tile import TensorDescriptor

VEC_SIZE = 32  # elements along K per scale (mxfp8)


@tile.jit
def block_scaled_matmul_kernel(  #
        a_desc,  #
        a_scale_desc,  #
        b_desc,  #
        b_scale_desc,  #
        c_desc,  #
        M: tile.constexpr,  #
        N: tile.constexpr,  #
        K: tile.constexpr,  #
        output_type: tile.constexpr,  #
        ELEM_PER_BYTE_A: tile.constexpr,  #
        ELEM_PER_BYTE_B: tile.constexpr,  #
        VEC_SIZE: tile.constexpr,  #
        BLOCK_M: tile.constexpr,  #
        BLOCK_N: tile.constexpr,  #
        BLOCK_K: tile.constexpr,  #
        rep_m: tile.constexpr,  #
        rep_n: tile.constexpr,  #
        rep_k: tile.constexpr,  #
        NUM_STAGES: tile.constexpr,  #
):
    if output_type == 0:
        output_dtype = tile.float32
    elif output_type == 1:
        output_dtype = tile.float16
    elif output_type == 2:
        output_dtype = tile.float8e4nv

    pid = tile.program_id(axis=0)
    num_pid_m = tile.cdiv(M, BLOCK_M)
    pid_m = pid % num_pid_m
    pid_n = pid // num_pid_m
    offs_am = pid_m * BLOCK_M
    offs_bn = pid_n * BLOCK_N
    offs_k_a = 0
    offs_k_b = 0
    offs_scale_m = pid_m * rep_m
    offs_scale_n = pid_n * rep_n
    offs_scale_k = 0

    MIXED_PREC: tile.constexpr = ELEM_PER_BYTE_A == 1 and ELEM_PER_BYTE_B == 2

    accumulator = tile.zeros((BLOCK_M, BLOCK_N), dtype=tile.float32)
    for k in tile.range(0, tile.cdiv(K, BLOCK_K), num_stages=NUM_STAGES):
        a = a_desc.load([offs_am, offs_k_a])
        b = b_desc.load([offs_bn, offs_k_b])
        scale_a = a_scale_desc.load([0, offs_scale_m, offs_scale_k, 0, 0])
        scale_b = b_scale_desc.load([0, offs_scale_n, offs_scale_k, 0, 0])
        # from the 5-D layout of the tensor cores' scale reads to one row of scales per row of a (and of b)
        scale_a = scale_a.reshape(rep_m, rep_k, 32, 4, 4).trans(0, 3, 2, 1, 4).reshape(BLOCK_M, BLOCK_K // VEC_SIZE)
        scale_b = scale_b.reshape(rep_n, rep_k, 32, 4, 4).trans(0, 3, 2, 1, 4).reshape(BLOCK_N, BLOCK_K // VEC_SIZE)

        if MIXED_PREC:
            accumulator = tile.dot_scaled(a, scale_a, "e4m3", b.T, scale_b, "e2m1", accumulator)
        elif ELEM_PER_BYTE_A == 2 and ELEM_PER_BYTE_B == 2:
            accumulator = tile.dot_scaled(a, scale_a, "e2m1", b.T, scale_b, "e2m1", accumulator)
        else:
            accumulator = tile.dot_scaled(a, scale_a, "e4m3", b.T, scale_b, "e4m3", accumulator)

        offs_k_a += BLOCK_K // ELEM_PER_BYTE_A
        offs_k_b += BLOCK_K // ELEM_PER_BYTE_B
        offs_scale_k += rep_k

    c_desc.store([offs_am, offs_bn], accumulator.to(output_dtype))


def pack_scales(scale):
    """(rows, K // 32) e8m0 scales -> the tutorial's (1, rows // 128, K // 128, 2, 256) layout."""
    rows, k_scales = scale.shape
    packed = scale.reshape(rows // 128, 4, 32, k_scales // 4, 4).permute(0, 3, 2, 1, 4).contiguous()
    return packed.reshape(1, rows // 128, k_scales // 4, 2, 256)


def block_scaled_matmul(a, a_scale, b, b_scale, BLOCK_M=128, BLOCK_N=128, BLOCK_K=128, num_stages=2):
    """c (fp16) = (a * 2**(a_scale - 127)) @ (b * 2**(b_scale - 127)).T, a (M, K) and b (N, K) fp8 e4m3."""
    M, K = a.shape
    N, _ = b.shape
    c = torch.empty((M, N), dtype=torch.float16, device=a.device)
    rep_m, rep_n, rep_k = BLOCK_M // 128, BLOCK_N // 128, BLOCK_K // 32 // 4
    a_desc = TensorDescriptor.from_tensor(a, [BLOCK_M, BLOCK_K])
    b_desc = TensorDescriptor.from_tensor(b, [BLOCK_N, BLOCK_K])
    a_scale_desc = TensorDescriptor.from_tensor(pack_scales(a_scale), block_shape=[1, rep_m, rep_k, 2, 256])
    b_scale_desc = TensorDescriptor.from_tensor(pack_scales(b_scale), block_shape=[1, rep_n, rep_k, 2, 256])
    c_desc = TensorDescriptor.from_tensor(c, [BLOCK_M, BLOCK_N])
    grid = (tile.cdiv(M, BLOCK_M) * tile.cdiv(N, BLOCK_N), 1)
    block_scaled_matmul_kernel[grid](a_desc, a_scale_desc, b_desc, b_scale_desc, c_desc, M, N, K, 1, 1, 1,
                                     VEC_SIZE, BLOCK_M, BLOCK_N, BLOCK_K, rep_m, rep_n, rep_k, num_stages)
    return c


def operands(M, N, K, device="cpu"):
    a = (torch.randn(M, K) * 2).to(torch.float8_e4m3fn).to(device)
    b = (torch.randn(N, K) * 2).to(torch.float8_e4m3fn).to(device)
    a_scale = torch.randint(124, 130, (M, K // VEC_SIZE), dtype=torch.uint8, device=device)
    b_scale = torch.randint(124, 130, (N, K // VEC_SIZE), dtype=torch.uint8, device=device)
    return a, a_scale, b, b_scale


def benchmark_launches():
    """The tutorial's mxfp8 benchmark point (M = N = 8192, K = 8192) at its 128x256x128 block, as meta tensors
    (the tutorial runs it on Blackwell only)."""
    M = N = K = 8192
    BLOCK_M, BLOCK_N, BLOCK_K = 128, 256, 128
    rep_m, rep_n, rep_k = BLOCK_M // 128, BLOCK_N // 128, BLOCK_K // 128
    a = torch.empty(M, K, dtype=torch.float8_e4m3fn, device="meta")
    b = torch.empty(N, K, dtype=torch.float8_e4m3fn, device="meta")
    c = torch.empty(M, N, dtype=torch.float16, device="meta")
    sa = torch.empty(1, M // 128, K // 128, 2, 256, dtype=torch.uint8, device="meta")
    sb = torch.empty(1, N // 128, K // 128, 2, 256, dtype=torch.uint8, device="meta")
    args = (TensorDescriptor.from_tensor(a, [BLOCK_M, BLOCK_K]), TensorDescriptor.from_tensor(sa, [1, rep_m, rep_k, 2, 256]),
            TensorDescriptor.from_tensor(b, [BLOCK_N, BLOCK_K]), TensorDescriptor.from_tensor(sb, [1, rep_n, rep_k, 2, 256]),
            TensorDescriptor.from_tensor(c, [BLOCK_M, BLOCK_N]), M, N, K, 1, 1, 1, VEC_SIZE, BLOCK_M, BLOCK_N, BLOCK_K,
            rep_m, rep_n, rep_k, 4)
    return [(block_scaled_matmul_kernel, args, {})]


def main():
    torch.manual_seed(0)
    M, N, K = 256, 128, 256
    a, a_scale, b, b_scale = operands(M, N, K)
    scale = lambda s: torch.exp2(s.float() - 127).repeat_interleave(VEC_SIZE, dim=1)
    ref = torch.matmul(a.float() * scale(a_scale), (b.float() * scale(b_scale)).T)
    torch.testing.assert_close(block_scaled_matmul(a, a_scale, b, b_scale), ref.half(), atol=1e-1, rtol=1e-2)
    print("t10_block_scaled_matmul: matches torch")


if __name__ == "__main__":
    main()
