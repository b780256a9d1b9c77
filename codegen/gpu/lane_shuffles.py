"""The combining steps both GPU reductions share (`distributed_reduce.py`, and
`distributed_mma_reduce.py` on tensor-core rows): within a thread's registers, then
across lanes by `shuffle.xor` butterflies."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, gpu

from ..common.ir_builders import combine
from .register_vectors import i32


def shuffle_combine(kind, elem, v, lane_stride: int, lanes: int):
    f32 = ir.F32Type.get()
    wide = elem if isinstance(elem, ir.IntegerType) or ir.FloatType(elem).width >= 32 else f32
    x = v if wide == elem else arith.extf(wide, v)
    step = 1
    while step < lanes:
        other = gpu.ShuffleOp(x, i32(step * lane_stride), i32(32), gpu.ShuffleMode.XOR).results[0]
        x = combine(kind, wide, x, other)
        step *= 2
    return x if wide == elem else arith.truncf(elem, x)


def in_thread_combine(kind, elem, a, b):
    """combine, with sums open to fma contraction (a sum of squares becomes an fma chain)."""
    if kind == "sum" and not isinstance(elem, ir.IntegerType):
        return arith.addf(a, b, fastmath=ir.Attribute.parse("#arith.fastmath<contract>"))
    return combine(kind, elem, a, b)
