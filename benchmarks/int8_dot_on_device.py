"""The GPU half of tests/test_int8_dot.py: int8 dots (wgmma `m64nNk32.s32.s8.s8` on sm_90a,
`mma.sync.m16n8k32.s32.s8.s8` where wgmma cannot take the tile), vLLM's W8A8 kernel at its
tile shapes, and the f16 accumulator, built on the CPU machine for sm_90a, then run on the
GPU and checked against torch (int8 products exactly against an int64 matmul).

    bash benchmarks/checks_for_device.sh int8_dot_on_device     # here: builds it with the others
    bash benchmarks/checks_on_device.sh int8_dot_on_device      # on the GPU, with that cache
    python3 benchmarks/int8_dot_on_device.py --cpu              # the same checks on the CPU target

Run from the repository root (the kernels are imported from tests/).
"""

from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.getcwd(), "tests"))
sys.path.insert(0, os.path.join(os.getcwd(), "examples"))  # (test_library_kernels imports fused_moe)

from device_checks import DeviceChecks  # noqa: E402

from test_int8_dot import (_int8, _reference, f16_accumulator_kernel, int8_matmul_kernel,  # noqa: E402
                           int8_pointer_increments_kernel)
from test_library_kernels import scaled_mm_kernel  # noqa: E402

import tile  # noqa: E402

# (block M, N, K, warps, stages): wgmma at 128 x 128 on 4 and 8 warps, and 64 x 64; mma.sync at M = 16
CONFIGS = [(128, 128, 64, 4, 3), (128, 128, 128, 8, 3), (64, 64, 64, 4, 2), (16, 64, 64, 4, 2)]
VLLM_BLOCKS = [(16, 64, 128), (32, 64, 128), (64, 64, 128), (64, 128, 128), (128, 128, 128)]


def main() -> int:
    checks = DeviceChecks()
    device, check = checks.device, checks.check
    g = torch.Generator().manual_seed(0)
    extremes = [-128] * 14 + [127, 1]  # (sums past 2^24, odd ones among them)
    for M, N, K, values in ((300, 260, 520, None), (200, 130, 2048, extremes)):
        for b_k_major in (True, False):
            a, b = _int8((M, K), values=values, generator=g), _int8((K, N), b_k_major, values=values, generator=g)
            want = _reference(a, b).to(torch.int32)
            a, b = a.to(device), b.to(device) if not b_k_major else b.T.contiguous().to(device).T
            for kernel in (int8_matmul_kernel, int8_pointer_increments_kernel):
                for BM, BN, BK, warps, stages in CONFIGS:
                    c = torch.full((M, N), -7, dtype=torch.int32, device=device)
                    kernel[(tile.cdiv(M, BM), tile.cdiv(N, BN))](
                        a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK,
                        num_warps=warps, num_stages=stages)
                    name = f"{kernel.name} {M}x{N}x{K} b {'K' if b_k_major else 'N'}-major {BM}x{BN}x{BK}/{warps}w"
                    check(name, c, want, rtol=0, atol=0)

    M, N, K = 333, 520, 700
    a, w = _int8((M, K), generator=g), _int8((N, K), generator=g)
    scale_a, scale_b = torch.rand(M, 1, generator=g) * 0.01, torch.rand(N, 1, generator=g) * 0.01
    bias = torch.randn(N, generator=g).to(torch.bfloat16)
    want = (scale_b.T * (scale_a * _reference(a, w.T).float())).to(torch.bfloat16) + bias
    a, w, scale_a, scale_b, bias = (x.to(device) for x in (a, w, scale_a, scale_b, bias))
    for BM, BN, BK in VLLM_BLOCKS:
        c = torch.empty(M, N, dtype=torch.bfloat16, device=device)
        scaled_mm_kernel[(tile.cdiv(M, BM) * tile.cdiv(N, BN),)](
            a, w.T, scale_a, scale_b, c, bias, M, N, K, *a.stride(), *w.T.stride(), *c.stride(),
            ACCUMULATOR_DTYPE=tile.int32, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK, BLOCK_SIZE_SCALE_A=BM,
            BLOCK_SIZE_SCALE_B=BN, num_warps=4, num_stages=3)
        # (the int32 sums exact: the epilogue's f32 products may differ in the last bit, fma or not)
        check(f"vLLM scaled_mm {BM}x{BN}x{BK}", c.float(), want.float(), rtol=2 ** -7, atol=1e-3)

    M, N, K, BK = 256, 256, 512, 64
    a, b = torch.randn(M, K, generator=g).half(), torch.randn(K, N, generator=g).half()
    want = torch.zeros(M, N, dtype=torch.float16)
    for k in range(0, K, BK):
        want = (want.float() + a[:, k:k + BK].float() @ b[k:k + BK].float()).half()
    a, b = a.to(device), b.to(device)
    c = torch.empty(M, N, dtype=torch.float16, device=device)
    f16_accumulator_kernel[(2, 2)](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), BLOCK_M=128, BLOCK_N=128,
                                   BLOCK_K=BK, num_warps=4, num_stages=3)
    check("f16 accumulator 256x256x512", c, want, rtol=2 ** -8, atol=2 ** -4)

    return checks.finish("int8 dot kernels")


if __name__ == "__main__":
    sys.exit(main())
