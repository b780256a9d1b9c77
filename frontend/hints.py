"""Triton's compiler hints: `multiple_of`, `max_contiguous`, `max_constancy` and `assume`.

The first three return their argument, marking what the compiler may assume of it along its
last dim (Triton's `tt.divisibility` / `tt.contiguity` / `tt.constancy`): discardable attributes
on the op that made it (`tile.divisibility = 16`, ...), which `passes/axis_info.py` reads, so
that a load through offsets the compiler cannot see through (`offs % M`) is still vectorized.
As in Triton, a hint that does not hold is the user's bug. `assume(cond)` is checked to be a
boolean and otherwise dropped: nothing downstream reads it yet.
"""

from __future__ import annotations

import math

from mlir import ir

from .builtins import SemanticError, _describe, _tile, emitter
from .values import Pointer, TensorArg, Tile


def _hint(x, values, attribute: str, name: str) -> Tile:
    values = list(values) if isinstance(values, (tuple, list)) else [values]
    if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values):
        raise SemanticError(f"{name} takes positive compile-time integers, got {values!r}")
    if isinstance(x, (Pointer, TensorArg)):
        return _pointer_hint(x, values, attribute, name)
    x = _tile(x, f"{name}'s input")
    if len(values) not in (1, max(len(x.shape), 1)):
        raise SemanticError(f"{name} takes one value or one per dim of its input ({len(x.shape)}), got {len(values)}")
    if x.dtype.name not in ("int32", "int64"):
        raise SemanticError(f"{name} takes an integer tile, got {_describe(x)}")
    owner, value = x.value.owner, ir.IntegerAttr.get(ir.IntegerType.get_signless(64), values[-1])
    if not isinstance(owner, ir.Block):  # (a kernel argument's are the specialization's)
        owner.operation.attributes[attribute] = value
    elif owner.owner is not None and owner.owner.operation.name == "scf.for" and x.value.arg_number > 0:
        # a value the loop carries (a pointer it advances): on the loop, as Triton's `tt.divisibility_arg1`
        owner.owner.operation.attributes[f"{attribute}_arg{x.value.arg_number}"] = value
    return x


def _pointer_hint(x, values, attribute: str, name: str):
    """A hint on a pointer (Triton's, on a tensor of pointers): divisibility is of the addresses,
    in bytes, so the base is taken as that aligned (a pointer cast from an int64, whose
    alignment nothing else tells; a tensor argument's is the specialization's) and the offsets
    as multiples of the elements that many bytes hold; contiguity and constancy are the offsets'."""
    p = x if isinstance(x, Pointer) else Pointer(x, 0)
    if attribute == "tile.divisibility":
        owner = p.base.value.owner
        if not isinstance(owner, ir.Block) and owner.operation.name == "builtin.unrealized_conversion_cast":
            owner.operation.attributes[attribute] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), values[-1])
        size = max(1, p.base.dtype.bits // 8)
        values = [v // math.gcd(v, size) for v in values]
    if isinstance(p.offsets, Tile):
        _hint(p.offsets, values if len(values) == 1 or p.offsets.shape else values[-1:], attribute, name)
    return x


@emitter("multiple_of")
def _multiple_of(x, values):
    return _hint(x, values, "tile.divisibility", "multiple_of")


@emitter("max_contiguous")
def _max_contiguous(x, values):
    return _hint(x, values, "tile.contiguity", "max_contiguous")


@emitter("max_constancy")
def _max_constancy(x, values):
    return _hint(x, values, "tile.constancy", "max_constancy")


@emitter("assume")
def _assume(cond):
    cond = _tile(cond, "assume's condition")
    if cond.dtype.name != "int1":
        raise SemanticError(f"assume takes a boolean condition, got {_describe(cond)}")
    return None
