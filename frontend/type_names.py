"""Triton's type names that kernels write in annotations and checks, and the dtype names of
formats tile does not hold: `tile.tuple` (Python's tuple: `isinstance(x, tile.tuple)`,
`tile.tuple((a, b))`), `tile.const` (the annotation of a pointer to read-only data, accepted
as Triton's; tile does not check that such a tensor is never stored to), `tile.void` and the
float8 formats `float8e4b15`, `float8e4b8`, `float8e5b16`, whose use as a dtype is an error at
its line that says why.

Also Triton's type objects (`triton/language/core.py`): `tile.tensor` (the class of run-time
values, for annotations and `isinstance`), `block_type` (what `x.type` of a tile is),
`constexpr_type`, `pi32_t` and `str_to_ty`; and the names of Triton's language that tile
has not (`NOT_YET`), whose use is an error that says so."""

from __future__ import annotations

import builtins
from dataclasses import dataclass

from .dtypes import dtype, int1, pointer_type
from .errors import TileError
from . import dtypes

tuple = builtins.tuple  # noqa: A001  (Triton's tl.tuple: the kernel language's tuples are Python's)


class const:
    """The annotation of a parameter whose tensor a kernel only reads (Triton's `tl.const`)."""


@dataclass(frozen=True)
class UnsupportedDtype:
    """A dtype name of Triton's that tile has no type for: naming it is fine, using it an error."""

    name: str
    reason: str

    def __repr__(self) -> str:
        return f"tile.{self.name}"

    def error(self) -> str:
        return f"{self!r} cannot be used as a dtype: {self.reason}"


_FLOAT8 = "tile's float8 types are float8e4m3 (Triton's float8e4nv) and float8e5m2 (float8e5)"
void = UnsupportedDtype("void", "it is the type of no value (Triton's, for functions that return nothing)")
float8e4b15 = UnsupportedDtype("float8e4b15", f"{_FLOAT8}; e4b15 is Triton's software format for GPUs before sm_89, "
                                              "deprecated as a dot operand on sm_90")
float8e4b8 = UnsupportedDtype("float8e4b8", f"{_FLOAT8}; e4b8 (torch.float8_e4m3fnuz) is AMD's, which Triton "
                                            "rejects on NVIDIA GPUs ('type fp8e4b8 not supported in this architecture')")
float8e5b16 = UnsupportedDtype("float8e5b16", f"{_FLOAT8}; e5b16 (torch.float8_e5m2fnuz) is AMD's, which Triton "
                                              "rejects on NVIDIA GPUs ('type fp8e5b16 not supported in this architecture')")


class tensor:
    """Triton's `tl.tensor`: the annotation of a run-time parameter or return, and in a kernel
    `isinstance(x, tile.tensor)`, true of tiles, run-time scalars and pointers, false of
    compile-time values and tensor descriptors (as Triton's)."""


@dataclass(frozen=True)
class block_type:
    """Triton's `tl.block_type(element_ty, shape)`: the type of a tile (`x.type`; a 0-d value's
    `.type` is its dtype), equal to another of the same element type and shape."""

    element_ty: dtype | pointer_type
    shape: tuple

    def __post_init__(self):
        if not isinstance(self.element_ty, (dtype, pointer_type)):
            raise TileError(f"block_type's element_ty must be a dtype such as tile.float32, got {self.element_ty!r}")
        if not isinstance(self.shape, (tuple, list)) or not self.shape or not all(type(d) is int for d in self.shape):
            raise TileError(f"block_type's shape must be a non-empty list of ints, got {self.shape!r}")
        object.__setattr__(self, "shape", tuple(self.shape))

    def __repr__(self) -> str:
        return f"tile.block_type({self.element_ty!r}, {list(self.shape)})"

    @property
    def scalar(self):
        return self.element_ty

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * (self.element_ty.bits // 8 if isinstance(self.element_ty, dtype) else 8)

    def is_block(self) -> bool:
        return True

    def is_ptr(self) -> bool:
        return False

    def get_block_shapes(self) -> tuple:
        return self.shape

    def with_element_ty(self, element_ty) -> block_type:
        return block_type(element_ty, self.shape)


@dataclass(frozen=True)
class constexpr_type:
    """Triton's `tl.constexpr_type(value)`: the type of a compile-time value."""

    value: object

    def __repr__(self) -> str:
        return f"tile.constexpr_type({self.value!r})"


pi32_t = pointer_type(dtypes.int32)

_SIGNATURE_TYPES = {"fp8e4nv": dtypes.float8e4nv, "fp8e5": dtypes.float8e5, "fp8e4b8": float8e4b8, "fp8e5b16": float8e5b16,
                    "fp8e4b15": float8e4b15, "fp16": dtypes.float16, "bf16": dtypes.bfloat16, "fp32": dtypes.float32,
                    "fp64": dtypes.float64, "i1": int1, "i8": dtypes.int8, "i16": dtypes.int16, "i32": dtypes.int32,
                    "i64": dtypes.int64, "u1": int1, "u8": dtypes.uint8, "u16": dtypes.uint16, "u32": dtypes.uint32,
                    "u64": dtypes.uint64, "B": int1}


def str_to_ty(name, c=None):
    """Triton's `tl.str_to_ty`: the type a signature string names ("fp32", "*fp16", "*kbf16" (a
    pointer to read-only data: tile's pointers have no const), "i64", "constexpr" with its value c)."""
    if not isinstance(name, str) or not name:
        raise TileError(f"str_to_ty takes a type's name such as 'fp32' or '*fp16', got {name!r}; "
                        "tuple types are not in the language yet")
    if name[0] == "*":
        return pointer_type(str_to_ty(name[2:] if name[1:2] == "k" else name[1:], c))
    if name.startswith("tensordesc"):
        raise TileError(f"str_to_ty({name!r}): tensor descriptor types are not in the language yet")
    if name.startswith("constexpr"):
        return constexpr_type(c)
    if name not in _SIGNATURE_TYPES:
        raise TileError(f"str_to_ty: no type is named {name!r} (names: {', '.join(_SIGNATURE_TYPES)}, '*' before one, "
                        "'constexpr')")
    return _SIGNATURE_TYPES[name]


# Triton's type constructors a kernel may call on compile-time values, and the types whose methods it may call.
COMPILE_TIME_TYPES = (pointer_type, block_type, constexpr_type, str_to_ty)
TYPES = (dtype, pointer_type, block_type, constexpr_type)

# Names of Triton's language that tile has not, and why (a `tile.` attribute error, at the kernel's line).
NOT_YET = {
    "tensor_descriptor_type": "tensor descriptors' types (use isinstance(d, tile.tensor_descriptor))",
    "tuple_type": "tuples' types (a kernel's tuples are Python's: isinstance(t, tile.tuple))",
    "slice": "Triton's slice values (tiles are indexed with `:` and None only)",
    "map_elementwise": "map_elementwise (write the scalar function's body on the tiles)",
    "atomic_poll": "atomic_poll (a loop of tile.atomic_load would be one)",
    "condition": "tl.condition loops (`while` is not in the language yet either)",
    "target_info": "target_info (a kernel's target is the launch's; branch on a constexpr instead)",
    "aggregate_replace": "aggregates (@tl.aggregate classes)",
}


class NotInLanguage(AttributeError, TileError):
    """A Triton name tile has not: an AttributeError on the host (so `hasattr` is False), a
    CompilationError at its line in a kernel."""


def missing(module: str, name: str) -> AttributeError:
    """The error for `module.name`: Triton's names that tile lacks say so."""
    if name in NOT_YET:
        return NotInLanguage(f"{module}.{name} (Triton's tl.{name}) is not in the language yet: {NOT_YET[name]}",
                             name=name)
    return AttributeError(f"module '{module}' has no attribute '{name}'", name=name)
