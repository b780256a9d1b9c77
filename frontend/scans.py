"""Emitters of Triton's scans and reductions by a combine function: `associative_scan`,
`cumsum`, `cumprod` (one `tile.scan`), and `reduce`, `xor_sum`, `reduce_or` (one
`tile.reduce_region`).

The combine function is a `@tile.jit` / `@tile.kernel` / `@tile.func` function of the
kernel's (Triton's `@triton.jit` one): it takes 2n scalars, the accumulated values of the n
inputs and then the next ones, and returns n (one, or a tuple). It is emitted once, into
the op's region, with the scalars as its arguments.
"""

from __future__ import annotations

import math

from mlir import ir

from ..dialects.combine_ops import MAX_OPERANDS, combine_block, combine_yield, reduce_region, scan
from ..dialects import tile_ops
from . import builtin_registry, semantics
from .builtins import SemanticError, _dtype, _tile, emitter
from .dtypes import int32
from .reductions import _check_axis, _keep_dim
from .values import Tile, describe


def _inputs(input, what: str) -> tuple[list[Tile], bool]:
    """The input tiles, and whether they came as a tuple (the result is one then)."""
    is_tuple = isinstance(input, (tuple, list))
    tiles = [_tile(t, f"{what}'s input") for t in (input if is_tuple else [input])]
    if not tiles or len(tiles) > MAX_OPERANDS:
        raise SemanticError(f"{what} takes a tile or a tuple of 1 to {MAX_OPERANDS} tiles, got {len(tiles)}")
    for t in tiles:
        semantics.computable(t, f"{what}'s input")
        if t.is_scalar:
            raise SemanticError(f"{what} needs tiles, got a scalar")
        if t.dtype.bits > 1 and t.dtype.is_int_unsigned():
            raise SemanticError(f"{what} of a {t.dtype!r} tile is not in the language yet: convert it first "
                                "(x.to(tile.int32))")
        if t.shape != tiles[0].shape:
            raise SemanticError(f"{what}'s inputs must have one shape, got {[x.shape for x in tiles]}")
    return tiles, is_tuple


def _fill_region(op, tiles: list[Tile], combine, what: str) -> None:
    """Emit `combine(*accs, *xs)` into the op's region, its results checked against the inputs."""
    block, n = combine_block(op), len(tiles)
    with ir.InsertionPoint(block):
        out = combine(*[Tile(a) for a in block.arguments])
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(outs) != n:
            raise SemanticError(f"{what}'s combine_fn must return {n} value{'s' * (n > 1)} (one per input), "
                                f"got {len(outs)}")
        values = []
        for i, (v, t) in enumerate(zip(outs, tiles)):
            if isinstance(v, (bool, int, float)):
                v = semantics.constant(v, t.dtype)
            if not isinstance(v, Tile) or not v.is_scalar or v.dtype != t.dtype:
                got = f"a {v.dtype!r} {'scalar' if v.is_scalar else 'tile'}" if isinstance(v, Tile) else describe(v)
                raise SemanticError(f"{what}'s combine_fn must return {t.dtype!r} scalars (its inputs'), got {got} "
                                    f"for result {i}")
            values.append(v.value)
        combine_yield(values)


def _combine_fn(fn, what: str):
    helper = getattr(fn, "tile_helper", None)
    if helper is None:
        raise SemanticError(f"{what}'s combine_fn must be a @tile.jit (or @tile.func) function, got {describe(fn)}")
    return lambda *args: builtin_registry.inline_helper(helper, list(args), {})


def _binary(op: str):
    """The combine of the standard library's scans and reductions (`a + b`, ...)."""
    return lambda a, b: semantics.binary(op, a, b)


def _scan(input, axis, combine, reverse, what: str):
    tiles, is_tuple = _inputs(input, what)
    axis = _check_axis(tiles[0], axis, what)
    if not isinstance(reverse, (bool, int)):
        raise SemanticError(f"{what}'s reverse must be a compile-time bool, got {describe(reverse)}")
    op = scan([t.value for t in tiles], axis, bool(reverse))
    _fill_region(op, tiles, combine, what)
    out = tuple(Tile(r) for r in op.results)
    return out if is_tuple else out[0]


@emitter("associative_scan")
def _associative_scan(input, axis, combine_fn, reverse=False):
    return _scan(input, axis, _combine_fn(combine_fn, "associative_scan"), reverse, "associative_scan")


def _accumulated(x, dtype, what: str) -> Tile:
    """x in the dtype its sum or product accumulates in (Triton's `_pick_sum_dtype`): `dtype`
    if given, else int32 for narrower ints (a mask's cumsum counts), else its own."""
    x = _tile(x, f"{what}'s input")
    if dtype is not None:
        return semantics.cast(x, _dtype(dtype))
    if not x.dtype.is_float and x.dtype.bits < 32 and x.dtype.signed:  # (bool too; uint8 is refused)
        return semantics.cast(x, int32)
    return x


@emitter("cumsum")
def _cumsum(input, axis=0, reverse=False, dtype=None):
    return _scan(_accumulated(input, dtype, "cumsum"), axis, _binary("+"), reverse, "cumsum")


@emitter("cumprod")
def _cumprod(input, axis=0, reverse=False, dtype=None):
    return _scan(_accumulated(input, dtype, "cumprod"), axis, _binary("*"), reverse, "cumprod")


def _reduce(input, axis, combine, keep_dims, what: str):
    tiles, is_tuple = _inputs(input, what)
    shape = tiles[0].shape
    if axis is None:  # (as Triton: every dim at once, the tiles raveled)
        values, axis_ = [tile_ops.reshape(t.value, [math.prod(shape)]) if len(shape) > 1 else t.value for t in tiles], 0
    else:
        axis_ = _check_axis(tiles[0], axis, what)
        values = [t.value for t in tiles]
    op = reduce_region(values, axis_)
    _fill_region(op, tiles, combine, what)
    out = [Tile(r) for r in op.results]
    if keep_dims:
        out = [Tile(tile_ops.splat(o.value, [1] * len(shape))) if axis is None else _keep_dim(o, shape, axis_)
               for o in out]
    return tuple(out) if is_tuple else out[0]


@emitter("reduce")
def _reduce_fn(input, axis, combine_fn, keep_dims=False):
    return _reduce(input, axis, _combine_fn(combine_fn, "reduce"), keep_dims, "reduce")


def _int_reduction(name: str, op: str):
    def emit(input, axis=None, keep_dims=False):
        x = _tile(input, f"{name}'s input")
        if x.dtype.is_float:
            raise SemanticError(f"{name} only supported for integers, got a {x.dtype!r} tile")
        return _reduce(x, axis, _binary(op), keep_dims, name)

    return emit


emitter("xor_sum")(_int_reduction("xor_sum", "^"))
emitter("reduce_or")(_int_reduction("reduce_or", "|"))
