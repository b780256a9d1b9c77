"""Triton's `join`, `split` and `interleave` (and `reshape(x, a, b)` with the shape spread out),
against torch on the CPU and compiled for sm_90a; the trailing-2 epilogue split of Triton's
persistent matmul tutorial (reshape, permute, split)."""

import pytest
import torch

import tile


@tile.kernel
def split_join_kernel(x, y, halves, joined, mixed, M: tile.constexpr, N: tile.constexpr):
    rows = tile.arange(0, M)
    cols = tile.arange(0, N)
    pairs = tile.load(x + rows[:, None] * (2 * N) + tile.arange(0, 2 * N)[None, :])
    pairs = tile.reshape(pairs, M, N, 2)
    a, b = tile.split(pairs)
    tile.store(halves + rows[:, None] * N + cols[None, :], a - b)
    other = tile.load(y + rows[:, None] * N + cols[None, :])
    j = tile.join(a, other)  # (M, N, 2)
    tile.store(joined + rows[:, None, None] * (2 * N) + cols[None, :, None] * 2 + tile.arange(0, 2)[None, None, :], j)
    tile.store(mixed + rows[:, None] * (2 * N) + tile.arange(0, 2 * N)[None, :], other.interleave(b))


def test_split_join_interleave_on_cpu():
    M, N = 4, 8
    x = torch.randn(M, 2 * N)
    y = torch.randn(M, N)
    halves, joined, mixed = torch.empty(M, N), torch.empty(M, 2 * N), torch.empty(M, 2 * N)
    split_join_kernel[(1,)](x, y, halves, joined, mixed, M=M, N=N)
    a, b = x.view(M, N, 2).unbind(-1)
    torch.testing.assert_close(halves, a - b)
    torch.testing.assert_close(joined, torch.stack([a, y], -1).view(M, 2 * N))
    torch.testing.assert_close(mixed, torch.stack([y, b], -1).view(M, 2 * N))


def test_split_join_compile_for_sm90a(gpu_target):
    gpu_target()
    M, N = 16, 32
    t = torch.empty(M, 2 * N, device="meta")
    launcher = split_join_kernel.compile(t, torch.empty(M, N, device="meta"), torch.empty(M, N, device="meta"), t, t, M=M, N=N)
    assert "st.global" in launcher.asm["ptx"]


@tile.kernel
def epilogue_split_kernel(c, acc_src, BM: tile.constexpr, BN: tile.constexpr):
    """Tutorial 09's epilogue: the accumulator split in two column halves, stored one after the other."""
    rm = tile.arange(0, BM)
    rn = tile.arange(0, BN)
    acc = tile.load(acc_src + rm[:, None] * BN + rn[None, :])
    acc = tile.reshape(acc, (BM, 2, BN // 2))
    acc = tile.permute(acc, (0, 2, 1))
    acc0, acc1 = tile.split(acc)
    half = tile.arange(0, BN // 2)
    tile.store(c + rm[:, None] * BN + half[None, :], acc0)
    tile.store(c + rm[:, None] * BN + (BN // 2 + half)[None, :], acc1)


def test_tutorial_09_epilogue_split():
    src = torch.randn(16, 32)
    c = torch.empty(16, 32)
    epilogue_split_kernel[(1,)](c, src, BM=16, BN=32)
    torch.testing.assert_close(c, src)


@tile.kernel
def bad_split_kernel(x, N: tile.constexpr):
    a, b = tile.split(tile.load(x + tile.arange(0, N)))
    tile.store(x + tile.arange(0, 1), a)


def test_split_needs_a_last_dim_of_two():
    with pytest.raises(tile.CompilationError, match="split needs a tile whose last dim is 2, got shape \\[4\\]"):
        bad_split_kernel[(1,)](torch.zeros(4), N=4)


@tile.kernel
def _unpack_nibbles(packed, out, n, BLOCK: tile.constexpr):
    """Each byte's high and low nibble, interleaved, as bf16."""
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    p = tile.load(packed + offs, mask=offs < n, other=0)
    pairs = tile.interleave((p >> 4) & 0xF, p & 0xF).to(tile.float32)
    o = tile.program_id(0) * 2 * BLOCK + tile.arange(0, 2 * BLOCK)
    tile.store(out + o, pairs.to(tile.bfloat16), mask=o < 2 * n)


def test_interleaved_operands_several_a_thread(gpu_target):
    """The [BLOCK, 2] tile behind `interleave` holds 16 bytes a thread ([2, 2] f32: rows after its
    short last dim), so its [BLOCK] operands, its slice, hold two: the packed bytes load two at a time
    (they went one `ld.global.b8` each, a thread holding a single row of the pair tile)."""
    import re

    x = torch.randint(0, 256, (1000,), dtype=torch.uint8)
    out = torch.empty(2000, dtype=torch.bfloat16)
    _unpack_nibbles[(tile.cdiv(1000, 256),)](x, out, 1000, BLOCK=256)
    want = torch.stack([x >> 4, x & 0xF], 1).reshape(-1).to(torch.bfloat16)
    assert torch.equal(out, want)
    gpu_target("sm_90a")
    ptx = _unpack_nibbles.compile(torch.empty(1 << 20, dtype=torch.uint8, device="meta"),
                                  torch.empty(1 << 21, dtype=torch.bfloat16, device="meta"), 1 << 20, BLOCK=1024).asm["ptx"]
    loads = set(re.findall(r"\bld\.global[\w.:]*", ptx))
    assert loads == {"ld.global.v2.b8"}, loads
