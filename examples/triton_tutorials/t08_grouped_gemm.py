"""Triton tutorial 08, grouped GEMM, as tile code.

After python/tutorials/08-grouped-gemm.py of triton-lang/triton (MIT license, in LICENSE here; the tutorial's
own notice: Copyright (c) 2023 - 2025 NVIDIA Corporation & Affiliates, MIT terms): a fixed
number of programs walks the tiles of a group of GEMMs, whose matrices it reads through
device arrays of pointers (an int64 loaded and cast with `.to(tl.pointer_type(...))`); a
second kernel does the same through tensor descriptors made in the kernel. The kernels are
Triton code with `tl.` spelled `tile.`, `@triton.jit` spelled `@tile.jit` and
`triton.autotune` / `triton.Config` spelled `tile.autotune` / `tile.Config`. Differs from the
tutorial: the CPU gets one autotune config per kernel (timing the CPU says nothing of a GPU),
the descriptor kernel runs on the CPU too and without `triton.set_allocator` (tile needs no
scratch allocation for in-kernel descriptors), main() checks at small sizes (multiples of
the blocks: the kernels assume whole tiles), and the benchmarks are left out.
"""

import torch

import tile


def is_cuda():
    return torch.cuda.is_available()


def supports_tma():
    return is_cuda() and torch.cuda.get_device_capability()[0] >= 9


def num_sms():
    if is_cuda():
        return torch.cuda.get_device_properties("cuda").multi_processor_count
    return 148


def get_configs():
    if not is_cuda():
        return [tile.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 64, 'BLOCK_SIZE_K': 32, 'NUM_SM': 4})]
    return [
        tile.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 32, 'NUM_SM': 84}),
        tile.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 32, 'NUM_SM': 128}),
        tile.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 64, 'BLOCK_SIZE_K': 32, 'NUM_SM': 84}),
        tile.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 64, 'BLOCK_SIZE_K': 32, 'NUM_SM': 128}),
        tile.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 64, 'NUM_SM': num_sms()}),
        tile.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 64, 'NUM_SM': num_sms()}),
    ]


@tile.autotune(
    configs=get_configs(),
    key=['group_size'],
)
@tile.jit
def grouped_matmul_kernel(
    group_a_ptrs,
    group_b_ptrs,
    group_c_ptrs,
    # [group_size, 3]: M, N, K of each gemm
    group_gemm_sizes,
    # [group_size, 3]: lda, ldb, ldc of each gemm
    g_lds,
    group_size,
    NUM_SM: tile.constexpr,
    BLOCK_SIZE_M: tile.constexpr,
    BLOCK_SIZE_N: tile.constexpr,
    BLOCK_SIZE_K: tile.constexpr,
):
    tile_idx = tile.program_id(0)
    last_problem_end = 0
    for g in range(group_size):
        gm = tile.load(group_gemm_sizes + g * 3)
        gn = tile.load(group_gemm_sizes + g * 3 + 1)
        gk = tile.load(group_gemm_sizes + g * 3 + 2)
        num_m_tiles = tile.cdiv(gm, BLOCK_SIZE_M)
        num_n_tiles = tile.cdiv(gn, BLOCK_SIZE_N)
        num_tiles = num_m_tiles * num_n_tiles
        # this program's tiles of gemm g, NUM_SM apart
        while (tile_idx >= last_problem_end and tile_idx < last_problem_end + num_tiles):
            k = gk
            lda = tile.load(g_lds + g * 3)
            ldb = tile.load(g_lds + g * 3 + 1)
            ldc = tile.load(g_lds + g * 3 + 2)
            a_ptr = tile.load(group_a_ptrs + g).to(tile.pointer_type(tile.float16))
            b_ptr = tile.load(group_b_ptrs + g).to(tile.pointer_type(tile.float16))
            c_ptr = tile.load(group_c_ptrs + g).to(tile.pointer_type(tile.float16))
            tile_idx_in_gemm = tile_idx - last_problem_end
            tile_m_idx = tile_idx_in_gemm // num_n_tiles
            tile_n_idx = tile_idx_in_gemm % num_n_tiles

            offs_am = tile_m_idx * BLOCK_SIZE_M + tile.arange(0, BLOCK_SIZE_M)
            offs_bn = tile_n_idx * BLOCK_SIZE_N + tile.arange(0, BLOCK_SIZE_N)
            offs_k = tile.arange(0, BLOCK_SIZE_K)
            a_ptrs = a_ptr + offs_am[:, None] * lda + offs_k[None, :]
            b_ptrs = b_ptr + offs_k[:, None] * ldb + offs_bn[None, :]
            accumulator = tile.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tile.float32)
            for kk in range(0, tile.cdiv(k, BLOCK_SIZE_K)):
                tile.multiple_of(a_ptrs, [16, 16])
                tile.multiple_of(b_ptrs, [16, 16])
                # whole tiles only
                a = tile.load(a_ptrs)
                b = tile.load(b_ptrs)
                accumulator += tile.dot(a, b)
                a_ptrs += BLOCK_SIZE_K
                b_ptrs += BLOCK_SIZE_K * ldb
            c = accumulator.to(tile.float16)

            offs_cm = tile_m_idx * BLOCK_SIZE_M + tile.arange(0, BLOCK_SIZE_M)
            offs_cn = tile_n_idx * BLOCK_SIZE_N + tile.arange(0, BLOCK_SIZE_N)
            c_ptrs = c_ptr + ldc * offs_cm[:, None] + offs_cn[None, :]
            tile.store(c_ptrs, c)
            tile_idx += NUM_SM

        last_problem_end = last_problem_end + num_tiles


def group_arguments(group_A, group_B, b_transposed=False):
    """The device arrays of pointers, sizes and leading dimensions, and the outputs."""
    A_addrs, B_addrs, C_addrs, g_sizes, g_lds, group_C = [], [], [], [], [], []
    for A, B in zip(group_A, group_B):
        M, K = A.shape
        N = B.shape[0] if b_transposed else B.shape[1]
        C = torch.empty((M, N), device=A.device, dtype=A.dtype)
        group_C.append(C)
        A_addrs.append(A.data_ptr())
        B_addrs.append(B.data_ptr())
        C_addrs.append(C.data_ptr())
        g_sizes += [M, N, K]
        g_lds += [A.stride(0), B.stride(0), C.stride(0)]
    device = group_A[0].device
    d_a_ptrs = torch.tensor(A_addrs, device=device)
    d_b_ptrs = torch.tensor(B_addrs, device=device)
    d_c_ptrs = torch.tensor(C_addrs, device=device)
    d_g_sizes = torch.tensor(g_sizes, dtype=torch.int32, device=device)
    d_g_lds = torch.tensor(g_lds, dtype=torch.int32, device=device)
    return (d_a_ptrs, d_b_ptrs, d_c_ptrs, d_g_sizes, d_g_lds), group_C


def group_gemm_fn(group_A, group_B):
    assert len(group_A) == len(group_B)
    group_size = len(group_A)
    args, group_C = group_arguments(group_A, group_B)
    grid = lambda META: (META['NUM_SM'], )
    grouped_matmul_kernel[grid](*args, group_size)
    return group_C


def get_tma_configs():
    if not is_cuda():
        return [tile.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 64, 'BLOCK_SIZE_K': 32}, num_stages=1, num_warps=4)]
    return [
        tile.Config({'BLOCK_SIZE_M': BM, 'BLOCK_SIZE_N': BN, 'BLOCK_SIZE_K' : BK}, num_stages=s, num_warps=w) \
        for BM in [128]\
        for BN in [128, 256]\
        for BK in [64, 128]\
        for s in ([3, 4])\
        for w in [4, 8]\
    ]


@tile.autotune(
    get_tma_configs(),
    key=['group_a_ptrs', 'group_b_ptrs', 'group_c_ptrs', 'group_size'],
)
@tile.jit
def grouped_matmul_tma_kernel(
    group_a_ptrs,
    group_b_ptrs,
    group_c_ptrs,
    group_gemm_sizes,
    g_lds,
    group_size,
    NUM_SM: tile.constexpr,
    BLOCK_SIZE_M: tile.constexpr,
    BLOCK_SIZE_N: tile.constexpr,
    BLOCK_SIZE_K: tile.constexpr,
    # fp8 (e4m3) matrices, else fp16
    FP8: tile.constexpr,
):
    dtype = tile.float8e4nv if FP8 else tile.float16
    tile_idx = tile.program_id(0)
    last_problem_end = 0
    for g in range(group_size):
        gm = tile.load(group_gemm_sizes + g * 3)
        gn = tile.load(group_gemm_sizes + g * 3 + 1)
        gk = tile.load(group_gemm_sizes + g * 3 + 2)
        num_m_tiles = tile.cdiv(gm, BLOCK_SIZE_M)
        num_n_tiles = tile.cdiv(gn, BLOCK_SIZE_N)
        num_tiles = num_m_tiles * num_n_tiles
        if tile_idx >= last_problem_end and tile_idx < last_problem_end + num_tiles:
            lda = tile.load(g_lds + g * 3)
            ldb = tile.load(g_lds + g * 3 + 1)
            ldc = tile.load(g_lds + g * 3 + 2)

            a_ptr = tile.load(group_a_ptrs + g).to(tile.pointer_type(dtype))
            b_ptr = tile.load(group_b_ptrs + g).to(tile.pointer_type(dtype))
            c_ptr = tile.load(group_c_ptrs + g).to(tile.pointer_type(dtype))

            a_desc = tile.make_tensor_descriptor(
                a_ptr,
                shape=[gm, gk],
                strides=[lda, 1],
                block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_K],
            )

            b_desc = tile.make_tensor_descriptor(
                b_ptr,
                shape=[gn, gk],
                strides=[ldb, 1],
                block_shape=[BLOCK_SIZE_N, BLOCK_SIZE_K],
            )
            c_desc = tile.make_tensor_descriptor(
                c_ptr,
                shape=[gm, gn],
                strides=[ldc, 1],
                block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_N],
            )

            while (tile_idx >= last_problem_end and tile_idx < last_problem_end + num_tiles):
                k = gk
                tile_idx_in_gemm = tile_idx - last_problem_end
                tile_m_idx = tile_idx_in_gemm // num_n_tiles
                tile_n_idx = tile_idx_in_gemm % num_n_tiles

                offs_am = tile_m_idx * BLOCK_SIZE_M
                offs_bn = tile_n_idx * BLOCK_SIZE_N

                accumulator = tile.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tile.float32)
                for kk in range(0, tile.cdiv(k, BLOCK_SIZE_K)):
                    a = a_desc.load([offs_am, kk * BLOCK_SIZE_K])
                    b = b_desc.load([offs_bn, kk * BLOCK_SIZE_K])
                    accumulator += tile.dot(a, b.T)

                offs_cm = tile_m_idx * BLOCK_SIZE_M
                offs_cn = tile_n_idx * BLOCK_SIZE_N

                c = accumulator.to(dtype)
                c_desc.store([offs_cm, offs_cn], c)
                tile_idx += NUM_SM

        last_problem_end = last_problem_end + num_tiles


def group_gemm_tma_fn(group_A, group_B):
    assert len(group_A) == len(group_B)
    group_size = len(group_A)
    args, group_C = group_arguments(group_A, group_B, b_transposed=True)
    grid = lambda META: (META['NUM_SM'], )
    grouped_matmul_tma_kernel[grid](*args, group_size, FP8=torch.float8_e4m3fn == group_A[0].dtype,
                                    NUM_SM=num_sms() if is_cuda() else 4)
    return group_C


def benchmark_launches(kernels=("pointers", "descriptors")):
    """The benchmark's largest point (4 gemms of N=1024) for both kernels, at their configs with
    BLOCK_SIZE_K=64 (the last of the first kernel's, on 132 SMs, and the second's first with 8
    warps: at 4, its operands' cp.async copies and a 128 x 128 accumulator spill, where Triton's
    in-kernel TMA descriptors need no registers for addresses), as meta tensors."""
    group = 4
    ptrs = [torch.empty(group, dtype=torch.int64, device="meta") for _ in range(3)]
    sizes, lds = (torch.empty(group * 3, dtype=torch.int32, device="meta") for _ in range(2))
    launches = []
    if "pointers" in kernels:
        launches.append((grouped_matmul_kernel, (*ptrs, sizes, lds, group),
                         dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, NUM_SM=132)))
    if "descriptors" in kernels:
        launches.append((grouped_matmul_tma_kernel, (*ptrs, sizes, lds, group),
                         dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, NUM_SM=132, FP8=False,
                              num_stages=3, num_warps=8)))
    return launches


def benchmark_launches_pointers():
    return benchmark_launches(("pointers", ))


def check(tma):
    torch.manual_seed(0)
    group_m = [256, 128, 64, 192]
    group_n = [128, 64, 192, 64]
    group_k = [64, 128, 32, 96]
    group_A, group_B, group_B_T = [], [], []
    for M, N, K in zip(group_m, group_n, group_k):
        A = torch.rand((M, K), dtype=torch.float16)
        B = torch.rand((K, N), dtype=torch.float16)
        group_A.append(A)
        group_B.append(B)
        group_B_T.append(B.T.contiguous())
    ref_out = [torch.matmul(a.float(), b.float()).half() for a, b in zip(group_A, group_B)]
    tri_out = group_gemm_tma_fn(group_A, group_B_T) if tma else group_gemm_fn(group_A, group_B)
    for ref, tri in zip(ref_out, tri_out):
        torch.testing.assert_close(tri, ref, atol=1e-2, rtol=1e-3)


def check_pointers():
    check(tma=False)


def main():
    check(tma=False)
    check(tma=True)
    print("t08_grouped_gemm: matches torch")


if __name__ == "__main__":
    main()
