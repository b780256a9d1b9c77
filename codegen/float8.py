"""float8 e4m3 to wider floats on the GPU (used by `convert-tile-to-gpu` on every
register of a tile): two registers at a time as one `cvt.rn.f16x2.e4m3x2`
(NVVM's `convert.f8x2.to.f16x2`, sm_89 and later), exact, then each f16 on to the
wanted type: f32 exactly, bf16 through f32, also exactly (an e4m3 value has four
significant bits and exponents within bf16's). An integer decode (`decode_float8`, for
sm_80 and the CPU) takes about fifteen instructions an element; this takes one for two,
plus the widening.

    %h = nvvm.convert.f8x2.to.f16x2 %pair {srcType = f8E4M3FN} : vector<2xi8> -> vector<2xf16>
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, nvvm, vector

F8 = "f8E4M3FN"


def is_float8(t) -> bool:
    return str(t) == F8


def widen_float8(values: list, dst, cvt: bool = True) -> list:
    """The e4m3 scalars `values` as `dst` (f16, bf16 or f32) scalars; without `cvt` (sm_80)
    by integer decode."""
    if not cvt:
        return [decode_float8(v, dst) for v in values]
    i8, f16, f32 = ir.IntegerType.get_signless(8), ir.F16Type.get(), ir.F32Type.get()
    out = []
    for j in range(0, len(values), 2):
        pair = values[j : j + 2]
        pair = [arith.bitcast(i8, v) for v in pair + pair[:1] * (2 - len(pair))]  # an odd last one goes twice
        halves = nvvm.ConvertF8x2ToF16x2Op(ir.VectorType.get([2], f16), vector.from_elements(
            ir.VectorType.get([2], i8), pair), ir.TypeAttr.get(ir.Type.parse(F8))).result
        for k in range(min(2, len(values) - j)):
            h = vector.extract(halves, [], [k])
            if isinstance(dst, ir.F16Type):
                out.append(h)
            elif isinstance(dst, ir.F32Type):
                out.append(arith.extf(f32, h))
            else:
                out.append(arith.truncf(dst, arith.extf(f32, h)))
    return out


def decode_float8(x, dst):
    """An e4m3 scalar as `dst`, by integer decode (`expand_float8.py` says how); where
    `cvt` has no e4m3 form (sm_80) and on the CPU."""
    i8, i32, f32 = ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(32), ir.F32Type.get()

    def c(v):
        return arith.ConstantOp(i32, v).result

    u = arith.extui(i32, arith.bitcast(i8, x))
    e, m = arith.andi(arith.shrui(u, c(3)), c(15)), arith.andi(u, c(7))
    normal = arith.shli(arith.addi(m, c(8)), e)
    mag = arith.select(arith.cmpi(arith.CmpIPredicate.ugt, e, c(0)), normal, arith.shli(m, c(1)))
    v = arith.mulf(arith.uitofp(f32, mag), arith.ConstantOp(f32, 2.0 ** -10).result)
    v = arith.select(arith.cmpi(arith.CmpIPredicate.uge, u, c(128)), arith.negf(v), v)
    nan = arith.cmpi(arith.CmpIPredicate.eq, arith.andi(u, c(127)), c(127))
    v = arith.select(nan, arith.ConstantOp(f32, float("nan")).result, v)
    return v if isinstance(dst, ir.F32Type) else (arith.extf(dst, v) if ir.FloatType(dst).width > 32 else arith.truncf(dst, v))
