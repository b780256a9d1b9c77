"""Triton tutorial 09, persistent matmul, as tile code.

After python/tutorials/09-persistent-matmul.py of triton-lang/triton (MIT license, in LICENSE here; Copyright
2018-2020 Philippe Tillet, 2020-2022 OpenAI): the tutorial-03 matmul with clamped, hinted
offsets; a persistent version (NUM_SMS programs walking the output tiles in a
`range(..., flatten=True)`); and a persistent version over tensor descriptors made in the
kernel, whose epilogue may store the accumulator as two halves (reshape, permute, split). The
kernels are Triton code with `tl.` spelled `tile.`, `@triton.jit` spelled `@tile.jit` and
`triton.autotune` / `triton.Config` spelled `tile.autotune` / `tile.Config`. Differs from the
tutorial: the host-descriptor TMA kernels, the cuBLAS and proton profiling and the command
line are left out; the CPU gets one autotune config per kernel (timing the CPU says nothing
of a GPU) and 4 "SMs"; `triton.set_allocator` is not called (tile needs no scratch for
in-kernel descriptors); main() checks every kernel against torch at small odd sizes (fp16;
the descriptor kernel with and without the subtiled epilogue).
"""

import torch

import tile


def is_cuda():
    return torch.cuda.is_available()


def is_hopper():
    return is_cuda() and torch.cuda.get_device_capability()[0] == 9


def num_sms():
    return torch.cuda.get_device_properties("cuda").multi_processor_count if is_cuda() else 4


def _matmul_launch_metadata(grid, kernel, args):
    ret = {}
    M, N, K = args["M"], args["N"], args["K"]
    ret["name"] = f"{kernel.name} [M={M}, N={N}, K={K}]"
    bytes_per_elem = args["c_ptr"].element_size()
    ret[f"flops{bytes_per_elem * 8}"] = 2. * M * N * K
    ret["bytes"] = bytes_per_elem * (M * K + N * K + M * N)
    return ret


def matmul_get_configs(pre_hook=None):
    if not is_cuda():
        return [tile.Config({'BLOCK_SIZE_M': 32, 'BLOCK_SIZE_N': 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 2},
                            num_stages=1, num_warps=4, pre_hook=pre_hook)]
    return [
        tile.Config({'BLOCK_SIZE_M': BM, 'BLOCK_SIZE_N': BN, "BLOCK_SIZE_K" : BK, "GROUP_SIZE_M" : 8}, num_stages=s,
                    num_warps=w, pre_hook=pre_hook)  #
        for BM in [128]  #
        for BN in [128, 256]  #
        for BK in [64, 128]  #
        for s in ([2, 3, 4])  #
        for w in [4, 8]  #
    ]


@tile.autotune(
    configs=matmul_get_configs(),
    key=["M", "N", "K"],
)
@tile.jit(launch_metadata=_matmul_launch_metadata)
def matmul_kernel(a_ptr, b_ptr, c_ptr,  #
                  M, N, K,  #
                  stride_am, stride_ak,  #
                  stride_bk, stride_bn,  #
                  stride_cm, stride_cn,  #
                  BLOCK_SIZE_M: tile.constexpr,  #
                  BLOCK_SIZE_N: tile.constexpr,  #
                  BLOCK_SIZE_K: tile.constexpr,  #
                  GROUP_SIZE_M: tile.constexpr,  #
                  ):
    pid = tile.program_id(axis=0)
    num_pid_m = tile.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tile.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (pid % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    start_m = pid_m * BLOCK_SIZE_M
    start_n = pid_n * BLOCK_SIZE_N

    offs_am = start_m + tile.arange(0, BLOCK_SIZE_M)
    offs_bn = start_n + tile.arange(0, BLOCK_SIZE_N)
    offs_am = tile.where(offs_am < M, offs_am, 0)
    offs_bn = tile.where(offs_bn < N, offs_bn, 0)

    offs_am = tile.max_contiguous(tile.multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M)
    offs_bn = tile.max_contiguous(tile.multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N)
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

    if (c_ptr.dtype.element_ty == tile.float8e4nv):
        c = accumulator.to(tile.float8e4nv)
    else:
        c = accumulator.to(tile.float16)

    offs_cm = pid_m * BLOCK_SIZE_M + tile.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tile.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tile.store(c_ptrs, c, mask=c_mask)


def matmul(a, b):
    assert a.shape[1] == b.shape[0], "Incompatible dimensions"
    assert a.dtype == b.dtype, "Incompatible dtypes"
    M, K = a.shape
    K, N = b.shape
    dtype = a.dtype

    c = torch.empty((M, N), device=a.device, dtype=dtype)
    grid = lambda META: (tile.cdiv(M, META["BLOCK_SIZE_M"]) * tile.cdiv(N, META["BLOCK_SIZE_N"]), )
    matmul_kernel[grid](
        a, b, c,  #
        M, N, K,  #
        a.stride(0), a.stride(1),  #
        b.stride(0), b.stride(1),  #
        c.stride(0), c.stride(1),  #
    )
    return c


@tile.jit
def _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@tile.autotune(
    configs=matmul_get_configs(),
    key=["M", "N", "K"],
)
@tile.jit(launch_metadata=_matmul_launch_metadata)
def matmul_kernel_persistent(a_ptr, b_ptr, c_ptr,  #
                             M, N, K,  #
                             stride_am, stride_ak,  #
                             stride_bk, stride_bn,  #
                             stride_cm, stride_cn,  #
                             BLOCK_SIZE_M: tile.constexpr,  #
                             BLOCK_SIZE_N: tile.constexpr,  #
                             BLOCK_SIZE_K: tile.constexpr,  #
                             GROUP_SIZE_M: tile.constexpr,  #
                             NUM_SMS: tile.constexpr,  #
                             ):
    start_pid = tile.program_id(axis=0)
    num_pid_m = tile.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tile.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tile.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n

    # the epilogue's own tile counter (the tutorial's workaround for Blackwell's pipeliner)
    tile_id_c = start_pid - NUM_SMS

    offs_k_for_mask = tile.arange(0, BLOCK_SIZE_K)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n

    for tile_id in tile.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        start_m = pid_m * BLOCK_SIZE_M
        start_n = pid_n * BLOCK_SIZE_N
        offs_am = start_m + tile.arange(0, BLOCK_SIZE_M)
        offs_bn = start_n + tile.arange(0, BLOCK_SIZE_N)
        offs_am = tile.where(offs_am < M, offs_am, 0)
        offs_bn = tile.where(offs_bn < N, offs_bn, 0)
        offs_am = tile.max_contiguous(tile.multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M)
        offs_bn = tile.max_contiguous(tile.multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N)

        accumulator = tile.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tile.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K + tile.arange(0, BLOCK_SIZE_K)
            a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
            b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

            a = tile.load(a_ptrs, mask=offs_k_for_mask[None, :] < K - ki * BLOCK_SIZE_K, other=0.0)
            b = tile.load(b_ptrs, mask=offs_k_for_mask[:, None] < K - ki * BLOCK_SIZE_K, other=0.0)
            accumulator = tile.dot(a, b, accumulator)

        tile_id_c += NUM_SMS
        pid_m, pid_n = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_cm = pid_m * BLOCK_SIZE_M + tile.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tile.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        if (c_ptr.dtype.element_ty == tile.float8e4nv):
            c = accumulator.to(tile.float8e4nv)
        else:
            c = accumulator.to(tile.float16)
        tile.store(c_ptrs, c, mask=c_mask)


def matmul_persistent(a, b):
    assert a.shape[1] == b.shape[0], "Incompatible dimensions"
    assert a.dtype == b.dtype, "Incompatible dtypes"
    NUM_SMS = num_sms()
    M, K = a.shape
    K, N = b.shape
    dtype = a.dtype
    c = torch.empty((M, N), device=a.device, dtype=dtype)
    grid = lambda META: (min(NUM_SMS, tile.cdiv(M, META["BLOCK_SIZE_M"]) * tile.cdiv(N, META["BLOCK_SIZE_N"])), )
    matmul_kernel_persistent[grid](
        a, b, c,  #
        M, N, K,  #
        a.stride(0), a.stride(1),  #
        b.stride(0), b.stride(1),  #
        c.stride(0), c.stride(1),  #
        NUM_SMS=NUM_SMS,  #
    )
    return c


def matmul_descriptor_persistent_get_configs():
    return [
        tile.Config(dict(c.kwargs, EPILOGUE_SUBTILE=subtile), num_stages=c.num_stages, num_warps=c.num_warps)
        for c in matmul_get_configs()
        for subtile in ([True, False] if is_cuda() else [True])
    ]


@tile.autotune(
    configs=matmul_descriptor_persistent_get_configs(),
    key=["M", "N", "K", "WARP_SPECIALIZE", "FLATTEN"],
)
@tile.jit(launch_metadata=_matmul_launch_metadata)
def matmul_kernel_descriptor_persistent(
    a_ptr,
    b_ptr,
    c_ptr,  #
    M,
    N,
    K,  #
    BLOCK_SIZE_M: tile.constexpr,  #
    BLOCK_SIZE_N: tile.constexpr,  #
    BLOCK_SIZE_K: tile.constexpr,  #
    GROUP_SIZE_M: tile.constexpr,  #
    EPILOGUE_SUBTILE: tile.constexpr,  #
    NUM_SMS: tile.constexpr,  #
    WARP_SPECIALIZE: tile.constexpr,  #
    FLATTEN: tile.constexpr,
):
    # b is (N, K), K-major: the kernel multiplies by its transpose
    dtype = c_ptr.dtype.element_ty
    start_pid = tile.program_id(axis=0)
    num_pid_m = tile.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tile.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tile.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n

    a_desc = tile.make_tensor_descriptor(
        a_ptr,
        shape=[M, K],
        strides=[K, 1],
        block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_K],
    )
    b_desc = tile.make_tensor_descriptor(
        b_ptr,
        shape=[N, K],
        strides=[K, 1],
        block_shape=[BLOCK_SIZE_N, BLOCK_SIZE_K],
    )
    c_desc = tile.make_tensor_descriptor(
        c_ptr,
        shape=[M, N],
        strides=[N, 1],
        block_shape=[
            BLOCK_SIZE_M,
            BLOCK_SIZE_N if not EPILOGUE_SUBTILE else BLOCK_SIZE_N // 2,
        ],
    )

    tile_id_c = start_pid - NUM_SMS
    num_pid_in_group = GROUP_SIZE_M * num_pid_n

    for tile_id in tile.range(start_pid, num_tiles, NUM_SMS, flatten=FLATTEN, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_am = pid_m * BLOCK_SIZE_M
        offs_bn = pid_n * BLOCK_SIZE_N

        accumulator = tile.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tile.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_bn, offs_k])
            accumulator = tile.dot(a, b.T, accumulator)

        tile_id_c += NUM_SMS
        pid_m, pid_n = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_cm = pid_m * BLOCK_SIZE_M
        offs_cn = pid_n * BLOCK_SIZE_N

        if EPILOGUE_SUBTILE:
            acc = tile.reshape(accumulator, (BLOCK_SIZE_M, 2, BLOCK_SIZE_N // 2))
            acc = tile.permute(acc, (0, 2, 1))
            acc0, acc1 = tile.split(acc)
            c0 = acc0.to(dtype)
            c_desc.store([offs_cm, offs_cn], c0)
            c1 = acc1.to(dtype)
            c_desc.store([offs_cm, offs_cn + BLOCK_SIZE_N // 2], c1)
        else:
            c = accumulator.to(dtype)
            c_desc.store([offs_cm, offs_cn], c)


def matmul_descriptor_persistent(a, b, warp_specialize: bool):
    # b: (N, K)
    assert a.shape[1] == b.shape[1], "Incompatible dimensions"
    assert a.dtype == b.dtype, "Incompatible dtypes"
    M, K = a.shape
    N, K = b.shape
    dtype = a.dtype
    c = torch.empty((M, N), device=a.device, dtype=dtype)
    NUM_SMS = num_sms()
    # Hopper's warp specialization does not take a flattened loop
    flatten = False if (warp_specialize and is_hopper()) else True
    grid = lambda META: (min(NUM_SMS, tile.cdiv(M, META["BLOCK_SIZE_M"]) * tile.cdiv(N, META["BLOCK_SIZE_N"])), )
    matmul_kernel_descriptor_persistent[grid](
        a, b, c,  #
        M, N, K,  #
        NUM_SMS=NUM_SMS,  #
        WARP_SPECIALIZE=warp_specialize,  #
        FLATTEN=flatten,
    )
    return c


def benchmark_launches(kernels=("matmul", "persistent", "descriptor")):
    """The tutorial's default point (M = N = 8192, K = 512, fp16) on 132 SMs, each kernel at its
    first CUDA config (the descriptor kernel with the subtiled epilogue), as meta tensors."""
    M = N = 8192
    K = 512
    a = torch.empty(M, K, dtype=torch.float16, device="meta")
    b = torch.empty(K, N, dtype=torch.float16, device="meta")
    c = torch.empty(M, N, dtype=torch.float16, device="meta")
    meta = dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, num_stages=2, num_warps=4)
    launches = []
    strides = (*a.stride(), *b.stride(), *c.stride())
    if "matmul" in kernels:
        launches.append((matmul_kernel, (a, b, c, M, N, K, *strides), meta))
    if "persistent" in kernels:
        launches.append((matmul_kernel_persistent, (a, b, c, M, N, K, *strides), dict(meta, NUM_SMS=132)))
    if "descriptor" in kernels:
        launches.append((matmul_kernel_descriptor_persistent, (a, b.T.contiguous(), c, M, N, K),
                         dict(meta, EPILOGUE_SUBTILE=True, NUM_SMS=132, WARP_SPECIALIZE=False, FLATTEN=True)))
    return launches


def benchmark_launches_matmul():
    return benchmark_launches(("matmul", ))


def check(kernels=("matmul", "persistent", "descriptor")):
    torch.manual_seed(0)
    for M, N, K in ((200, 136, 96), (64, 72, 56)):
        a = torch.randn((M, K), dtype=torch.float16)
        b = torch.randn((K, N), dtype=torch.float16)
        ref = torch.matmul(a.float(), b.float()).half()
        if "matmul" in kernels:
            torch.testing.assert_close(matmul(a, b), ref, atol=1e-2, rtol=1e-2)
        if "persistent" in kernels:
            torch.testing.assert_close(matmul_persistent(a, b), ref, atol=1e-2, rtol=1e-2)
        if "descriptor" in kernels:
            out = matmul_descriptor_persistent(a, b.T.contiguous(), warp_specialize=False)
            torch.testing.assert_close(out, ref, atol=1e-2, rtol=1e-2)


def check_matmul():
    check(("matmul", ))


def main():
    check()
    print("t09_persistent_matmul: matches torch")


if __name__ == "__main__":
    main()
