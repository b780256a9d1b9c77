"""Builtins in Triton's forms against torch on the CPU target (clamp, fma, ravel,
expand_dims, zeros_like, full_like), compiled for the GPU targets, and the
compile-time ones (static_assert, static_print)."""

import pytest
import torch

import tile


@tile.kernel
def builtins_kernel(x, out, M: tile.constexpr, N: tile.constexpr):
    rm, rn = tile.arange(0, M), tile.arange(0, N)
    v = tile.load(x + rm[:, None] * N + rn[None, :])
    a = tile.clamp(v, -0.5, 0.5)
    b = tile.fma(v, 2.0, a)
    c = b + tile.zeros_like(b) + tile.full_like(b, 3)
    flat = tile.expand_dims(tile.ravel(c), 0)  # 1 x M*N
    tile.store(out + tile.expand_dims(tile.arange(0, M * N), 0), flat)


def _case(dtype, device="cpu"):
    torch.manual_seed(0)
    x = torch.randn(16, 32).to(dtype)
    x[0, 0] = float("nan")
    x = x.to(device)
    out = torch.empty(16 * 32, dtype=dtype, device=device)
    builtins_kernel[(1,)](x, out, M=16, N=32)
    return x, out


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_builtins_match_torch(dtype):
    x, out = _case(dtype)
    x32 = x.float()
    want = (torch.addcmul(x32.clamp(-0.5, 0.5), x32, torch.tensor(2.0)) + 3).to(dtype).reshape(-1)
    tol = 1e-6 if dtype == torch.float32 else 2e-3
    torch.testing.assert_close(out, want, equal_nan=True, atol=tol, rtol=tol)
    assert out[0].isnan()  # clamp keeps a NaN


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_builtins_compile_for_the_gpu(target, monkeypatch):
    monkeypatch.setenv("TILE_TARGET", target)
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    _case(torch.float16, "meta")


def test_static_assert_and_print(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))  # compiled here, so it prints

    @tile.kernel
    def static_kernel(x, BLOCK: tile.constexpr):
        tile.static_print("BLOCK", BLOCK, tile.arange(0, BLOCK))
        tile.static_assert(BLOCK >= 64, "BLOCK must be at least 64")
        tile.store(x + tile.arange(0, BLOCK), tile.zeros((BLOCK,), tile.float32))

    static_kernel[(1,)](torch.ones(64), BLOCK=64)
    assert "BLOCK 64 tile([64], tile.int32)" in capsys.readouterr().out
    with pytest.raises(tile.CompilationError, match="static_assert failed: BLOCK must be at least 64"):
        static_kernel[(1,)](torch.ones(32), BLOCK=32)
