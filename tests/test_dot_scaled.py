"""Triton's `tl.dot_scaled` (frontend/dot_scaled.py): e4m3 / e5m2 blocks with e8m0 scales per
32 elements of K, emulated (scaled to bf16, then a 16-bit dot): on the CPU against torch's
float64 of the dequantized values; compiles for sm_90a; fp4 is an error at the user's line."""

import pytest
import torch

import tile

FP8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}


@tile.jit
def dot_scaled_kernel(a, a_scale, b, b_scale, c, M, N, K, stride_am, stride_bk, stride_sa, stride_sb,
                      BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr, BLOCK_K: tile.constexpr,
                      A_FORMAT: tile.constexpr, B_FORMAT: tile.constexpr, ):
    pid_m, pid_n = tile.program_id(0), tile.program_id(1)
    rm = pid_m * BLOCK_M + tile.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tile.arange(0, BLOCK_N)
    rk = tile.arange(0, BLOCK_K)
    rs = tile.arange(0, BLOCK_K // 32)
    acc = tile.zeros((BLOCK_M, BLOCK_N), dtype=tile.float32)
    for k in range(0, K, BLOCK_K):
        x = tile.load(a + rm[:, None] * stride_am + (k + rk)[None, :], mask=rm[:, None] < M, other=0.0)
        y = tile.load(b + (k + rk)[:, None] * stride_bk + rn[None, :], mask=rn[None, :] < N, other=0.0)
        sx = tile.load(a_scale + rm[:, None] * stride_sa + (k // 32 + rs)[None, :], mask=rm[:, None] < M, other=127)
        sy = tile.load(b_scale + rn[:, None] * stride_sb + (k // 32 + rs)[None, :], mask=rn[:, None] < N, other=127)
        acc = tile.dot_scaled(x, sx, A_FORMAT, y, sy, B_FORMAT, acc=acc)
    tile.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _inputs(M, N, K, fa, fb):
    a = (torch.randn(M, K) * 8).to(FP8[fa])
    b = (torch.randn(K, N) * 8).to(FP8[fb])
    # e8m0 bytes around 127 (2^-6 .. 2^5), 0 (2^-127) and 255 (NaN) left out of the random ones
    sa = torch.randint(121, 133, (M, K // 32), dtype=torch.uint8)
    sb = torch.randint(121, 133, (N, K // 32), dtype=torch.uint8)
    return a, sa, b, sb


def _reference(a, sa, b, sb):
    pa = torch.pow(2.0, sa.double() - 127).repeat_interleave(32, dim=1)
    pb = torch.pow(2.0, sb.double() - 127).repeat_interleave(32, dim=1)
    return (a.double() * pa) @ (b.double() * pb.T)


@pytest.mark.parametrize("fa, fb", [("e4m3", "e4m3"), ("e5m2", "e4m3")])
def test_dot_scaled_matches_torch(fa, fb):
    torch.manual_seed(0)
    M, N, K = 40, 72, 128  # (M and N not multiples of the blocks)
    a, sa, b, sb = _inputs(M, N, K, fa, fb)
    c = torch.empty(M, N)
    # e8m0 bytes as int8 (the same bytes; tile has no uint8 tensors here)
    dot_scaled_kernel[(2, 2)](a, sa.view(torch.int8), b, sb.view(torch.int8), c, M, N, K, a.stride(0), b.stride(0),
                              sa.stride(0), sb.stride(0), BLOCK_M=32, BLOCK_N=64, BLOCK_K=64, A_FORMAT=fa, B_FORMAT=fb)
    ref = _reference(a, sa, b, sb)
    assert (c.double() - ref).abs().max() <= 2.0**-20 * K * ref.abs().max()


def test_dot_scaled_sm90a(gpu_target):
    gpu_target("sm_90a")
    M, N, K = 256, 256, 256
    a = torch.empty(M, K, dtype=torch.float8_e4m3fn, device="meta")
    b = torch.empty(K, N, dtype=torch.float8_e4m3fn, device="meta")
    sa = torch.empty(M, K // 32, dtype=torch.int8, device="meta")
    sb = torch.empty(N, K // 32, dtype=torch.int8, device="meta")
    c = torch.empty(M, N, device="meta")
    launcher = dot_scaled_kernel.compile(a, sa, b, sb, c, M, N, K, K, N, K // 32, K // 32, BLOCK_M=64, BLOCK_N=64,
                                         BLOCK_K=64, A_FORMAT="e4m3", B_FORMAT="e4m3", num_warps=4)
    assert "mma" in launcher.asm["ptx"]  # (the 16-bit dot of the scaled operands on the tensor cores)


def test_dot_scaled_fp4_is_an_error():
    torch.manual_seed(0)
    a, sa, b, sb = _inputs(32, 64, 64, "e4m3", "e4m3")
    with pytest.raises(tile.CompilationError, match="the hardware lacks fp4") as info:
        dot_scaled_kernel[(1, 1)](a, sa.view(torch.int8), b, sb.view(torch.int8), torch.empty(32, 64), 32, 64, 64, 64,
                                  64, 2, 2, BLOCK_M=32, BLOCK_N=64, BLOCK_K=64, A_FORMAT="e2m1", B_FORMAT="e4m3")
    assert "tile.dot_scaled(x, sx, A_FORMAT" in str(info.value)
