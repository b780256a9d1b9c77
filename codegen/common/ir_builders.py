"""IR builders both targets' lowerings use: index constants and casts, a memref's flat
view (a Triton pointer's buffer), an `scf.if` guard or select, an `scf.parallel` loop nest, a reduction's combining op,
and the kernels of a module."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, memref, scf

from ...passes.walk import collect

DYN = ir.ShapedType.get_dynamic_size()


def const_index(v: int):
    return arith.ConstantOp(ir.IndexType.get(), v).result


def to_index(v):
    return v if isinstance(v.type, ir.IndexType) else arith.index_cast(ir.IndexType.get(), v)


def flat_view(base):
    """The memref's buffer from its first element on, as a 1-D unit-stride memref (Triton pointers)."""
    mt = ir.MemRefType(base.type)
    meta = memref.ExtractStridedMetadataOp(base)
    layout = ir.StridedLayoutAttr.get(ir.ShapedType.get_dynamic_stride_or_offset(), [1])
    flat_ty = ir.MemRefType.get([DYN], mt.element_type, layout)
    return memref.ReinterpretCastOp(
        flat_ty, meta.base_buffer, [meta.offset], [const_index(1 << 40)], [],
        static_offsets=[ir.ShapedType.get_dynamic_stride_or_offset()], static_sizes=[DYN], static_strides=[1],
    ).result


def if_else(cond, result_type, then_fn, else_fn):
    """scf.if yielding `then_fn()` or `else_fn()` (of `result_type`); with no result type, a guard."""
    op = scf.IfOp(cond, [result_type] if result_type is not None else [], has_else=else_fn is not None)
    with ir.InsertionPoint(op.then_block):
        v = then_fn()
        scf.YieldOp([v] if result_type is not None else [])
    if else_fn is not None:
        with ir.InsertionPoint(op.else_block):
            scf.YieldOp([else_fn()])
    return op.results[0] if result_type is not None else None


def parallel_loop(shape, body):
    """scf.parallel over a static iteration space; `body(indices)` emits the payload."""
    zero, one = const_index(0), const_index(1)
    op = scf.ParallelOp([], [zero] * len(shape), [const_index(d) for d in shape], [one] * len(shape), [])
    block = op.regions[0].blocks.append(*([ir.IndexType.get()] * len(shape)))
    with ir.InsertionPoint(block):
        body(list(block.arguments))
        scf.ReduceOp([], 0)
    return op


def combine(kind, elem, a, b):
    if isinstance(elem, ir.IntegerType):
        return {"sum": arith.addi, "max": arith.maxsi, "min": arith.minsi}[kind](a, b)
    return {"sum": arith.addf, "max": arith.maximumf, "min": arith.minimumf}[kind](a, b)


def kernel_functions(module_op) -> list:
    return [op for op in collect(module_op, {"func.func"}) if "tile.kernel" in op.attributes]
