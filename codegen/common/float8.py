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


# Per format: mantissa bits, exponent bias, its largest finite code, and the code a value past
# that rounds to, as torch converts: e4m3 (no inf) saturates to ±448, e5m2 overflows to ±inf.
_ENCODING = {E4M3: (3, 7, 0x7E, 0x7E), E5M2: (2, 15, 0x7B, 0x7C)}


def _as_f32(x):
    """A float scalar as f32: exactly from 16 bits, rounded from f64 (as torch narrows f64
    through f32); canonicalization may have folded the frontend's extf into the truncf."""
    width = ir.FloatType(x.type).width
    return x if width == 32 else (arith.extf if width < 32 else arith.truncf)(ir.F32Type.get(), x)


def encode_float8(x, dst):
    """An f32 scalar as float8 type `dst`, by integer encode (sm_80 and the CPU): the f32 bits
    rounded to the format's mantissa, nearest even (a normal result), or |x| scaled to units of
    the smallest subnormal and rounded by adding 2^23 (a subnormal one); past the largest finite
    value the overflow code, NaN as NaN (0x7f with x's sign), as torch's `.to(float8)`."""
    mant, bias, largest, overflow = _ENCODING[str(dst)]
    i8, i32, f32 = ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(32), ir.F32Type.get()
    shift = 23 - mant

    def c(v):
        return arith.ConstantOp(i32, v).result

    def lt(a, b):
        return arith.cmpi(arith.CmpIPredicate.ult, a, b)

    x = _as_f32(x)
    bits = arith.bitcast(i32, x)
    sign = arith.andi(arith.shrui(bits, c(24)), c(0x80))
    a = arith.andi(bits, c(0x7FFFFFFF))
    rounded = arith.shrui(arith.addi(arith.addi(a, c((1 << (shift - 1)) - 1)), arith.andi(arith.shrui(a, c(shift)), c(1))), c(shift))
    rebias = (127 - bias) << mant  # f32's exponent bias to the format's, in units of its mantissa
    normal = arith.subi(rounded, c(rebias))
    scaled = arith.mulf(arith.bitcast(f32, a), arith.ConstantOp(f32, 2.0 ** (bias - 1 + mant)).result)
    tiny = arith.subi(arith.bitcast(i32, arith.addf(scaled, arith.ConstantOp(f32, 2.0**23).result)), c(0x4B000000))
    code = arith.select(lt(a, c((128 - bias) << 23)), tiny, normal)
    code = arith.select(lt(c(largest + rebias), rounded), c(overflow), code)
    code = arith.select(lt(c(0x7F800000), a), c(0x7F), code)
    return arith.bitcast(dst, arith.trunci(i8, arith.ori(code, sign)))


def narrow_float8(values: list, dst, cvt: bool = True) -> list:
    """The f32 scalars `values` as float8 type `dst` scalars, as `encode_float8` rounds them:
    two at a time by `cvt.rn.satfinite.e4m3x2.f32` (`.e5m2x2`; sm_89 and later), whose
    saturation an e5m2 result undoes past its largest value (torch's overflows to inf);
    without `cvt` (sm_80) by integer encode."""
    if not cvt:
        return [encode_float8(v, dst) for v in values]
    i8, i16, i32 = (ir.IntegerType.get_signless(w) for w in (8, 16, 32))
    values = [_as_f32(v) for v in values]
    out = []
    for j in range(0, len(values), 2):
        a, b = (values[j : j + 2] + values[j : j + 1])[:2]  # an odd last one goes twice
        packed = nvvm.ConvertF32x2ToF8x2Op(i16, a, b, ir.TypeAttr.get(dst), rnd=nvvm.FPRoundingMode.RN,
                                           sat=nvvm.SaturationMode.SATFINITE).result
        codes = [arith.trunci(i8, arith.shrui(packed, arith.ConstantOp(i16, 8).result)), arith.trunci(i8, packed)]
        for v, code in list(zip((a, b), codes))[: min(2, len(values) - j)]:
            if str(dst) == E5M2:
                code = _e5m2_overflow(v, code, i8, i32)
            out.append(arith.bitcast(dst, code))
    return out


def _e5m2_overflow(v, code, i8, i32):
    """An e5m2 code from the saturating cvt, as ±inf where v rounds past 57344 (|v| >= 61440, inf
    included; NaN kept)."""
    a = arith.andi(arith.bitcast(i32, v), arith.ConstantOp(i32, 0x7FFFFFFF).result)
    past = arith.andi(arith.cmpi(arith.CmpIPredicate.uge, a, arith.ConstantOp(i32, 0x47700000).result),
                      arith.cmpi(arith.CmpIPredicate.ule, a, arith.ConstantOp(i32, 0x7F800000).result))
    inf = arith.ori(arith.andi(code, arith.ConstantOp(i8, -0x80).result), arith.ConstantOp(i8, 0x7C).result)
    return arith.select(past, inf, code)
