"""`while` on a run-time condition (scf.while): tiles, scalars and pointers carried, on
the CPU target against torch and compiled for the GPU targets; a compile-time condition
runs no iteration (False) or is an error (True: nothing could end the loop)."""

import pytest
import torch

import tile


@tile.kernel
def halving_kernel(x, out, n, BLOCK: tile.constexpr):
    """Halve every element at least 1 until none is; count each element's halvings, and the rounds."""
    offs = tile.arange(0, BLOCK)
    v = tile.load(x + offs, mask=offs < n, other=0.0)
    steps = tile.zeros((BLOCK,), tile.int32)
    rounds = 0  # a Python number the loop changes: carried as an int32 scalar
    while tile.max(v) >= 1.0:
        big = v >= 1.0
        v = tile.where(big, v * 0.5, v)
        steps = steps + big.to(tile.int32)
        rounds += 1
    tile.store(out + offs, steps, mask=offs < n)
    tile.store(out + BLOCK, rounds)
    while False:
        tile.store(out, steps)


@tile.kernel
def dot_while_kernel(a, b, c, K, M: tile.constexpr, N: tile.constexpr, BK: tile.constexpr):
    """A K loop written as a while, pointers walked through it."""
    rm, rn, rk = tile.arange(0, M), tile.arange(0, N), tile.arange(0, BK)
    pa, pb = a + rm[:, None] * K + rk[None, :], b + rk[:, None] * N + rn[None, :]
    acc = tile.zeros((M, N), tile.float32)
    k = 0 + tile.program_id(0)
    while k < K:
        acc = tile.dot(tile.load(pa), tile.load(pb), acc)
        pa, pb, k = pa + BK, pb + BK * N, k + BK
    tile.store(c + rm[:, None] * N + rn[None, :], acc)


def _halving(device="cpu"):
    x = torch.tensor([0.5, 3.0, 17.0, 1.0, 100.0]).to(device)
    out = torch.zeros(9, dtype=torch.int32, device=device)
    halving_kernel[(1,)](x, out, 5, BLOCK=8)
    return out


def _dot(device="cpu"):
    torch.manual_seed(0)
    a, b = torch.randn(64, 96).half(), torch.randn(96, 64).half()
    c = torch.empty(64, 64, device=device)
    dot_while_kernel[(1,)](a.to(device), b.to(device), c, 96, M=64, N=64, BK=32)
    return a, b, c


def test_while_matches_python():
    assert _halving().tolist() == [0, 2, 5, 1, 7, 0, 0, 0, 7]


def test_dot_in_a_while_loop():
    a, b, c = _dot()
    torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_while_compiles_for_the_gpu(target, monkeypatch):
    monkeypatch.setenv("TILE_TARGET", target)
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    _halving("meta")
    _dot("meta")


def test_while_true_is_an_error():
    @tile.kernel
    def forever(x):
        while True:
            tile.store(x, 1.0)

    with pytest.raises(tile.CompilationError, match="condition must be a run-time value"):
        forever[(1,)](torch.zeros(1))
