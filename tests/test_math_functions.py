"""The elementwise math functions against torch on the CPU target, special values
included, and compiled for the GPU targets (whose f32 exp/log/tanh are the
special-function unit's approximations, README)."""

import pytest
import torch

import tile

FUNCTIONS = {
    "exp": torch.exp, "exp2": torch.exp2, "log": torch.log, "log2": torch.log2, "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "sin": torch.sin, "cos": torch.cos,
    "erf": torch.erf, "floor": torch.floor, "ceil": torch.ceil, "abs": torch.abs,
}


@tile.kernel
def math_kernel(x, out, n, BLOCK: tile.constexpr):
    """Row i of out is function i of x, in FUNCTIONS' order."""
    offs = tile.arange(0, BLOCK)
    m = offs < n
    v = tile.load(x + offs, mask=m, other=1.0)
    results = (tile.exp(v), tile.exp2(v), tile.log(v), tile.log2(v), tile.sqrt(v), tile.rsqrt(v), tile.tanh(v),
               tile.sigmoid(v), tile.sin(v), tile.cos(v), tile.erf(v), tile.floor(v), tile.ceil(v), tile.abs(v))
    for i in tile.static_range(14):
        tile.store(out + i * n + offs, results[i], mask=m)


def _inputs(dtype, device="cpu"):
    torch.manual_seed(0)
    x = torch.randn(100) * 4
    x[:6] = torch.tensor([float("inf"), float("-inf"), float("nan"), -0.0, 0.0, 2.5])
    return x.to(dtype).to(device)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_math_functions_match_torch(dtype):
    x = _inputs(dtype)
    out = torch.empty(len(FUNCTIONS), x.numel(), dtype=dtype)
    math_kernel[(1,)](x, out, x.numel(), BLOCK=128)
    tol = {torch.float32: 2e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}[dtype]
    for row, (name, fn) in zip(out, FUNCTIONS.items()):
        torch.testing.assert_close(row, fn(x), equal_nan=True, atol=tol, rtol=tol, msg=name)


def test_rounding_functions_keep_integers():
    @tile.kernel
    def rounding_kernel(x, out):
        offs = tile.arange(0, 4)
        v = tile.load(x + offs)
        tile.store(out + offs, tile.floor(v) + tile.ceil(v))

    x = torch.tensor([-7, -1, 3, 2**30], dtype=torch.int32)
    out = torch.empty_like(x)
    rounding_kernel[(1,)](x, out)
    assert torch.equal(out, 2 * x)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_math_functions_compile_for_the_gpu(target, monkeypatch):
    monkeypatch.setenv("TILE_TARGET", target)
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    x = _inputs(torch.float32, "meta")
    math_kernel[(1,)](x, torch.empty(len(FUNCTIONS), x.numel(), device="meta"), x.numel(), BLOCK=128)
