"""Emitters of the shape changes: `reshape`, `broadcast_to`, `trans`/`permute`, `ravel`,
`expand_dims` (the tile ops `tile.reshape`, `tile.broadcast`, `tile.trans`)."""

from __future__ import annotations

import math

from ..dialects import tile_ops
from . import semantics
from .builtins import SemanticError, _axis, _const_int, _shape, _tile, emitter
from .dtypes import int32
from .values import Tile


@emitter("reshape")
def _reshape(x, *shape, can_reorder=False):
    """x in another shape: `reshape(x, (a, b))` or Triton's `reshape(x, a, b)` (`can_reorder`
    accepted: the order is always kept)."""
    shape = shape[0] if len(shape) == 1 else shape
    x, shape = _tile(x, "reshape's operand"), _shape(shape, "shape")
    if math.prod(shape) != math.prod(x.shape):  # a scalar's shape is [] : one element
        raise SemanticError(f"cannot reshape a tile of shape {x.shape} to {shape}")
    if x.is_scalar:
        return Tile(tile_ops.splat(x.value, shape))
    return Tile(tile_ops.reshape(x.value, shape))


@emitter("ravel")
def _ravel(x):
    x = _tile(x, "ravel's operand")
    return _reshape(x, (math.prod(x.shape),))


@emitter("expand_dims")
def _expand_dims(x, axis):
    """x with a dim of size 1 inserted at each of `axis` (an int or a tuple), as numpy's."""
    x = _tile(x, "expand_dims's operand")
    axes = [_axis(a) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    rank = len(x.shape) + len(axes)
    axes = sorted(a + rank if a < 0 else a for a in axes)
    if len(set(axes)) != len(axes) or any(not 0 <= a < rank for a in axes):
        raise SemanticError(f"expand_dims: axes {axis} are out of range or repeated for a result of rank {rank}")
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return _reshape(x, tuple(shape))


def permute_dims(x, dims, what: str) -> Tile:
    """x with its dims permuted: result dim k is dim dims[k] of x; no dims: a 2-D transpose."""
    x = _tile(x, f"{what}'s operand")
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    rank = len(x.shape)
    if not dims:
        if rank != 2:
            raise SemanticError(f"{what} without dims transposes a 2-D tile; give the dims for a rank-{rank} tile")
        dims = (1, 0)
    perm = [_const_int(d, f"{what}'s dims") for d in dims]
    perm = [d + rank if -rank <= d < 0 else d for d in perm]  # (torch's negative dims; no other wrapping)
    if sorted(perm) != list(range(rank)):
        raise SemanticError(f"{what}'s dims {tuple(dims)} are not a permutation of the {rank} dims of a tile of shape {x.shape}")
    return x if perm == sorted(perm) else Tile(tile_ops.trans(x.value, perm))


@emitter("trans")
def _trans(x, *dims):
    return permute_dims(x, dims, "trans")


@emitter("permute")
def _permute(x, *dims):
    return permute_dims(x, dims, "permute")


@emitter("broadcast_to")
def _broadcast_to(x, shape):
    return semantics.broadcast_to(_tile(x, "broadcast_to's operand"), _shape(shape, "shape"))


@emitter("join")
def _join(a, b):
    """Triton's `join`: a and b (broadcast to one shape) stacked along a new last dim of 2."""
    a, b = _tile(a, "join's a"), _tile(b, "join's b")
    if a.dtype != b.dtype:
        raise SemanticError(f"join needs operands of one dtype, got {a.dtype!r} and {b.dtype!r}")
    common = semantics.broadcast_shapes(a.shape, b.shape) if (a.shape or b.shape) else []
    a, b = semantics.broadcast_to(a, common), semantics.broadcast_to(b, common)
    shape = list(common) + [2]
    first = semantics.compare("==", Tile(tile_ops.arange(0, 2)), 0)
    first = semantics.broadcast_to(_reshape(first, tuple([1] * len(common) + [2])), shape)
    halves = [semantics.broadcast_to(_reshape(v, tuple(common) + (1,)), shape) for v in (a, b)]
    return semantics.where(first, *halves)


@emitter("split")
def _split(x):
    """Triton's `split`: a tile whose last dim is 2 as its two halves x[..., 0] and x[..., 1]
    (each a `gather` at a constant index along that dim)."""
    x = _tile(x, "split's operand")
    if not x.shape or x.shape[-1] != 2:
        raise SemanticError(f"split needs a tile whose last dim is 2, got shape {x.shape}")
    pick = tuple(x.shape[:-1]) + (1,)
    halves = []
    for i in (0, 1):
        index = semantics.constant(i, int32, list(pick))
        half = Tile(tile_ops.gather(x.value, index.value, len(x.shape) - 1))
        halves.append(_reshape(half, tuple(x.shape[:-1])) if len(x.shape) > 1 else Tile(half.value))
    return tuple(halves)


@emitter("interleave")
def _interleave(a, b):
    """Triton's `interleave`: a and b alternating along their last dim."""
    joined = _join(a, b)
    return _reshape(joined, tuple(joined.shape[:-2]) + (joined.shape[-2] * 2,))
