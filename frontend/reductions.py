"""Emitters of the reductions: `sum`, `max`, `min` (one `tile.reduce`), and `argmax`,
`argmin`, composed of two: the extremum, then the first index that holds it.

As in Triton, `axis=None` reduces every dim (one axis after another, last first) and
`keep_dims` keeps each reduced dim with size 1.
"""

from __future__ import annotations

import math

from ..dialects import tile_ops
from . import semantics, unsigned
from .builtins import EMITTERS, SemanticError, _axis, _dtype, _tile, emitter
from .dtypes import float32, int32, uint32
from .values import Tile, describe


def _check_axis(x: Tile, axis, what: str) -> int:
    axis = _axis(axis)
    if axis < 0:
        axis += len(x.shape)
    if not 0 <= axis < len(x.shape):
        raise SemanticError(f"{what}: axis {axis} is out of range for a tile of shape {x.shape}")
    return axis


def _keep_dim(out: Tile, shape: list[int], axis: int) -> Tile:
    """The reduction of a tile of `shape` along `axis` with that dim kept, of size 1."""
    kept = shape[:axis] + [1] + shape[axis + 1:]
    return Tile(tile_ops.splat(out.value, kept) if out.is_scalar else tile_ops.reshape(out.value, kept))


def _reduce_axis(kind: str, x: Tile, axis: int) -> Tile:
    if x.dtype.bits > 1 and x.dtype.is_int_unsigned():
        return _reduce_unsigned(kind, x, axis)
    if not x.dtype.is_float and x.dtype.bits < 32:
        # As in Triton: narrow ints (a mask's too) are summed in int32, so a mask's sum
        # counts and an int8 sum does not wrap; max and min come back in their type.
        out = Tile(tile_ops.reduce(semantics.cast(x, int32).value, axis, kind))
        return out if kind == "sum" else semantics.cast(out, x.dtype)
    if x.dtype.bits < 32 and kind == "sum":
        # As torch: a 16-bit float sum adds up in f32, rounded once (in bf16 the CPU's running
        # sum of 4096 ones stuck at 256, where adding 1 no longer changes it)
        return semantics.cast(Tile(tile_ops.reduce(semantics.cast(x, float32).value, axis, kind)), x.dtype)
    return Tile(tile_ops.reduce(x.value, axis, kind))


def _reduce_unsigned(kind: str, x: Tile, axis: int) -> Tile:
    """An unsigned reduction, as Triton's: a sum in uint32 (narrower ones zero-extended; uint64
    in uint64), wrapping; max and min as the signed reduction of the values with their top bit
    flipped, which orders them as unsigned, flipped back (in their own type)."""
    wide = semantics.cast(x, uint32) if x.dtype.bits < 32 else x
    if kind == "sum":
        return Tile(unsigned.mark(tile_ops.reduce(wide.value, axis, kind)))
    top = 1 << (wide.dtype.bits - 1)
    out = Tile(unsigned.mark(tile_ops.reduce(semantics.binary("^", wide, top).value, axis, kind)))
    return semantics.cast(semantics.binary("^", out, top), x.dtype)


def _operand(x, what: str) -> Tile:
    x = semantics.computable(_tile(x, f"{what}'s operand"), f"{what}'s operand")
    if x.is_scalar:
        raise SemanticError(f"{what} needs a tile, got a scalar")
    return x


def _reduce_axes(kind: str, x: Tile, axis, keep_dims) -> Tile:
    shape = list(x.shape)
    axes = range(len(shape) - 1, -1, -1) if axis is None else [_check_axis(x, axis, kind)]
    out = x
    for a in axes:
        out = _reduce_axis(kind, out, a)
    if keep_dims:
        out = Tile(tile_ops.splat(out.value, [1] * len(shape))) if axis is None else _keep_dim(out, shape, axes[0])
    return out


@emitter("sum")
def _sum(x, axis=None, keep_dims=False, dtype=None):
    # Triton's `dtype=`: the sum accumulates in (and returns) that dtype
    x = _operand(x, "sum")
    return _reduce_axes("sum", x if dtype is None else semantics.cast(x, _dtype(dtype)), axis, keep_dims)


def _extremum(kind):
    def emit(x, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
        """Triton's signature: `return_indices` (third, as Triton's) also gives the first (or,
        not tie_break_left, the last) index of each extremum, as `argmax` does."""
        x = _operand(x, kind)
        for name, flag in (("return_indices", return_indices), ("return_indices_tie_break_left", return_indices_tie_break_left)):
            if not isinstance(flag, (bool, int)):
                raise SemanticError(f"{kind}'s {name} must be a compile-time bool, got {describe(flag)}")
        values = _reduce_axes(kind, x, axis, keep_dims)
        if not return_indices:
            return values
        shape = list(x.shape)
        if axis is None:  # (Triton's: an index into the flattened tile)
            x = Tile(tile_ops.reshape(x.value, [math.prod(shape)]))
        index = _arg_extremum(kind, x, 0 if axis is None else axis, bool(return_indices_tie_break_left), keep_dims)
        if axis is None and keep_dims:
            index = Tile(tile_ops.reshape(index.value, [1] * len(shape)))
        return values, index

    return emit


EMITTERS["max"], EMITTERS["min"] = _extremum("max"), _extremum("min")


def _arg_extremum(kind: str, x, axis, tie_break_left: bool, keep_dims: bool) -> Tile:
    # argmax(x) = the first index i where x[i] == max(x); NaN counts as the extremum (as in
    # torch): max(x) is NaN where x has one, and the NaNs are where x != x.
    x = _operand(x, f"arg{kind}")
    axis, shape = _check_axis(x, axis, f"arg{kind}"), list(x.shape)
    extremum = _keep_dim(_reduce_axis(kind, x, axis), shape, axis)
    hit = semantics.compare("==", x, extremum)
    if x.dtype.is_float:
        nan = semantics.binary("&", semantics.compare("!=", extremum, extremum), semantics.compare("!=", x, x))
        hit = semantics.binary("|", hit, nan)
    index = Tile(tile_ops.arange(0, shape[axis]))
    index = Tile(tile_ops.reshape(index.value, [shape[axis] if d == axis else 1 for d in range(len(shape))]))
    miss = shape[axis] if tie_break_left else -1
    picked = _reduce_axis("min" if tie_break_left else "max", semantics.where(hit, index, miss), axis)
    return _keep_dim(picked, shape, axis) if keep_dims else picked


@emitter("argmax")
def _argmax(x, axis, tie_break_left=True, keep_dims=False):
    return _arg_extremum("max", x, axis, tie_break_left, keep_dims)


@emitter("argmin")
def _argmin(x, axis, tie_break_left=True, keep_dims=False):
    return _arg_extremum("min", x, axis, tie_break_left, keep_dims)
