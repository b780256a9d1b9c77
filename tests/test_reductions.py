"""Reductions in Triton's forms against torch on the CPU target: `axis=None` (every dim),
`keep_dims`, the tensor methods (`x.sum(1)`), and `argmax`/`argmin` (the first index of
the extremum, or the last; NaN counts as the extremum, as in torch), also compiled for
the GPU targets."""

import pytest
import torch

import tile


@tile.kernel
def reductions_kernel(x, total, row_max, col_min, M: tile.constexpr, N: tile.constexpr):
    rm, rn = tile.arange(0, M), tile.arange(0, N)
    v = tile.load(x + rm[:, None] * N + rn[None, :])
    tile.store(total + tile.arange(0, 1), tile.sum(v, keep_dims=True).reshape((1,)))
    tile.store(row_max + rm[:, None], v.max(1, keep_dims=True))  # M x 1
    tile.store(col_min + rn, tile.min(v, axis=0))


@tile.kernel
def arg_kernel(x, amax, amin, amax_last, M: tile.constexpr, N: tile.constexpr):
    rm, rn = tile.arange(0, M), tile.arange(0, N)
    v = tile.load(x + rm[:, None] * N + rn[None, :])
    tile.store(amax + rm, tile.argmax(v, axis=1))
    tile.store(amin + rn[None, :], v.argmin(0, keep_dims=True))  # 1 x N
    tile.store(amax_last + rm, tile.argmax(v, 1, tie_break_left=False))


def _arg_case(dtype, device="cpu"):
    torch.manual_seed(0)
    x = torch.randint(-4, 4, (32, 64)).to(dtype)  # many ties
    if dtype.is_floating_point:
        x[3, 7] = x[3, 9] = x[20, 0] = float("nan")
    x = x.to(device)
    outs = [torch.empty(n, dtype=torch.int32, device=device) for n in (32, 64, 32)]
    arg_kernel[(1,)](x, *outs, M=32, N=64)
    return x, outs


def test_axis_none_keep_dims_and_methods():
    x = torch.randn(32, 64)
    total, row_max, col_min = torch.empty(1), torch.empty(32), torch.empty(64)
    reductions_kernel[(1,)](x, total, row_max, col_min, M=32, N=64)
    torch.testing.assert_close(total, x.sum().reshape(1), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(row_max, x.amax(1))
    torch.testing.assert_close(col_min, x.amin(0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.int8])
def test_argmax_argmin_match_torch(dtype):
    x, (amax, amin, amax_last) = _arg_case(dtype)
    assert torch.equal(amax.long(), x.argmax(1))
    assert torch.equal(amin.long(), x.argmin(0))
    if not dtype.is_floating_point:  # the last maximum: the first of the flipped rows, counted from the end
        assert torch.equal(amax_last.long(), 63 - x.flip(1).argmax(1))


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_reductions_compile_for_the_gpu(target, monkeypatch):
    monkeypatch.setenv("TILE_TARGET", target)
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    _arg_case(torch.float32, "meta")
    meta = [torch.empty(n, device="meta") for n in ((32, 64), 1, 32, 64)]
    reductions_kernel[(1,)](*meta, M=32, N=64)


def test_argmax_needs_an_axis():
    @tile.kernel
    def no_axis(x, out):
        tile.store(out, tile.argmax(tile.load(x + tile.arange(0, 4))))

    with pytest.raises(tile.CompilationError, match="argmax"):
        no_axis[(1,)](torch.zeros(4), torch.zeros(1, dtype=torch.int32))
