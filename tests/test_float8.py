"""float8 tiles (e4m3, e5m2): loaded one byte an element and converted up with `.to()`,
exactly (every code, NaN and infinities included, as torch converts it); on the CPU by
integer decode (`expand-float8`), on sm_89+ GPUs by `cvt.rn.f16x2.e4m3x2` (`.e5m2x2`),
on sm_80 by the same integer decode; arithmetic on them is an error that names the line
(conversion to float8: `test_float8_narrowing.py`)."""

import pytest
import torch

import tile


@tile.kernel
def widen_kernel(x, o32, o16, ob16, n, BLOCK: tile.constexpr):
    offs = tile.arange(0, BLOCK)
    v = tile.load(x + offs, mask=offs < n, other=0.0)
    tile.store(o32 + offs, v.to(tile.float32), mask=offs < n)
    tile.store(o16 + offs, v.to(tile.float16), mask=offs < n)
    tile.store(ob16 + offs, v.to(tile.bfloat16), mask=offs < n)


@tile.kernel
def arithmetic_kernel(x, out):
    offs = tile.arange(0, 16)
    tile.store(out + offs, (tile.load(x + offs) * 2.0).to(tile.float32))


FORMATS = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}


def _codes(fmt="e4m3"):
    return torch.arange(256, dtype=torch.int32).to(torch.uint8).view(FORMATS[fmt])


def _outputs():
    return torch.empty(256), torch.empty(256, dtype=torch.float16), torch.empty(256, dtype=torch.bfloat16)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_code_widens_as_torch_does(fmt):
    x = _codes(fmt)
    outs = _outputs()
    widen_kernel[(1,)](x, *outs, 256, BLOCK=256)
    for got in outs:
        torch.testing.assert_close(got, x.to(got.dtype), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("target, cvt", [("sm_90a", True), ("sm_80", False)])
def test_gpu_conversion(fmt, target, cvt, monkeypatch):
    monkeypatch.setenv("TILE_TARGET", target)
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    widen_kernel._launchers.clear()
    ptx = widen_kernel.compile(_codes(fmt), *_outputs(), 256, BLOCK=256).asm["ptx"]
    assert (f"cvt.rn.f16x2.{fmt}x2" in ptx) == cvt


def test_arithmetic_on_float8_is_an_error():
    with pytest.raises(tile.CompilationError, match="float8 tiles are storage only") as info:
        arithmetic_kernel[(1,)](_codes()[:16], torch.empty(16))
    assert "tile.load(x + offs) * 2.0" in str(info.value)

