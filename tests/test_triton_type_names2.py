"""Triton's type objects as library kernels use them: `tile.tensor` (annotations of `@tile.jit`
parameters and returns; `isinstance(x, tile.tensor)` true of tiles, run-time scalars and
pointers, false of constexprs, as Triton's), a tile's `.type` (`tile.block_type`, equal to
Triton's spelling of it), `tile.to_tensor` (Triton's dtypes for numbers), `tile.expect_zero`,
`tile.pi32_t`, `tile.constexpr_type`, `tile.str_to_ty`; `tile.core` / `tile.standard` /
`tile.random` as Triton's modules; and Triton's names tile lacks, errors at their line."""

import os
import re
import sys

import pytest
import torch

import tile


@tile.jit
def _scaled(v: tile.tensor, s: tile.core.tensor, ) -> tile.tensor:
    tile.static_assert(isinstance(v, tile.tensor) and isinstance(s, tile.tensor), "run-time values")
    return v * s


@tile.jit
def _typed(x_ptr: tile.tensor, out_ptr: tile.tensor, n: tile.core.tensor, scale, stride, BLOCK: tile.constexpr, ):
    pid = tile.program_id(0)
    offs = pid * BLOCK + tile.arange(0, BLOCK)
    mask = offs < n
    x_ptr += offs * stride
    x = tile.load(x_ptr, mask=mask, other=0.0)
    tile.static_assert(x.type == tile.block_type(tile.float32, [BLOCK]), "a tile's type")
    tile.static_assert(x.type.is_block() and x.type.scalar == tile.float32 and x.type.numel == BLOCK, "block_type")
    tile.static_assert(x_ptr.type == tile.block_type(tile.pointer_type(tile.float32), [BLOCK]), "a pointer tile's type")
    tile.static_assert(isinstance(x_ptr, tile.tensor) and isinstance(out_ptr, tile.tensor), "pointers are tensors")
    tile.static_assert(isinstance(pid, tile.tensor) and not pid.type.is_block(), "a scalar's type is its dtype")
    tile.static_assert(not isinstance(BLOCK, tile.tensor), "BLOCK is a constexpr")
    big = tile.to_tensor(2**31)
    tile.static_assert(big.dtype == tile.uint32, "Triton's to_tensor: 2**31 is a uint32")
    tile.static_assert(tile.to_tensor(2**31 - 1).dtype == tile.int32 and tile.to_tensor(-2**31).dtype == tile.int32, "int32")
    tile.static_assert(tile.to_tensor(2**40).dtype == tile.int64 and tile.to_tensor(2**63).dtype == tile.uint64, "64 bits")
    tile.static_assert(tile.to_tensor(True).dtype == tile.int1 and tile.to_tensor(1e-40).dtype == tile.float64, "bool, f64")
    half = tile.to_tensor(BLOCK / (2 * BLOCK))
    tile.static_assert(half.type == tile.float32 and isinstance(half, tile.tensor), "a run-time float32 scalar")
    y = _scaled(tile.to_tensor(x), scale) + half + (big >> 31).to(tile.float32)
    y = tile.expect_zero(y * 0.0, mask) + y
    tile.store(out_ptr + offs, y, mask=mask, )
    total = tile.standard.sum(tile.where(mask, y, 0.0), axis=0)
    tile.atomic_add(out_ptr + n, total)
    u = tile.random.rand(7, offs)
    tile.store(out_ptr + n + 1 + offs, u, mask=mask)


def test_type_names_against_torch():
    n, stride = 300, 3
    base = torch.randn(n * stride)
    x = base[::stride]
    out = torch.zeros(2 * n + 1)
    _typed[(tile.cdiv(n, 128), )](x, out, n, 2.5, stride, BLOCK=128)
    want = x * 2.5 + 1.5
    torch.testing.assert_close(out[:n], want)
    torch.testing.assert_close(out[n], want.sum(), rtol=1e-4, atol=1e-3)
    u = out[n + 1:]
    assert (u >= 0).all() and (u < 1).all() and u.unique().numel() > n // 2


def test_type_names_sm90a(gpu_target):
    gpu_target("sm_90a")
    f = torch.empty(4096, device="meta")
    ptx = _typed.compile(f, torch.empty(8193, device="meta"), 4096, 2.5, 1, BLOCK=1024).asm["ptx"]
    # (stride 1 here: the pointer increments keep the loads and stores vectorized)
    assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx and re.search(r"atom\.[\w.]*global\.add\.f32", ptx)


def test_host_names():
    assert tile.core.tensor is tile.tensor and tile.standard.sum is tile.sum and tile.random.rand is tile.rand
    assert tile.pi32_t == tile.pointer_type(tile.int32)
    assert tile.str_to_ty("*kbf16") == tile.pointer_type(tile.bfloat16) and tile.str_to_ty("u32") == tile.uint32
    assert tile.str_to_ty("constexpr", 3) == tile.constexpr_type(3) != tile.constexpr_type(4)
    assert tile.block_type(tile.float16, [4, 8]).nbytes == 64
    with pytest.raises(tile.TileError, match="no type is named 'f32'"):
        tile.str_to_ty("f32")
    with pytest.raises(AttributeError, match="not in the language yet"):
        tile.atomic_poll  # noqa: B018
    assert not hasattr(tile, "map_elementwise") and not hasattr(tile.core, "condition")
    from tile.core import tensor
    assert tensor is tile.tensor


def test_modules_hold_tritons_names():
    """tile.standard and tile.random hold the names their Triton modules give triton.language."""
    tl = pytest.importorskip("triton.language")
    from tile.frontend.triton_modules import RANDOM, STANDARD
    for module, names in ((tl.standard, STANDARD), (tl.random, RANDOM)):
        want = {n for n in dir(tl) if not n.startswith("_") and getattr(getattr(tl, n), "__module__", "") == module.__name__}
        assert set(names) == want
    for name in dir(tile.core):
        if not name.startswith("_") and name in dir(tl) and hasattr(tl.core, name):
            assert not hasattr(tile.standard, name) or name in STANDARD


@tile.jit
def _count(out, n: tile.tensor, IS_TENSOR: tile.constexpr):
    tile.static_assert(isinstance(n, tile.tensor) == IS_TENSOR, "an int argument is a tensor unless it is 1")
    tile.store(out, n + 1)


def test_an_int_argument_of_1_is_a_constexpr():
    """As Triton's JIT, which specializes an int argument equal to 1 to a constexpr."""
    out = torch.zeros(1, dtype=torch.int32)
    _count[(1, )](out, 5, IS_TENSOR=True)
    assert out.item() == 6
    _count[(1, )](out, 1, IS_TENSOR=False)
    assert out.item() == 2


@tile.jit
def _missing(x, WHICH: tile.constexpr):
    if WHICH == 0:
        tile.atomic_poll(x, 1)
    elif WHICH == 1:
        v = tile.core.map_elementwise(abs, tile.load(x))
    elif WHICH == 2:
        tile.static_assert(tile.str_to_ty("tensordesc<fp32[16]>") is None, "")
    else:
        v = tile.load(x + tile.arange(0, 16))
        tile.expect_zero(v, v > 0.5)


@pytest.mark.parametrize("which, message", [(0, r"tile.atomic_poll \(Triton's tl.atomic_poll\) is not in the language yet"),
                                            (1, r"tile.core.map_elementwise .*not in the language yet"),
                                            (2, "tensor descriptor types are not in the language yet")])
def test_tritons_other_names_are_errors_at_their_line(which, message):
    with pytest.raises(tile.CompilationError, match=message) as e:
        _missing[(1, )](torch.zeros(16), WHICH=which)
    assert f"test_triton_type_names2.py:{_missing.fn.__code__.co_firstlineno + 3 + 2 * which}" in str(e.value)


def test_expect_zero_asserts():
    x = torch.zeros(16)
    _missing[(1, )](x, WHICH=3)
    x[5] = 1.0
    with pytest.raises(tile.DeviceAssertionError, match="expect_zero expected x == 0"):
        _missing[(1, )](x, WHICH=3)


def test_triton_compiles_the_same_source():
    """The kernel renamed to Triton (tests/as_triton.py) compiles with Triton for sm_90a: each
    `static_assert` on types, `isinstance` and `to_tensor` dtypes above holds in Triton too.
    (Not its interpreter: there a float argument is a Python float, not a tl.tensor.)"""
    pytest.importorskip("triton")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))
    from as_triton import triton_sm90
    from library_kernels_on_device import triton_twin

    twin = triton_twin(sys.modules[__name__], ["_scaled", "_typed"])
    got = triton_sm90(twin._typed, [torch.empty(4096), torch.empty(8193), 4096, 2.5, 3], {"BLOCK": 1024, "num_warps": 4},
                      num_stages=3)
    assert "atom.global" in got["ptx"] and got["spill_stores"] == 0
