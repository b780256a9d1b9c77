"""Pointers made from integers (Triton's `x.to(tl.pointer_type(tl.float16))`): an int64 read
from an array of addresses (tutorial 08's grouped GEMM) becomes a pointer to its first element,
which loads, stores, atomics, pointer arithmetic and tensor descriptors take as they take a
tensor argument.

The pointer is a 1-D memref (a tensor argument's type) whose descriptor holds the address:
`llvm.inttoptr`, the descriptor built with `llvm.insertvalue` (offset 0, unit stride, a size
of 2**62 elements: nothing bounds it, as nothing bounds Triton's), and an
`unrealized_conversion_cast` to the memref, which the memref-to-LLVM lowering of either
target folds away (`reconcile-unrealized-casts`). Its alignment is not known: accesses through
it are vectors only where `tile.multiple_of(pointer, d)` promises d-byte aligned addresses.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, llvm

from . import dtypes
from .builtin_registry import EMITTERS
from .semantics import SemanticError
from .values import Pointer, TensorArg, Tile, describe

_UNBOUNDED = 1 << 62


def pointer_from_int(x, element: dtypes.dtype) -> TensorArg:
    """`x.to(tile.pointer_type(element))` for a scalar int64 `x`."""
    if isinstance(x, (TensorArg, Pointer)):
        raise SemanticError(f"cannot cast {describe(x)} to a pointer type: it is a pointer already (a pointer of "
                            "another element type is not in the language yet)")
    if not isinstance(x, Tile) or x.dtype != dtypes.int64:
        raise SemanticError(f"only an int64 converts to a pointer (an address: Triton's int-to-pointer cast), got "
                            f"{describe(x)}")
    if not x.is_scalar:
        raise SemanticError("a tile of addresses cannot be cast to pointers yet (a tile of pointers); load the "
                            "addresses one at a time and cast each scalar")
    if element.is_float and element.bits == 1 or element not in dtypes.ALL:
        raise SemanticError(f"pointer_type's element must be a tile dtype, got {element!r}")
    i64 = ir.IntegerType.get_signless(64)
    ptr = llvm.IntToPtrOp(llvm.PointerType.get(), x.value).result
    one_dim = ir.Type.parse("!llvm.array<1 x i64>")
    struct = llvm.StructType.get_literal([ptr.type, ptr.type, i64, one_dim, one_dim])
    desc = llvm.UndefOp(struct).result
    for at, v in (([0], ptr), ([1], ptr), ([2], arith.constant(i64, 0)), ([3, 0], arith.constant(i64, _UNBOUNDED)),
                  ([4, 0], arith.constant(i64, 1))):
        desc = llvm.InsertValueOp(desc, v, at).result
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    layout = ir.StridedLayoutAttr.get(dyn, [dyn])
    memref_type = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], element.to_mlir(), layout)
    base = ir.Operation.create("builtin.unrealized_conversion_cast", [memref_type], [desc]).results[0]
    return TensorArg(base, CAST_NAME)


CAST_NAME = "a pointer cast from an int64"


def is_cast_pointer(base: TensorArg) -> bool:
    owner = base.value.owner
    return not isinstance(owner, ir.Block) and owner.operation.name == "builtin.unrealized_conversion_cast"


def tma_aligned(base: Pointer, strides: list) -> None:
    """`make_tensor_descriptor` on a pointer cast from an int64: Triton's descriptors require
    (TMA does) a 16-byte aligned base and strides but the last of multiples of 16 bytes, which
    nothing else tells of a loaded address and leading dimension; taken as hints, as Triton
    takes them, so that the descriptor's accesses move 16-byte runs. (A stride that breaks
    the rule breaks it on a GPU alone: the CPU target reads element by element.)"""
    if not is_cast_pointer(base.base):
        return
    multiple_of = EMITTERS["multiple_of"]
    multiple_of(base.base, 16)
    size = max(1, base.base.dtype.bits // 8)
    for s in strides[:-1]:
        if isinstance(s, Tile):
            multiple_of(s, max(1, 16 // size))
