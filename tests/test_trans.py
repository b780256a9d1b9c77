"""`tile.trans` / `tile.permute` / `x.T`: dims permuted, on the CPU target against torch,
compiled for the GPU targets (each thread reads the elements it needs from the
operand's registers where it holds them, else through shared memory), and the
errors for dims that are not a permutation."""

import pytest
import torch

import tile


@tile.kernel
def trans_kernel(x, out, out_t, M: tile.constexpr, N: tile.constexpr):
    rm, rn = tile.arange(0, M), tile.arange(0, N)
    v = tile.load(x + rm[:, None] * N + rn[None, :])
    tile.store(out + rn[:, None] * M + rm[None, :], tile.trans(v) * 2.0)
    # .T of an index tile: recomputed at the permuted coordinates, no shared memory
    idx = (rm[:, None] * N + rn[None, :]).T
    tile.store(out_t + rn[:, None] * M + rm[None, :], v.T + idx.to(tile.float32))


@tile.kernel
def permute_kernel(x, out, A: tile.constexpr, B: tile.constexpr, C: tile.constexpr):
    ra, rb, rc = tile.arange(0, A), tile.arange(0, B), tile.arange(0, C)
    v = tile.load(x + ra[:, None, None] * (B * C) + rb[None, :, None] * C + rc[None, None, :])
    p = tile.permute(v, (2, 0, 1))  # C x A x B
    tile.store(out + rc[:, None, None] * (A * B) + ra[None, :, None] * B + rb[None, None, :], p)


@tile.kernel
def dot_trans_kernel(a, b, c, M: tile.constexpr, N: tile.constexpr, K: tile.constexpr):
    """c = a @ b.T with b stored N x K, row-major (attention's q @ k.T)."""
    rm, rn, rk = tile.arange(0, M), tile.arange(0, N), tile.arange(0, K)
    x = tile.load(a + rm[:, None] * K + rk[None, :])
    y = tile.load(b + rn[:, None] * K + rk[None, :])
    tile.store(c + rm[:, None] * N + rn[None, :], tile.dot(x, y.T))


@tile.kernel
def loop_dot_trans_kernel(a, b, c, K, M: tile.constexpr, N: tile.constexpr, BK: tile.constexpr):
    """c = a @ b.T over K in BK steps, b stored N x K: on a GPU with num_stages > 1, the
    transposed load is copied as a load of b^T through its strides (`tile-trans-loads`)."""
    rm, rn, rk = tile.arange(0, M), tile.arange(0, N), tile.arange(0, BK)
    acc = tile.zeros((M, N), tile.float32)
    for k in range(0, K, BK):
        x = tile.load(a + rm[:, None] * K + (k + rk)[None, :], mask=(k + rk)[None, :] < K, other=0.0)
        y = tile.load(b + rn[:, None] * K + (k + rk)[None, :], mask=(k + rk)[None, :] < K, other=0.0)
        acc = tile.dot(x, y.T, acc)
    tile.store(c + rm[:, None] * N + rn[None, :], acc)


def _trans_case(device="cpu"):
    x = torch.randn(32, 64, device=device)
    out, out_t = torch.empty(64, 32, device=device), torch.empty(64, 32, device=device)
    trans_kernel[(1,)](x, out, out_t, M=32, N=64)
    return x, out, out_t


def test_trans_matches_torch():
    x, out, out_t = _trans_case()
    torch.testing.assert_close(out, x.T * 2)
    torch.testing.assert_close(out_t, x.T + torch.arange(32 * 64, dtype=torch.float32).reshape(32, 64).T)


def test_permute_matches_torch():
    x = torch.randn(2, 8, 16)
    out = torch.empty(16, 2, 8)
    permute_kernel[(1,)](x, out, A=2, B=8, C=16)
    torch.testing.assert_close(out, x.permute(2, 0, 1))


def test_dot_of_a_transposed_operand():
    a, b = torch.randn(64, 32, dtype=torch.float16), torch.randn(64, 32, dtype=torch.float16)
    c = torch.empty(64, 64)
    dot_trans_kernel[(1,)](a, b, c, M=64, N=64, K=32)
    torch.testing.assert_close(c, a.float() @ b.float().T, atol=1e-3, rtol=1e-3)


def test_dot_of_a_transposed_operand_in_a_loop():
    a, b = torch.randn(64, 80, dtype=torch.float16), torch.randn(64, 80, dtype=torch.float16)
    c = torch.empty(64, 64)
    loop_dot_trans_kernel[(1,)](a, b, c, 80, M=64, N=64, BK=32)
    torch.testing.assert_close(c, a.float() @ b.float().T, atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_trans_compiles_for_the_gpu(target, monkeypatch):
    monkeypatch.setenv("TILE_TARGET", target)
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    _trans_case("meta")
    permute_kernel[(1,)](torch.empty(2, 8, 16, device="meta"), torch.empty(16, 2, 8, device="meta"), A=2, B=8, C=16)
    a = torch.empty(128, 64, dtype=torch.float16, device="meta")
    dot_trans_kernel[(1,)](a, a, torch.empty(128, 128, device="meta"), M=128, N=128, K=64)
    loop_dot_trans_kernel[(1,)](a, a, torch.empty(128, 128, device="meta"), 64, M=128, N=128, BK=32, num_stages=3)


@pytest.mark.parametrize("body, message", [
    ("tile.trans(v, 0, 0)", "are not a permutation of the 2 dims"),
    ("tile.trans(tile.arange(0, 16))", "without dims transposes a 2-D tile"),
    ("tile.permute(v, (0, 1, 2))", "are not a permutation of the 2 dims"),
])
def test_bad_dims(body, message, tmp_path):
    src = tmp_path / "bad_trans.py"
    src.write_text(
        "import tile\n\n"
        "@tile.kernel\n"
        "def bad(x, out):\n"
        "    v = tile.load(x + tile.arange(0, 4)[:, None] * 4 + tile.arange(0, 4)[None, :])\n"
        f"    w = {body}\n"
        "    tile.store(out + tile.arange(0, 4)[:, None] * 4 + tile.arange(0, 4)[None, :], v)\n")
    namespace = {}
    exec(compile(src.read_text(), str(src), "exec"), namespace)
    with pytest.raises(tile.CompilationError, match=message) as err:
        namespace["bad"][(1,)](torch.zeros(4, 4), torch.zeros(4, 4))
    assert "bad_trans.py:6:" in str(err.value)  # the user's line
