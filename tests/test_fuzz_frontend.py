"""Frontend inputs a fuzzer found that answered wrong, escaped as Python's own errors or
were refused though a Triton user would write them: the Python subset a kernel may use,
the names it reads from outside (globals, closures, modules) and the errors for the
rest. Each now runs right on the CPU target or raises a `tile.TileError` at its line."""

import types

import pytest
import torch

import tile

SCALE = 2.0


@tile.kernel
def scale_kernel(x, out, B: tile.constexpr):
    o = tile.arange(0, B)
    tile.store(out + o, tile.load(x + o) * SCALE)


def test_global_constant_reassigned(monkeypatch):
    """A global's value was not in the cache keys: reassigning it (in this process, or
    in the next one through the disk cache) ran the kernel compiled for the old one."""
    x, out = torch.rand(8), torch.zeros(8)
    for scale in (2.0, 3.0, float("nan"), 3.0):
        monkeypatch.setitem(globals(), "SCALE", scale)
        scale_kernel[(1,)](x, out, B=8)
        torch.testing.assert_close(out, x * scale, equal_nan=True)
    monkeypatch.setitem(globals(), "SCALE", 5.0)
    tile.Kernel(scale_kernel.fn)[(1,)](x, out, B=8)  # empty in-memory caches: the disk's key
    torch.testing.assert_close(out, x * 5.0)


@tile.func
def double(a):
    return a * 2.0


@tile.func
def triple(a):
    return a * 3.0


lib = types.SimpleNamespace(helper=double)


@tile.kernel
def module_helper_kernel(x, out, B: tile.constexpr):
    o = tile.arange(0, B)
    tile.store(out + o, lib.helper(tile.load(x + o)))


def make_closure_kernel(scale):
    @tile.func
    def times(a):
        return a * scale

    @tile.kernel
    def closure_kernel(x, out, B: tile.constexpr):
        o = tile.arange(0, B)
        tile.store(out + o, times(tile.load(x + o)))

    return closure_kernel


def test_helpers_through_modules_and_closures(monkeypatch):
    """A helper called through a module (`lib.helper(...)`) was left out of the cache key,
    so editing it kept the old code; a kernel's or helper's closure variables were 'not
    defined'."""
    x, out = torch.rand(8), torch.zeros(8)
    module_helper_kernel[(1,)](x, out, B=8)
    torch.testing.assert_close(out, x * 2.0)
    monkeypatch.setattr(lib, "helper", triple)
    tile.Kernel(module_helper_kernel.fn)[(1,)](x, out, B=8)
    torch.testing.assert_close(out, x * 3.0)
    for scale in (2.0, 3.0):
        make_closure_kernel(scale)[(1,)](x, out, B=8)
        torch.testing.assert_close(out, x * scale)
