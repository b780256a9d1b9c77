"""What a name holds while a kernel is being emitted.

Run-time values are `Tile`s (an SSA value: a scalar or a ranked tensor);
tensor arguments are `TensorArg`s (a strided memref); `tensor + offsets` is a
`Pointer`. Anything else (ints, floats, dtypes, tuples, functions) is a
compile-time Python value and is folded.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from . import dtypes
from .unsigned import is_unsigned


@dataclass
class Tile:
    value: ir.Value

    @property
    def type(self) -> ir.Type:
        return self.value.type

    @property
    def shape(self) -> list[int]:
        t = self.value.type
        return list(t.shape) if isinstance(t, ir.RankedTensorType) else []

    @property
    def is_scalar(self) -> bool:
        return not isinstance(self.value.type, ir.RankedTensorType)

    @property
    def elem(self) -> ir.Type:
        t = self.value.type
        return t.element_type if isinstance(t, ir.RankedTensorType) else t

    @property
    def dtype(self) -> dtypes.dtype:
        dt = dtypes.from_mlir(self.elem)
        return dtypes.UNSIGNED[dt] if dt in dtypes.UNSIGNED and is_unsigned(self.value) else dt


@dataclass
class TensorArg:
    """A kernel argument that is a torch tensor: a strided memref of its rank."""

    value: ir.Value
    name: str
    wide: bool = False  # offsets may pass int32 (`launch_binder.wide`): .stride() and .size() are int64
    unsigned: bool = False  # a uint8 tensor (its memref's elements are the signless i8)

    @property
    def dtype(self) -> dtypes.dtype:
        dt = dtypes.from_mlir(ir.MemRefType(self.value.type).element_type)
        return dtypes.UNSIGNED[dt] if self.unsigned else dt

    @property
    def rank(self) -> int:
        return ir.MemRefType(self.value.type).rank


@dataclass
class Pointer:
    """`tensor + offsets`: element offsets (a scalar or tile of ints) from the tensor's first element."""

    base: TensorArg
    offsets: Tile | int


class Aggregate:
    """A run-time value made of several (a block pointer: its offsets), which loops and ifs
    carry as the SSA values `carried()` lists and rebuild with `rebuilt`; what they do not
    carry must stay the same across the control flow (`check_carry` says why not)."""

    def carried(self) -> list[ir.Value]:
        return []

    def rebuilt(self, values: list[ir.Value]) -> Aggregate:
        return self

    def check_carry(self, new) -> None:
        """Raise a TileError if `new` cannot take this value's place across control flow."""

    def attribute(self, name: str):
        """`value.name` in a kernel (a method is a function flagged `tile_method`)."""
        raise AttributeError(name)


def describe(v) -> str:
    """v as an error message names it."""
    if isinstance(v, Tile):
        return f"a {'scalar' if v.is_scalar else 'tile'} of {v.dtype!r}"
    if isinstance(v, TensorArg):
        return f"tensor argument '{v.name}'"
    if isinstance(v, Pointer):
        return f"a pointer into tensor argument '{v.base.name}' (tile.load reads it)"
    return repr(v)
