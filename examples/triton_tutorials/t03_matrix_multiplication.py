"""Triton tutorial 03, matrix multiplication, as tile code.

After python/tutorials/03-matrix-multiplication.py of triton-lang/triton (MIT license, in LICENSE here;
Copyright 2018-2020 Philippe Tillet, 2020-2022 OpenAI): grouped program ordering, pointers
advanced along K, K masked, an optional leaky_relu epilogue in a helper, autotuned over the
tutorial's CUDA configs; fp16 and (on the GPU) fp8 e5m2 inputs. The kernels are Triton code
with `tl.` spelled `tile.`, `@triton.jit` spelled `@tile.jit` and `triton.autotune` /
`triton.Config` spelled `tile.autotune` / `tile.Config`. Differs from the tutorial: on the
CPU (no GPU) the autotuner gets one config (timing the CPU says nothing of a GPU, and each
config is a compile); the AMD configs are left out; main() checks at small odd sizes, the
fp8 inputs too, and the plots and triton.testing benchmarks are left out.
"""

import torch

import tile


def is_cuda():
    return torch.cuda.is_available()


def get_cuda_autotune_config():
    return [
        tile.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 256, 'BLOCK_SIZE_K': 64, 'GROUP_SIZE_M': 8}, num_stages=3,
                    num_warps=8),
        tile.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 256, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=4,
                    num_warps=4),
        tile.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=4,
                    num_warps=4),
        tile.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 64, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=4,
                    num_warps=4),
        tile.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=4,
                    num_warps=4),
        tile.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 32, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=4,
                    num_warps=4),
        tile.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 32, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=5,
                    num_warps=2),
        tile.Config({'BLOCK_SIZE_M': 32, 'BLOCK_SIZE_N': 64, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=5,
                    num_warps=2),
        # for fp8 inputs
        tile.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 256, 'BLOCK_SIZE_K': 128, 'GROUP_SIZE_M': 8}, num_stages=3,
                    num_warps=8),
        tile.Config({'BLOCK_SIZE_M': 256, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 128, 'GROUP_SIZE_M': 8}, num_stages=3,
                    num_warps=8),
        tile.Config({'BLOCK_SIZE_M': 256, 'BLOCK_SIZE_N': 64, 'BLOCK_SIZE_K': 128, 'GROUP_SIZE_M': 8}, num_stages=4,
                    num_warps=4),
        tile.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 256, 'BLOCK_SIZE_K': 128, 'GROUP_SIZE_M': 8}, num_stages=4,
                    num_warps=4),
        tile.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 128, 'GROUP_SIZE_M': 8}, num_stages=4,
                    num_warps=4),
        tile.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 64, 'BLOCK_SIZE_K': 64, 'GROUP_SIZE_M': 8}, num_stages=4,
                    num_warps=4),
        tile.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 64, 'GROUP_SIZE_M': 8}, num_stages=4,
                    num_warps=4),
        tile.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 32, 'BLOCK_SIZE_K': 64, 'GROUP_SIZE_M': 8}, num_stages=4,
                    num_warps=4),
    ]


def get_cpu_autotune_config():
    return [tile.Config({'BLOCK_SIZE_M': 32, 'BLOCK_SIZE_N': 64, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 2}, num_stages=1,
                        num_warps=4)]


def get_autotune_config():
    return get_cuda_autotune_config() if is_cuda() else get_cpu_autotune_config()


@tile.autotune(
    configs=get_autotune_config(),
    key=['M', 'N', 'K'],
)
@tile.jit
def matmul_kernel(
        a_ptr, b_ptr, c_ptr,
        M, N, K,
        stride_am, stride_ak,  #
        stride_bk, stride_bn,  #
        stride_cm, stride_cn,
        BLOCK_SIZE_M: tile.constexpr, BLOCK_SIZE_N: tile.constexpr, BLOCK_SIZE_K: tile.constexpr,  #
        GROUP_SIZE_M: tile.constexpr,  #
        ACTIVATION: tile.constexpr  #
):
    """C = A x B, A (M, K), B (K, N), C (M, N); program ids in groups of GROUP_SIZE_M block rows."""
    pid = tile.program_id(axis=0)
    num_pid_m = tile.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tile.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
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
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(tile.float16)

    offs_cm = pid_m * BLOCK_SIZE_M + tile.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tile.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tile.store(c_ptrs, c, mask=c_mask)


@tile.jit
def leaky_relu(x):
    return tile.where(x >= 0, x, 0.01 * x)


def matmul(a, b, activation=""):
    assert a.shape[1] == b.shape[0], "Incompatible dimensions"
    assert a.is_contiguous(), "Matrix A must be contiguous"
    M, K = a.shape
    K, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = lambda META: (tile.cdiv(M, META['BLOCK_SIZE_M']) * tile.cdiv(N, META['BLOCK_SIZE_N']), )
    matmul_kernel[grid](
        a, b, c,  #
        M, N, K,  #
        a.stride(0), a.stride(1),  #
        b.stride(0), b.stride(1),  #
        c.stride(0), c.stride(1),  #
        ACTIVATION=activation  #
    )
    return c


def benchmark_launches(dtypes=(torch.float16, torch.float8_e5m2)):
    """The tutorial benchmark's largest size (M = N = K = 4096), fp16 and fp8 e5m2 (B column-major), at the
    first CUDA config and at the first fp8 one, as meta tensors."""
    size = 4096
    launches = []
    for dtype in dtypes:
        config = get_cuda_autotune_config()[0 if dtype == torch.float16 else 8]
        a = torch.empty(size, size, dtype=dtype, device="meta")
        b = torch.empty(size, size, dtype=dtype, device="meta")
        if dtype != torch.float16:
            b = b.T
        c = torch.empty(size, size, dtype=torch.float16, device="meta")
        args = (a, b, c, size, size, size, *a.stride(), *b.stride(), *c.stride())
        launches.append((matmul_kernel, args, dict(config.kwargs, ACTIVATION="", num_warps=config.num_warps,
                                                   num_stages=config.num_stages)))
    return launches


def benchmark_launches_fp16():
    return benchmark_launches((torch.float16, ))


def check_fp16():
    torch.manual_seed(0)
    for (M, N, K), activation in (((96, 80, 64), ""), ((77, 50, 45), ""), ((64, 72, 100), "leaky_relu")):
        a = torch.randn((M, K), dtype=torch.float16)
        b = torch.randn((K, N), dtype=torch.float16)
        ref = torch.matmul(a.float(), b.float())
        if activation == "leaky_relu":
            ref = torch.nn.functional.leaky_relu(ref, 0.01)
        torch.testing.assert_close(matmul(a, b, activation), ref.half(), atol=1e-2, rtol=1e-2)


def check_fp8():
    torch.manual_seed(0)
    a = torch.randn((64, 96), dtype=torch.float16).to(torch.float8_e5m2)
    b = torch.randn((80, 96), dtype=torch.float16).T.to(torch.float8_e5m2)
    ref = torch.matmul(a.half(), b.half())
    torch.testing.assert_close(matmul(a, b), ref, atol=0.125, rtol=0)


def main():
    check_fp16()
    check_fp8()
    print("t03_matrix_multiplication: matches torch")


if __name__ == "__main__":
    main()
