"""examples/fp8_gemm.py on sm_90a (its main() runs on the CPU in tests/test_examples.py): each
scaling compiles to float8 wgmma (m64n128k32.f32.e4m3.e4m3) fed by TMA copies, without spills,
one program per tile and persistent; and on the CPU, a strided output and odd sizes."""

import re

import pytest
import torch

import fp8_gemm as g

E4M3 = torch.float8_e4m3fn


@pytest.mark.parametrize("scaling, persistent", [("tensor", False), ("row", True), ("block", True), ("block", False)])
def test_fp8_gemm_sm90a(gpu_target, scaling, persistent):
    gpu_target("sm_90a")
    M, N, K = 1024, 1024, 1024
    meta = lambda *s, dtype=torch.float32: torch.empty(*s, dtype=dtype, device="meta")  # noqa: E731
    a, b, out = meta(M, K, dtype=E4M3), meta(N, K, dtype=E4M3), meta(M, N, dtype=torch.bfloat16)
    if scaling == "block":
        sa, sb, strides = meta(M, K // 128), meta(N // 128, K // 128), (K // 128, K // 128)
    else:
        sa, sb = (meta(M), meta(N)) if scaling == "row" else (meta(1), meta(1))
        strides = (0, 0)
    kernel = g.persistent_fp8_gemm_kernel if persistent else g.fp8_gemm_kernel
    launcher = kernel.compile(a, b, out, sa, sb, M, N, K, *a.stride(), *b.stride(), *out.stride(), *strides,
                              SCALING=scaling, **g.DEFAULTS)
    ptx = launcher.asm["ptx"]
    assert "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " in ptx
    assert len(re.findall(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global", ptx)) >= 2  # (a and b by TMA)
    info = launcher.metadata["ptxas"]
    assert info["stack_frame"] == info["spill_stores"] == info["spill_loads"] == 0, info


def test_fp8_gemm_strided_output_cpu():
    """A row-wise product into a column slice of a wider bf16 tensor (row stride not N)."""
    torch.manual_seed(3)
    M, N, K = 50, 40, 160
    a, sa = g.quantize(torch.randn(M, K), "row")
    b, sb = g.quantize(torch.randn(N, K), "row")
    wide = torch.zeros(M, 2 * N, dtype=torch.bfloat16)
    g.fp8_gemm(a, b, sa, sb.reshape(-1), "row", out=wide[:, N:], BM=64, BN=64, BK=64, num_warps=4, num_stages=2)
    want = g.reference(a, b, sa, sb, "row")
    torch.testing.assert_close(wide[:, N:].double(), want, rtol=2**-7, atol=1e-3 * want.abs().max().item())
    assert not wide[:, :N].any()
