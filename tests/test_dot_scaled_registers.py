"""`tile.dot_scaled` on sm_90a as Triton's on Hopper: the scaled A goes to wgmma from registers
(the accumulator's layout, read from its float8 ring slot in it), the scaled B (`b.T`, scaled
as loaded, N x K) is staged K-major in as few chunks of N as fit beside the rings. Tutorial
10's port at its 128x256x128 block and 4 stages (descriptors) is in test_triton_tutorials.py;
here the pointer form, against torch on the CPU at odd sizes, and compiled for sm_90a."""

import re

import pytest
import torch

import tile


@tile.jit
def scaled_matmul(a_ptr, a_scale_ptr, b_ptr, b_scale_ptr, c_ptr, M, N, K,
                  BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr, STAGES: tile.constexpr,
                  B_KN: tile.constexpr = False,
                  ):
    """c = (a * 2^(sa - 127)) @ (b * 2^(sb - 127)).T; a (M, K), b (N, K) e4m3, scales per 32 of K
    (`B_KN`: b as its K x N transpose, read as K x N blocks)."""
    offs_m = tile.program_id(0) * BM + tile.arange(0, BM)
    offs_n = tile.program_id(1) * BN + tile.arange(0, BN)
    offs_k = tile.arange(0, BK)
    offs_s = tile.arange(0, BK // 32)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    if B_KN:
        b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    else:
        b_ptrs = b_ptr + offs_n[:, None] * K + offs_k[None, :]
    sa_ptrs = a_scale_ptr + offs_m[:, None] * (K // 32) + offs_s[None, :]
    sb_ptrs = b_scale_ptr + offs_n[:, None] * (K // 32) + offs_s[None, :]
    acc = tile.zeros((BM, BN), dtype=tile.float32)
    for _ in tile.range(0, tile.cdiv(K, BK), num_stages=STAGES):
        a = tile.load(a_ptrs, mask=offs_m[:, None] < M, other=0.0)
        sa = tile.load(sa_ptrs, mask=offs_m[:, None] < M, other=127)
        sb = tile.load(sb_ptrs, mask=offs_n[:, None] < N, other=127)
        if B_KN:
            b = tile.load(b_ptrs, mask=offs_n[None, :] < N, other=0.0)
            acc = tile.dot_scaled(a, sa, "e4m3", b, sb, "e4m3", acc)
            b_ptrs += BK * N
        else:
            b = tile.load(b_ptrs, mask=offs_n[:, None] < N, other=0.0)
            acc = tile.dot_scaled(a, sa, "e4m3", b.T, sb, "e4m3", acc)
            b_ptrs += BK
        a_ptrs += BK
        sa_ptrs += BK // 32
        sb_ptrs += BK // 32
    c_ptrs = c_ptr + offs_m[:, None] * N + offs_n[None, :]
    tile.store(c_ptrs, acc.to(tile.float16), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _operands(M, N, K, device):
    a = (torch.randn(M, K) * 2).to(torch.float8_e4m3fn).to(device)
    b = (torch.randn(N, K) * 2).to(torch.float8_e4m3fn).to(device)
    sa = torch.randint(124, 130, (M, K // 32), dtype=torch.uint8, device=device)
    sb = torch.randint(124, 130, (N, K // 32), dtype=torch.uint8, device=device)
    return a, sa, b, sb, torch.empty(M, N, dtype=torch.float16, device=device)


def _launch(M, N, K, device="cpu", **meta):
    args = _operands(M, N, K, device)
    if meta.get("B_KN"):  # (b's values as a K x N tensor)
        args = args[:2] + (args[2].T.contiguous(),) + args[3:]
    grid = (tile.cdiv(M, meta["BM"]), tile.cdiv(N, meta["BN"]))
    if device == "meta":
        return scaled_matmul.compile(*args, M, N, K, **meta)
    scaled_matmul[grid](*args, M, N, K, **meta)
    return args


@pytest.mark.parametrize("b_kn", [False, True])
def test_scaled_matmul_on_cpu(b_kn):
    torch.manual_seed(0)
    M, N, K = 45, 70, 128
    a, sa, b, sb, c = _launch(M, N, K, BM=32, BN=32, BK=64, STAGES=2, B_KN=b_kn)
    scale = lambda s: torch.exp2(s.float() - 127).repeat_interleave(32, dim=1)
    ref = (a.float() * scale(sa)) @ ((b.T if b_kn else b).float() * scale(sb)).T
    torch.testing.assert_close(c.float(), ref, atol=1e-1, rtol=1e-2)


def _wgmmas(ptx: str) -> list:
    """The wgmma instructions' shapes, those that take A from registers marked."""
    return [(m.group(1), m.group(2) is not None) for m in re.finditer(r"wgmma\.mma_async\.\S+(m64n\d+k16)\S* \{[^}]*\}, (\{%r)?", ptx)]


@pytest.mark.parametrize("config, n_chunks, k_chunks", [
    # b.T: B (64 KB) beside 192 KB of rings, K-major in 2 chunks of N
    (dict(BM=128, BN=256, BK=128, STAGES=4, num_warps=8), 2, 1),
    # B loaded K x N, N-major: in 2 chunks of K
    (dict(BM=128, BN=256, BK=128, STAGES=4, num_warps=8, B_KN=True), 1, 2),
    (dict(BM=128, BN=128, BK=128, STAGES=3, num_warps=8), 1, 1),  # (92 bytes of spills with A staged)
])
def test_scaled_matmul_on_sm90a(gpu_target, config, n_chunks, k_chunks):
    gpu_target("sm_90a")
    launcher = _launch(1000, 1000, 1024, device="meta", **config)
    wgmmas = _wgmmas(launcher.asm["ptx"])
    bm, bn, bk, groups = config["BM"], config["BN"], config["BK"], config["num_warps"] // 4
    # every wgmma takes A from registers: a 64-row block a warpgroup, 16 of K each, per chunk of N
    assert wgmmas == [(f"m64n{bn // n_chunks}k16", True)] * (bm // 64 // groups * bk // 16 * n_chunks)
    assert launcher.metadata["shared_bytes"] <= 232448
    assert launcher.asm["ptx"].count("wgmma.commit_group") == n_chunks * k_chunks  # (a chunk's group waited for)
    if n_chunks == k_chunks == 1:
        info = launcher.metadata["ptxas"]
        assert info["stack_frame"] == info["spill_stores"] == info["spill_loads"] == 0, info
