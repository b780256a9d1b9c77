"""tile.heuristics, as `triton.heuristics`: constexprs (and launch options) computed from the
launch's arguments, under or over `tile.autotune`, seen by a grid function; written as library
kernels write them (stacked decorators, `None` optional arguments, pointer increments)."""

import pytest
import torch

import tile


@tile.heuristics({"HAS_BIAS": lambda args: args["B"] is not None})
@tile.heuristics({"EVEN_N": lambda args: args["N"] % args["BLOCK_N"] == 0})
@tile.jit
def _rms_norm_fwd(
    X, Y, W, B,
    stride_x_row, stride_y_row,
    N, eps,
    BLOCK_N: tile.constexpr,
    HAS_BIAS: tile.constexpr,
    EVEN_N: tile.constexpr,
):
    row = tile.program_id(0)
    X += row * stride_x_row
    Y += row * stride_y_row
    cols = tile.arange(0, BLOCK_N)
    if EVEN_N:
        x = tile.load(X + cols).to(tile.float32)
    else:
        x = tile.load(X + cols, mask=cols < N, other=0.).to(tile.float32)
    rstd = 1 / tile.sqrt(tile.sum(x * x, axis=0) / N + eps)
    y = x * rstd * tile.load(W + cols, mask=cols < N, other=0.)
    if HAS_BIAS:
        y += tile.load(B + cols, mask=cols < N, other=0.)
    tile.store(Y + cols, y, mask=cols < N)


def rms_norm(x, w, b=None, eps=1e-6, block=None):
    y = torch.empty_like(x)
    _rms_norm_fwd[(x.shape[0],)](
        x, y, w, b,
        x.stride(0), y.stride(0),
        x.shape[1], eps,
        BLOCK_N=block or triton_next_power_of_2(x.shape[1]),
    )
    return y


def triton_next_power_of_2(n):
    return 1 << (n - 1).bit_length()


@pytest.mark.parametrize("cols,bias", [(96, True), (128, False), (75, True)])
def test_heuristics_set_constexprs(cols, bias):
    x = torch.randn(7, 160)[:, :cols]  # (a strided view: rows 160 apart)
    w, b = torch.randn(cols), torch.randn(cols) if bias else None
    ref = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w + (b if bias else 0)
    torch.testing.assert_close(rms_norm(x, w, b), ref, rtol=1e-5, atol=1e-5)


def test_heuristics_values_reach_the_specialization():
    """Each heuristic's value is a constexpr of the build: the biased and unbiased launches are
    two specializations, and the mask goes where N isn't a multiple of the block."""
    x, w = torch.randn(3, 75), torch.randn(75)
    compiled = _rms_norm_fwd.compile(x, torch.empty_like(x), w, None, 75, 75, 75, 1e-6, BLOCK_N=128)
    without = _rms_norm_fwd.compile(x, torch.empty_like(x), w, None, 75, 75, 75, 1e-6, BLOCK_N=128)
    with_b = _rms_norm_fwd.compile(x, torch.empty_like(x), w, w, 75, 75, 75, 1e-6, BLOCK_N=128)
    assert without is compiled and with_b is not compiled


def test_heuristics_sm90a(gpu_target):
    gpu_target("sm_90a")
    x, w = torch.randn(4, 1000, device="meta"), torch.randn(1000, device="meta")
    launcher = _rms_norm_fwd.compile(x, torch.empty_like(x), w, w, 1000, 1000, 1000, 1e-6, BLOCK_N=1024)
    assert launcher.metadata["ptxas"]["spill_stores"] == 0
    assert "rsqrt" in launcher.asm["ptx"] or "sqrt" in launcher.asm["ptx"]


@tile.autotune(
    configs=[
        tile.Config({"BLOCK": 32}, num_warps=1),
        tile.Config({"BLOCK": 64}, num_warps=2),
    ],
    key=["n"],
)
@tile.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@tile.kernel
def _scaled_copy(x, y, n, scale, BLOCK: tile.constexpr, EVEN: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    if EVEN:
        v = tile.load(x + offs)
    else:
        v = tile.load(x + offs, mask=offs < n)
    tile.store(y + offs, v * scale, mask=offs < n)


@pytest.mark.parametrize("n", [128, 100])
def test_heuristics_under_autotune_see_the_config(n):
    """Autotune above heuristics: each config's BLOCK reaches the heuristic, and the grid."""
    x, y = torch.randn(n), torch.empty(n)
    _scaled_copy[lambda meta: (tile.cdiv(n, meta["BLOCK"]),)](x, y, n, 2.0)
    torch.testing.assert_close(y, 2 * x)


@tile.heuristics({"BLOCK": lambda args: triton_next_power_of_2(args["n"]), "num_warps": lambda args: 1 if args["n"] <= 64 else 2})
@tile.kernel
def _negate(x, n, BLOCK: tile.constexpr):
    offs = tile.arange(0, BLOCK)
    tile.store(x + offs, -tile.load(x + offs, mask=offs < n), mask=offs < n)


def test_heuristics_set_a_launch_option_and_a_block():
    for n in (5, 64, 100):
        x = torch.randn(n)
        want = -x
        _negate[(1,)](x, n)
        torch.testing.assert_close(x, want)
    assert _negate.compile(torch.randn(100), 100).metadata["options"]["num_warps"] == 2
    assert _negate.compile(torch.randn(5), 5).metadata["options"]["num_warps"] == 1


def test_heuristics_bad_use():
    with pytest.raises(tile.TileError, match=r"unknown parameter\(s\) \['BLOKC'\]"):
        tile.heuristics({"BLOKC": lambda args: 16})(_negate.kernel)
    with pytest.raises(tile.LaunchError, match="BLOCK set by tile.heuristics cannot also be passed by position"):
        _negate[(1,)](torch.randn(4), 4, 4)


@tile.heuristics({"DO_SOFTCAP": lambda args: bool(args["DO_SOFTCAP"])})
@tile.jit
def _softcap(x, n, SOFTCAP, DO_SOFTCAP: tile.constexpr, BLOCK: tile.constexpr):
    offs = tile.arange(0, BLOCK)
    v = tile.load(x + offs, mask=offs < n)
    if DO_SOFTCAP:
        v = SOFTCAP * tile.extra.libdevice.tanh(v / SOFTCAP)
    tile.store(x + offs, v, mask=offs < n)


@pytest.mark.parametrize("softcap", [0, 30.0])
def test_heuristics_normalize_a_keyword_argument(softcap):
    """Unsloth's spelling: the heuristic reads the value passed by keyword and replaces it (an
    int 0/1 or a float made a bool), so one build serves every truthy value."""
    x = torch.randn(50) * 100
    want = softcap * torch.tanh(x / softcap) if softcap else x.clone()
    _softcap[(1,)](x, 50, softcap, DO_SOFTCAP=softcap, BLOCK=64)
    torch.testing.assert_close(x, want)


@tile.heuristics({"SCALE_IS_ONE": lambda args: args["scale"] == 1})
@tile.autotune(configs=[tile.Config({"BLOCK": 16}), tile.Config({"BLOCK": 32})], key=["n"])
@tile.kernel
def _maybe_scale(x, y, n, scale, BLOCK: tile.constexpr, SCALE_IS_ONE: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    v = tile.load(x + offs, mask=offs < n)
    if not SCALE_IS_ONE:
        v = v * scale
    tile.store(y + offs, v, mask=offs < n)


@pytest.mark.parametrize("scale", [1.0, 3.0])
def test_heuristics_over_autotune(scale):
    x, y = torch.randn(50), torch.empty(50)
    _maybe_scale[lambda meta: (tile.cdiv(50, meta["BLOCK"]),)](x, y, 50, scale)
    torch.testing.assert_close(y, x * scale)
