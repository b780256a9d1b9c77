"""Triton code as written, on the GPU: the tutorial 03 matmul (pointers advanced in the K
loop, `tests/test_induction_offsets.py`) and its index and masked forms checked against
torch at odd sizes, then timed beside Triton's own tutorial kernel (its autotune configs)
and cuBLAS at fp16 4096^3, B row-major and B = W.T (K contiguous), in interleaved launches
(`matmul_rounds.interleaved_launches`).

    TILE_TARGET=sm_90a TILE_COMPILE_ONLY=1 python3 benchmarks/triton_ports_on_device.py --compile-only
    python3 benchmarks/triton_ports_on_device.py --out DIR    # on the GPU, with that cache

Run from the repository root (the kernels are imported from tests/).
"""

from __future__ import annotations

import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.getcwd(), "tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from device_checks import DeviceChecks  # noqa: E402

import tile  # noqa: E402
from test_induction_offsets import index_matmul_kernel, masked_matmul_kernel, tutorial_matmul_kernel  # noqa: E402

SIZE = 4096
# tile's configs for the tutorial kernel (each compiled ahead of time; the fastest is reported)
TILE_CONFIGS = [
    dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, num_warps=8, num_stages=3),
    dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, num_warps=8, num_stages=3),
    dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, num_warps=4, num_stages=4),
    dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, num_warps=8, num_stages=4),
]


def tutorial_launch(kernel, a, b, c, meta):
    M, K = a.shape
    N = b.shape[1]
    grid = (tile.cdiv(M, meta["BLOCK_SIZE_M"]) * tile.cdiv(N, meta["BLOCK_SIZE_N"]),)
    return lambda: kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                c.stride(0), c.stride(1), **meta)


def masked_launch(a, b, c, bm=128, bn=128, bk=64, warps=8, stages=3):
    M, K = a.shape
    N = b.shape[1]
    grid = (tile.cdiv(M, bm), tile.cdiv(N, bn))
    return lambda: masked_matmul_kernel[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(),
                                              BM=bm, BN=bn, BK=bk, num_warps=warps, num_stages=stages)


def triton_tutorial():
    """Triton's tutorial 03 kernel and launcher, with the tutorial's CUDA autotune configs."""
    import triton
    import triton.language as tl

    configs = [triton.Config({"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": n, "BLOCK_SIZE_K": k, "GROUP_SIZE_M": 8},
                             num_stages=s, num_warps=w)
               for m, n, k, s, w in [(128, 256, 64, 3, 8), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4),
                                     (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (128, 32, 32, 4, 4),
                                     (64, 32, 32, 5, 2), (32, 64, 32, 5, 2)]]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                      BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                      GROUP_SIZE_M: tl.constexpr):
        pid = tl.program_id(axis=0)
        num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
        num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
        num_pid_in_group = GROUP_SIZE_M * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * GROUP_SIZE_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m
        offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
        offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
        offs_k = tl.arange(0, BLOCK_SIZE_K)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
            accumulator = tl.dot(a, b, accumulator)
            a_ptrs += BLOCK_SIZE_K * stride_ak
            b_ptrs += BLOCK_SIZE_K * stride_bk
        c = accumulator.to(tl.float16)
        offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        tl.store(c_ptrs, c, mask=c_mask)

    def launch(a, b, c):
        M, K = a.shape
        N = b.shape[1]
        grid = lambda META: (triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"]),)  # noqa: E731
        return lambda: matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                           c.stride(0), c.stride(1))

    return launch, matmul_kernel


def main() -> int:
    checks = DeviceChecks()
    device, check = checks.device, checks.check
    out_dir = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else None
    g = torch.Generator().manual_seed(0)

    # Correctness at odd sizes, strided B, and the benchmark size, every form.
    for M, N, K, bt in [(1000, 760, 520, False), (256, 384, 200, True), (SIZE, SIZE, SIZE, False), (SIZE, SIZE, SIZE, True)]:
        a = torch.randn(M, K, generator=g).half()
        b = (torch.randn(N, K, generator=g).half().T if bt else torch.randn(K, N, generator=g).half())
        a, b = a.to(device), b.to(device)
        want = a.float() @ b.float()
        for name, cfgs in (("pointer", TILE_CONFIGS), ("index", TILE_CONFIGS[1:2])):
            kernel = tutorial_matmul_kernel if name == "pointer" else index_matmul_kernel
            for meta in cfgs:
                c = torch.empty(M, N, dtype=torch.float16, device=device)
                tutorial_launch(kernel, a, b, c, meta)()
                check(f"tutorial 03 {name} {M}x{N}x{K}{' B^T' if bt else ''} {meta}", c.float(), want, atol=0.15, rtol=1e-2)
        if not bt:
            c = torch.empty(M, N, dtype=torch.float16, device=device)
            masked_launch(a, b, c)()
            check(f"masked pointer matmul (TMA) {M}x{N}x{K}", c.float(), want, atol=0.15, rtol=1e-2)
    if checks.compile_only:
        return 0

    from matmul_rounds import interleaved_launches, ratio_summary

    launch_triton, triton_kernel = triton_tutorial()
    a = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16)
    b = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16)
    c = torch.empty(SIZE, SIZE, device="cuda", dtype=torch.float16)
    ct = torch.empty_like(c)
    launch_triton(a, b, ct)()  # autotunes
    torch.cuda.synchronize()
    check("triton tutorial 03 4096^3", ct.float(), (a.float() @ b.float()), atol=0.15, rtol=1e-2)
    fns = {f"tile {i}": tutorial_launch(tutorial_matmul_kernel, a, b, c, m) for i, m in enumerate(TILE_CONFIGS)}
    fns["tile index form"] = tutorial_launch(index_matmul_kernel, a, b, c, TILE_CONFIGS[1])
    fns["tile masked (TMA)"] = masked_launch(a, b, c)
    fns["triton"] = launch_triton(a, b, ct)
    fns["cublas"] = lambda: torch.matmul(a, b)
    # B = W.T, an nn.Linear weight (K contiguous): tile-k-major-loads' transposed copies
    w_t = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16).T
    fns["tile W.T"] = tutorial_launch(tutorial_matmul_kernel, a, w_t, c, TILE_CONFIGS[1])
    fns["triton W.T"] = launch_triton(a, w_t, ct)
    fns["cublas W.T"] = lambda: torch.matmul(a, w_t)
    steps = interleaved_launches({k: (lambda f=f: f()) for k, f in fns.items()}, (), launches=100)
    med = {k: statistics.median(t[k] for t in steps) for k in fns}
    tflops = {k: 2 * SIZE**3 / (ms * 1e-3) / 1e12 for k, ms in med.items()}
    best = min((k for k in fns if k.startswith("tile ") and k[5:].isdigit()), key=lambda k: med[k])
    result = {
        "size": SIZE, "dtype": "float16", "median_ms": med, "tflops": tflops,
        "triton_config": str(triton_kernel.best_config), "tile_configs": {f"tile {i}": m for i, m in enumerate(TILE_CONFIGS)},
        "best_tile": best,
        "triton_over_best_tile": ratio_summary(steps, "triton", best),
        "cublas_over_best_tile": ratio_summary(steps, "cublas", best),
        "pointer_over_index_form": ratio_summary(steps, "tile 1", "tile index form"),
        "triton_over_masked_tma": ratio_summary(steps, "triton", "tile masked (TMA)"),
        "triton_over_tile_w_t": ratio_summary(steps, "triton W.T", "tile W.T"),
        "cublas_over_tile_w_t": ratio_summary(steps, "cublas W.T", "tile W.T"),
        "failed": checks.failed,
    }
    print(json.dumps(result, indent=1))
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "triton_ports.json"), "w") as f:
            json.dump(result, f, indent=1)
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
