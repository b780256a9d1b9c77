"""Triton's names at the language's top level: `div_rn`, `sqrt_rn`, `fdiv(ieee_rounding=)` and
`umulhi` (also in `tile.math`), correctly rounded against torch on the CPU and `div.rn.f32` /
`sqrt.rn.f32` / `mul.hi.u32` in sm_90a's PTX; the annotations `tile.const` and `tile.tuple`;
and the float8 formats tile has no type for (`float8e4b15`, `float8e4b8`, `float8e5b16`) and
`tile.void`, errors at the line that uses them as a dtype."""

import re

import numpy as np
import pytest
import torch

import tile


@tile.func
def _halves(v) -> tile.tuple:
    return tile.tuple((v * 0.5, v - v * 0.5))


@tile.jit
def _rounded(x: tile.const, y: tile.const, h: tile.const, out, n, BLOCK: tile.constexpr, ):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    mask = offs < n
    a = tile.load(x + offs, mask=mask, other=1.0)
    b = tile.load(y + offs, mask=mask, other=1.0)
    out += offs
    tile.store(out, tile.div_rn(a, b), mask=mask)
    tile.store(out + n, tile.sqrt_rn(tile.abs(a)), mask=mask)
    tile.store(out + 2 * n, tile.fdiv(a, b, ieee_rounding=True), mask=mask)
    pair = _halves(a)
    tile.static_assert(isinstance(pair, tile.tuple), "a tile.tuple")
    lo, hi = pair
    tile.store(out + 3 * n, lo + hi, mask=mask)
    u = tile.load(h + offs, mask=mask)
    high = tile.umulhi(u, 0x9E3779B9)
    tile.static_assert(high.dtype == tile.uint32, "umulhi keeps uint32")
    tile.store(out + 4 * n, (high > 0x7FFFFFFF).to(tile.float32), mask=mask)


def test_rounded_ops_and_annotations_against_torch():
    n = 333
    x, y = torch.randn(n) * 100, torch.randn(n)
    h = np.random.default_rng(0).integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    out = torch.zeros(5 * n)
    _rounded[(tile.cdiv(n, 128), )](x, y, torch.from_numpy(h), out, n, BLOCK=128)
    r = out.reshape(5, n)
    assert torch.equal(r[0], x / y) and torch.equal(r[2], x / y)
    assert torch.equal(r[1], x.abs().double().sqrt().float())  # (correctly rounded; torch's f32 sqrt here is not)
    assert torch.equal(r[3], x)
    high = (h.astype(np.uint64) * np.uint64(0x9E3779B9)) >> np.uint64(32)
    assert np.array_equal(r[4].numpy(), (high > 0x7FFFFFFF).astype(np.float32))
    assert tile.div_rn is tile.math.div_rn and tile.umulhi is tile.math.umulhi


def test_sm90a_correctly_rounded(gpu_target):
    gpu_target("sm_90a")
    f, u = (torch.empty(4096, dtype=dt, device="meta") for dt in (torch.float32, torch.uint32))
    ptx = _rounded.compile(f, f, u, torch.empty(5 * 4096, device="meta"), 4096, BLOCK=1024).asm["ptx"]
    assert re.search(r"div\.rn\.f32", ptx) and re.search(r"sqrt\.rn\.f32", ptx) and re.search(r"mul\.(hi|wide)\.u32", ptx)


@tile.jit
def _float8(x, NAME: tile.constexpr):
    v = tile.load(x + tile.arange(0, 16))
    if NAME == "e4b15":
        v = v.to(tile.float8e4b15).to(tile.float32)
    elif NAME == "e4b8":
        v = v.to(tile.float8e4b8).to(tile.float32)
    elif NAME == "e5b16":
        v = tile.zeros((16, ), tile.float8e5b16).to(tile.float32)
    else:
        v = tile.full((16, ), 0, tile.void)
    tile.store(x + tile.arange(0, 16), v)


@pytest.mark.parametrize("name, message", [("e4b15", "tile.float8e4b15 cannot be used as a dtype: .*before sm_89"),
                                           ("e4b8", "tile.float8e4b8 .*not supported in this architecture"),
                                           ("e5b16", "tile.float8e5b16 .*AMD's"), ("void", "tile.void .*no value")])
def test_formats_tile_lacks_are_errors_at_their_line(name, message, gpu_target):
    gpu_target("sm_90a")
    with pytest.raises(tile.CompilationError, match=message) as e:
        _float8[(1, )](torch.empty(16, device="meta"), NAME=name)
    assert "test_triton_type_names.py" in str(e.value)
