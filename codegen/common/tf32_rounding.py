"""f32 -> tf32 rounding, the one definition both the loop (CPU) and tensor-core
lowerings of a `tile.dot {input_precision = "tf32"}` use, so that every target
multiplies the same operands.

tf32 keeps f32's sign and exponent and the top 10 of its 23 mantissa bits. The
rounding is to nearest with ties away from zero, as PTX's `cvt.rna.tf32.f32`:
add half of the dropped part to the magnitude bits, then clear them (a carry
out of the mantissa bumps the exponent, and the largest finite values go to
infinity). NaNs pass through unchanged, where the addition could turn a NaN
with a small payload into an infinity.

    %i = arith.bitcast %x : f32 to i32
    %r = arith.andi (arith.addi %i, 0x1000), 0xFFFFE000
    %y = arith.select (arith.cmpf uno, %x, %x), %x, (arith.bitcast %r : i32 to f32)
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

_HALF_DROPPED = 1 << 12
_KEPT = -(1 << 13)  # 0xFFFFE000 as a signed i32


def _like(value_type: ir.Type, elem: ir.Type) -> ir.Type:
    """`value_type` with element type `elem` (the type itself for a scalar)."""
    if isinstance(value_type, ir.ShapedType):
        return ir.RankedTensorType.get(ir.RankedTensorType(value_type).shape, elem)
    return elem


def _splat(value_type: ir.Type, v: int):
    i32 = ir.IntegerType.get_signless(32)
    ty = _like(value_type, i32)
    attr = ir.DenseElementsAttr.get_splat(ty, ir.IntegerAttr.get(i32, v)) if ty != i32 else ir.IntegerAttr.get(i32, v)
    return arith.ConstantOp(ty, attr).result


def round_to_tf32(x: ir.Value) -> ir.Value:
    """`x` (an f32 scalar or tensor) rounded to the nearest tf32, still as f32."""
    ty = x.type
    bits = arith.bitcast(_like(ty, ir.IntegerType.get_signless(32)), x)
    rounded = arith.andi(arith.addi(bits, _splat(ty, _HALF_DROPPED)), _splat(ty, _KEPT))
    nan = arith.cmpf(arith.CmpFPredicate.UNO, x, x)
    return arith.select(nan, x, arith.bitcast(ty, rounded))
