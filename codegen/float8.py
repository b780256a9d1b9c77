"""float8 (e4m3, e5m2) to wider floats on the GPU (used by `convert-tile-to-gpu` on
every register of a tile): two registers at a time as one `cvt.rn.f16x2.e4m3x2` or
`.e5m2x2` (NVVM's `convert.f8x2.to.f16x2`, sm_89 and later), exact, then each f16 on
to the wanted type: f32 exactly, bf16 through f32, also exactly (float8 values have
at most four significant bits, and bf16 has f32's exponent range). An integer
decode (`decode_float8`, for sm_80 and the CPU) takes about fifteen instructions
an element for e4m3 (e5m2 is f16's top byte: a shift); the cvt takes one for two,
plus the widening.

    %h = nvvm.convert.f8x2.to.f16x2 %pair {srcType = f8E4M3FN} : vector<2xi8> -> vector<2xf16>
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, nvvm, vector

E4M3, E5M2 = "f8E4M3FN", "f8E5M2"


def is_float8(t) -> bool:
    return str(t) in (E4M3, E5M2)


def _to(dst, h):
    """An f16 scalar as float type `dst` (bf16 through f32)."""
    return h if isinstance(dst, ir.F16Type) else _from_f32(dst, arith.extf(ir.F32Type.get(), h))


def _from_f32(dst, v):
    width = ir.FloatType(dst).width
    return v if isinstance(dst, ir.F32Type) else (arith.extf(dst, v) if width > 32 else arith.truncf(dst, v))


def widen_float8(values: list, dst, cvt: bool = True) -> list:
    """The float8 scalars `values` (all of one type) as `dst` (f16, bf16 or f32) scalars;
    without `cvt` (sm_80) by integer decode."""
    if not cvt:
        return [decode_float8(v, dst) for v in values]
    i8, f16 = ir.IntegerType.get_signless(8), ir.F16Type.get()
    src = values[0].type
    out = []
    for j in range(0, len(values), 2):
        pair = values[j : j + 2]
        pair = [arith.bitcast(i8, v) for v in pair + pair[:1] * (2 - len(pair))]  # an odd last one goes twice
        halves = nvvm.ConvertF8x2ToF16x2Op(ir.VectorType.get([2], f16), vector.from_elements(
            ir.VectorType.get([2], i8), pair), ir.TypeAttr.get(src)).result
        out.extend(_to(dst, vector.extract(halves, [], [k])) for k in range(min(2, len(values) - j)))
    return out


def decode_float8(x, dst):
    """A float8 scalar as `dst`, by integer decode (`expand_float8.py` says how); where
    `cvt` has no float8 form (sm_80) and on the CPU. e5m2 is the top byte of an f16."""
    i8, i16, i32 = (ir.IntegerType.get_signless(w) for w in (8, 16, 32))
    f32 = ir.F32Type.get()
    if str(x.type) == E5M2:
        wide = arith.shli(arith.extui(i16, arith.bitcast(i8, x)), arith.ConstantOp(i16, 8).result)
        return _to(dst, arith.bitcast(ir.F16Type.get(), wide))

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
    return _from_f32(dst, v)
