"""Typing rules of the language: constants, promotion, broadcasting, casts and
the elementwise operators, emitted as upstream `arith`/`math` ops on scalars or
tensors at the ambient insertion point and location.

The rules follow Triton's: Python ints are i32 and floats f32 unless the other
operand fixes the type; mixing f16 and bf16 gives f32; `/` on ints gives f32.
"""

from __future__ import annotations

from math import inf, isfinite, nextafter, prod

from mlir import ir
from mlir.dialects import arith, math

from ..dialects import tile_ops
from . import dtypes, unsigned
from .dtypes import float32, int1, int32
from .errors import TileError
from .values import Tile, describe


class SemanticError(TileError):
    """A typing error; the emitter attaches the source position."""


def constant(value, dt: dtypes.dtype, shape: list[int] | None = None) -> Tile:
    ty = dt.to_mlir()
    if dt.is_float:
        attr = ir.FloatAttr.get(ty, _float_value(value, dt))
    else:
        attr = ir.IntegerAttr.get(ty, integer_bits(value, dt))
    scalar = arith.ConstantOp(ty, attr).result
    if not dt.signed:
        unsigned.mark(scalar)
    return Tile(tile_ops.splat(scalar, shape) if shape else scalar)


def int_range(dt: dtypes.dtype) -> tuple[int, int]:
    """The least and greatest value of an integer dtype."""
    return (0, (1 << dt.bits) - 1) if not dt.signed else (-(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1)


def integer_bits(value, dt: dtypes.dtype) -> int:
    """value as the signless attribute of dt takes it (a uint8's 200 is -56)."""
    v = _integer_value(value, dt)
    return v - (1 << dt.bits) if not dt.signed and v >= 1 << (dt.bits - 1) else v


def _integer_value(value, dt: dtypes.dtype) -> int:
    """value as an integer of type dt, which must hold it: the attribute kept its low bits
    (other=300 read 44 in int8, 2**40 read 0 in int32, nan was poison)."""
    if dt == int1:  # nonzero, as a conversion to bool
        return int(bool(value))
    lo, hi = int_range(dt)
    whole = int(value) if isinstance(value, float) and value.is_integer() else value
    if not isinstance(whole, int) or not lo <= whole <= hi:
        raise SemanticError(f"{value!r} does not fit in {dt!r} (from {lo} to {hi})")
    return whole


def _float_value(value, dt: dtypes.dtype) -> float:
    """value as a float of type dt, which must hold it as ints must theirs: a finite constant
    past the type's range became inf silently (`tile.full((16,), 1e40, tile.float32)`)."""
    if isinstance(value, (int, float)) and not _fits(value, dt):
        raise SemanticError(f"{value!r} does not fit in {dt!r}: it would round to "
                            f"{'NaN' if dt == dtypes.float8e4m3 else 'inf'}")
    return float(value)


def _fits(value, dt: dtypes.dtype) -> bool:
    """Whether a Python number is inf or NaN, or rounds to a finite value of float type dt."""
    if isinstance(value, float) and not isfinite(value):
        return True
    return abs(value) < _OVERFLOW.get(dt, 2**1024 - 2**970)  # (ints and floats compare exactly)


def literal(value) -> Tile:
    """A Python number alone as a constant: bool, int32 (int64 past it), float32 (float64 past it)."""
    return constant(value, python_dtype(value, None))


def python_dtype(value, other: dtypes.dtype | None) -> dtypes.dtype:
    """The dtype a Python constant takes next to a run-time operand of dtype `other`."""
    if isinstance(value, bool):
        return int1
    if isinstance(value, int):
        if other is not None and other.is_float:
            return _float_for(value, other)
        # the operand's int type if the value fits it, else the first wider one that holds it
        for dt in ([other] if other is not None and other != int1 else []) + [int32, dtypes.int64]:
            if int_range(dt)[0] <= value <= int_range(dt)[1]:
                return dt
        raise SemanticError(f"integer constant {value} does not fit in 64 bits")
    if isinstance(value, float):
        return _float_for(value, other if other is not None and other.is_float else float32)
    if value is None:  # (a tensor argument passed as None: Triton's optional pointer)
        raise SemanticError("cannot use None in a tile expression (an argument passed as None is a compile-time None: "
                            "guard its uses with `if X is not None:`)")
    raise SemanticError(f"cannot use a {type(value).__name__} value in a tile expression")


# |v| from which a finite value rounds to inf in each float type (its largest plus half an ulp;
# e4m3 has no inf and its largest, 448, is even: 464 rounds to it, anything above to NaN)
_OVERFLOW = {dtypes.float16: 65520.0, dtypes.bfloat16: (2 - 2**-7) * 2**127 + 2**119, float32: (2 - 2**-23) * 2**127 + 2**103,
             dtypes.float8e4m3: nextafter(464.0, inf), dtypes.float8e5m2: 61440.0}


def _float_for(value, other: dtypes.dtype) -> dtypes.dtype:
    """The operand's float type, unless the finite constant overflows it: then the first wider
    one that holds it, as for ints (x_f16 * 1e5 made the constant inf, and 0 * inf NaN)."""
    for dt in (other, float32, dtypes.float64):
        if dt.bits >= other.bits and _fits(value, dt):
            return dt
    raise SemanticError(f"constant {value} does not fit in float64")


def promote_dtypes(a: dtypes.dtype, b: dtypes.dtype) -> dtypes.dtype:
    if a == b:
        return a
    if a.is_float and b.is_float:
        if a.bits == b.bits:  # f16 with bf16
            return float32
        return a if a.bits > b.bits else b
    if a.is_float or b.is_float:
        return a if a.is_float else b
    if a.signed != b.signed and a.bits > 1 and b.bits > 1:  # Triton's: the unsigned one, unless the other is wider
        u, s = (a, b) if not a.signed else (b, a)
        return u if u.bits >= s.bits else s
    return a if a.bits > b.bits else b


def cast(x: Tile, dt: dtypes.dtype, fp_downcast_rounding: str | None = None) -> Tile:
    """x as dt; a float narrowed rounds to nearest even (Triton's fp_downcast_rounding="rtne")."""
    if fp_downcast_rounding not in (None, "rtne"):
        raise SemanticError(f"fp_downcast_rounding={fp_downcast_rounding!r} is not supported: "
                            "conversions round to nearest even ('rtne')")
    src = x.dtype
    if src == dt:
        return x
    if dt in dtypes.FLOAT8:  # from f32, rounded to nearest even: e4m3 saturates, e5m2 overflows to inf (torch's)
        wide = cast(x, float32)
        ty = ir.RankedTensorType.get(x.shape, dt.to_mlir()) if x.shape else dt.to_mlir()
        return Tile(arith.truncf(ty, wide.value))
    if src in dtypes.FLOAT8 and not dt.is_float:
        raise SemanticError(f"conversion from {src} to {dt} is not supported: convert to a float type")
    ty = dt.to_mlir()
    if x.shape:
        ty = ir.RankedTensorType.get(x.shape, ty)
    v = x.value
    if src.is_float and dt.is_float:
        op = arith.extf if dt.bits > src.bits else arith.truncf
        if dt.bits == src.bits:  # f16 <-> bf16 goes through f32
            return cast(cast(x, float32), dt)
        return Tile(op(ty, v))
    if src.is_float:
        if dt != int1 and dt.bits < 32:  # through int32, then wrapped, as torch: out of range stays defined
            return cast(cast(x, int32), dt)
        if dt == int1:
            return compare("!=", x, 0.0)
        return Tile(arith.fptosi(ty, v) if dt.signed else unsigned.mark(arith.fptoui(ty, v)))
    if dt.is_float:
        return Tile(arith.uitofp(ty, v) if src.is_int_unsigned() else arith.sitofp(ty, v))
    if dt == int1:  # nonzero, as torch's .bool() (a truncation would keep the low bit)
        return compare("!=", x, 0)
    if dt.bits > src.bits:
        out = arith.extui(ty, v) if src.is_int_unsigned() else arith.extsi(ty, v)
    elif dt.bits < src.bits:
        out = arith.trunci(ty, v)
    else:  # int32 <-> uint32: the same bits, another value (its own op, which `unsigned.is_unsigned` reads)
        out = arith.bitcast(ty, v)
    return Tile(unsigned.mark(out) if not dt.signed else out)


MAX_TILE_ELEMENTS = 1 << 24  # 64 MB of f32 in one tile: past any GPU block's registers and shared memory


def check_tile_size(shape: list[int], what: str = "tile") -> list[int]:
    """shape, unless its tile would be larger than any target can hold (the CPU target
    crashed on a 2**40-element tile instead)."""
    if prod(shape) > MAX_TILE_ELEMENTS:
        raise SemanticError(f"tile too large: a {what} of shape {list(shape)} has {prod(shape)} elements, "
                            f"more than the {MAX_TILE_ELEMENTS} a tile may have")
    return shape


def broadcast_shapes(a: list[int], b: list[int]) -> list[int]:
    out = []
    for i in range(max(len(a), len(b))):
        x = a[len(a) - 1 - i] if i < len(a) else 1
        y = b[len(b) - 1 - i] if i < len(b) else 1
        if x != y and 1 not in (x, y):
            raise SemanticError(f"incompatible tile shapes {a} and {b}")
        out.append(max(x, y))
    return check_tile_size(out[::-1])


def broadcast_to(x: Tile, shape: list[int]) -> Tile:
    if x.shape == shape:
        return x
    if x.is_scalar:
        return Tile(tile_ops.splat(x.value, shape))
    if len(x.shape) > len(shape):
        raise SemanticError(f"cannot broadcast a tile of shape {x.shape} to {shape}")
    padded = [1] * (len(shape) - len(x.shape)) + x.shape
    if any(d not in (1, n) for d, n in zip(padded, shape)):  # (never the reverse: [4] to [1])
        raise SemanticError(f"cannot broadcast a tile of shape {x.shape} to {shape}")
    v = x.value if padded == x.shape else tile_ops.reshape(x.value, padded)
    return Tile(tile_ops.broadcast(v, shape) if padded != shape else v)


def computable(x: Tile, what: str = "") -> Tile:
    """x, unless it is a float8 tile: those are loaded, stored and converted, never computed on."""
    if x.dtype in dtypes.FLOAT8:
        raise SemanticError(f"float8 tiles are storage only{f' ({what} is {x.dtype!r})' if what else ''}: convert "
                            "with .to(tile.float16), .to(tile.bfloat16) or .to(tile.float32) before computing with them")
    return x


def operands(a, b, what: str = "an operand") -> tuple[Tile, Tile]:
    """Turn two operands (Tiles or Python constants) into Tiles of one dtype and shape; `what`
    names them in errors (`tile.maximum's operand`)."""
    for v in (a, b):
        if v is None:
            python_dtype(v, None)  # (its message: an argument passed as None)
        if not isinstance(v, (Tile, bool, int, float)):
            raise SemanticError(f"{what} must be a tile or a number, got {describe(v)}")
    if not isinstance(a, Tile) and not isinstance(b, Tile):
        raise SemanticError(f"{what}s are both compile-time numbers: one must be a run-time value")
    given = [v for v in (a, b) if not isinstance(v, (Tile, bool))]
    if not isinstance(a, Tile):
        a = constant(a, python_dtype(a, b.dtype))
    if not isinstance(b, Tile):
        b = constant(b, python_dtype(b, a.dtype))
    computable(a), computable(b)
    dt = promote_dtypes(a.dtype, b.dtype)
    if not dt.signed and any(type(v) is int and v < 0 for v in given):  # (Triton's rule: -1 is no uint32)
        raise SemanticError(f"cannot combine a {dt!r} value with the negative constant {min(given)}: convert one of "
                            f"them first (x.to(tile.int{dt.bits}) or tile.full(..., {dt!r}))")
    a, b = cast(a, dt), cast(b, dt)
    shape = broadcast_shapes(a.shape, b.shape) if (a.shape or b.shape) else []
    if shape:
        a, b = broadcast_to(a, shape), broadcast_to(b, shape)
    return a, b


_FLOAT_OPS = {"+": arith.addf, "-": arith.subf, "*": arith.mulf, "/": arith.divf, "%": arith.remf}
_INT_OPS = {
    "+": arith.addi, "-": arith.subi, "*": arith.muli, "//": arith.divsi, "%": arith.remsi,
    "&": arith.andi, "|": arith.ori, "^": arith.xori, "<<": arith.shli, ">>": arith.shrsi,
}


def binary(op: str, a, b) -> Tile:
    known_divisor = isinstance(b, int) and b not in (0, -1)  # (needs no guard: `_integer_division`)
    count = b if type(b) is int else None  # a shift by a constant in range needs no guard (`_shift`)
    if op in ("//", "%") and isinstance(a, Tile) and isinstance(b, Tile) and _mixed_signedness(a.dtype, b.dtype):
        raise SemanticError(f"cannot use {op} with {a.dtype!r} and {b.dtype!r}: their signedness differs (as Triton, "
                            "convert one of them first)")
    a, b = operands(a, b)
    if op == "/" and not a.dtype.is_float:
        a, b = cast(a, float32), cast(b, float32)
    if op == "//" and a.dtype.is_float:
        return _float_floor_division(a, b)
    if op == "%" and a.dtype.is_float:
        return _float_remainder(a, b)
    table = _FLOAT_OPS if a.dtype.is_float else _INT_OPS
    if op not in table:
        raise SemanticError(f"operator {op} is not defined for {a.dtype}")
    if a.dtype == int1 and op not in ("&", "|", "^"):  # as torch and Triton: True + True == 2
        a, b = cast(a, int32), cast(b, int32)
    if op in ("//", "%") and not a.dtype.is_float and not known_divisor:
        return _integer_division(op, a, b)
    if op in ("<<", ">>") and not (count is not None and 0 <= count < a.dtype.bits):
        return _shift(op, a, b)
    if not a.dtype.signed:  # (uint8 .. uint64)
        table = {**table, **_UNSIGNED_OPS}
    return Tile(table[op](a.value, b.value))


_UNSIGNED_OPS = {"//": arith.divui, "%": arith.remui, ">>": arith.shrui}


def _mixed_signedness(a: dtypes.dtype, b: dtypes.dtype) -> bool:
    """Whether two integer dtypes differ in signedness (bools count as neither)."""
    return not a.is_float and not b.is_float and a.bits > 1 and b.bits > 1 and a.signed != b.signed


def _shift(op: str, a: Tile, b: Tile) -> Tile:
    """a << b and a >> b as torch: a count outside [0, bits) (LLVM's poison, the hardware's
    count modulo the width) shifts everything out, leaving 0 or, for >>, the sign. The count
    is clamped to bits - 1 as unsigned (a negative one is huge); << then selects 0 past it."""
    top = constant(a.dtype.bits - 1, b.dtype, b.shape or None)
    count = arith.minui(b.value, top.value)
    if op == ">>" and a.dtype.signed:
        return Tile(arith.shrsi(a.value, count))
    inside = Tile(arith.cmpi(arith.CmpIPredicate.ule, b.value, top.value))
    if op == ">>":  # (unsigned: zeros shifted in, all of them past the width)
        return where(inside, Tile(arith.shrui(a.value, count)), constant(0, a.dtype, a.shape or None))
    inside = Tile(arith.cmpi(arith.CmpIPredicate.ule, b.value, top.value))
    return where(inside, Tile(arith.shli(a.value, count)), constant(0, a.dtype, a.shape or None))


def _float_floor_division(a: Tile, b: Tile) -> Tile:
    """Python's and torch's a // b on floats (16-bit ones in f32, as torch): floor(a / b) was off
    by one where a / b rounds up to an integer (1.0 // 0.1 is 9.0, a / b is 10.0). From the
    exact remainder, as torch: (a - fmod(a, b)) / b, less 1 where fmod's sign is not b's, rounded
    to the nearest integer; 0 keeps a / b's sign, and b == 0 gives a / b."""
    dt = a.dtype
    if dt.bits < 32:
        return cast(_float_floor_division(cast(a, float32), cast(b, float32)), dt)
    mod, off = _fmod_off(a, b)
    div = binary("/", binary("-", a, mod), b)
    div = where(off, binary("-", div, 1.0), div)
    floor = Tile(math.floor(div.value))
    floor = where(compare(">", binary("-", div, floor), 0.5), binary("+", floor, 1.0), floor)
    quotient = binary("/", a, b)
    floor = where(compare("==", div, 0.0), Tile(math.copysign(constant(0.0, dt, a.shape or None).value, quotient.value)), floor)
    return where(compare("==", b, 0.0), quotient, floor)


def _float_remainder(a: Tile, b: Tile) -> Tile:
    """Python's and torch's a % b on floats, the divisor's sign (16-bit ones in f32, as torch),
    so that (a // b) * b + a % b == a: fmod(a, b), plus b where fmod's sign is not b's.
    Triton's float % is C's fmod (-5.5 % 2 is -1.5 there, 0.5 here); `tile.extra.libdevice.fmod` is that."""
    if a.dtype.bits < 32:
        return cast(_float_remainder(cast(a, float32), cast(b, float32)), a.dtype)
    mod, off = _fmod_off(a, b)
    return where(off, binary("+", mod, b), mod)


def _fmod_off(a: Tile, b: Tile) -> tuple[Tile, Tile]:
    """C's fmod(a, b) (exact), and where its sign differs from b's, which Python's // and % correct."""
    mod = Tile(arith.remf(a.value, b.value))
    return mod, binary("&", compare("!=", mod, 0.0), binary("^", compare("<", b, 0.0), compare("<", mod, 0.0)))


def known_positive(step: Tile) -> bool:
    """Whether a run-time loop step is positive by construction: `tile.num_programs`."""
    owner = step.value.owner
    return not isinstance(owner, ir.Block) and owner.name == "tile.num_programs"


def trip_count(start, stop, step):
    """The iterations of range(start, stop, step) (at most: a negative count runs none), for a
    negative constant step or a run-time one of either sign; 0 for a zero step at run time
    (Python raises; a kernel cannot)."""
    if not any(isinstance(v, Tile) for v in (start, stop, step)):
        return len(range(start, stop, step))
    if not isinstance(step, Tile):
        return binary("//", binary("+", binary("-", start, stop), -step - 1), -step)
    start, stop = (v if isinstance(v, Tile) else constant(v, python_dtype(v, step.dtype)) for v in (start, stop))
    up = compare(">", step, 0)
    span = where(up, binary("-", stop, start), binary("-", start, stop))
    d = where(up, step, negate(step))
    trips = binary("//", binary("+", span, binary("-", d, 1)), extremum("max", d, 1))
    return where(compare("==", step, 0), 0, extremum("max", trips, 0))


def _integer_division(op: str, a: Tile, b: Tile) -> Tile:
    """C's truncating a // b and a % b that never trap, not even in lanes a mask turns off
    (a masked load's `other=0`): LLVM takes division by 0, and MIN // -1, as undefined and
    may drop the mask, and x86 raises SIGFPE. Those divisors divide by 1 instead, so
    x // 0 == x and x % 0 == 0; x // -1 is -x (wrapping at MIN), x % -1 is 0. A Python int
    divisor other than 0 and -1 needs no guard."""
    if not a.dtype.signed:  # (unsigned: no -1; x // 0 == x, x % 0 == 0 all the same)
        safe = where(compare("==", b, 0), constant(1, b.dtype, b.shape or None), b)
        return Tile((arith.remui if op == "%" else arith.divui)(a.value, safe.value))
    zero, minus_one = compare("==", b, 0), compare("==", b, -1)
    safe = where(binary("|", zero, minus_one), constant(1, b.dtype, b.shape or None), b)
    if op == "%":
        return Tile(arith.remsi(a.value, safe.value))
    return where(minus_one, negate(a), Tile(arith.divsi(a.value, safe.value)))


_FCMP = {"<": arith.CmpFPredicate.OLT, "<=": arith.CmpFPredicate.OLE, ">": arith.CmpFPredicate.OGT,
         ">=": arith.CmpFPredicate.OGE, "==": arith.CmpFPredicate.OEQ, "!=": arith.CmpFPredicate.UNE}
_ICMP = {"<": arith.CmpIPredicate.slt, "<=": arith.CmpIPredicate.sle, ">": arith.CmpIPredicate.sgt,
         ">=": arith.CmpIPredicate.sge, "==": arith.CmpIPredicate.eq, "!=": arith.CmpIPredicate.ne}
_UCMP = {"<": arith.CmpIPredicate.ult, "<=": arith.CmpIPredicate.ule, ">": arith.CmpIPredicate.ugt,
         ">=": arith.CmpIPredicate.uge}


def compare(op: str, a, b) -> Tile:
    a, b = operands(a, b)
    if a.dtype.is_float:
        return Tile(arith.cmpf(_FCMP[op], a.value, b.value))
    if a.dtype.is_int_unsigned():  # (uint8 .. uint64; and True > False: signed, an i1's True is -1)
        return Tile(arith.cmpi(_UCMP.get(op, _ICMP[op]), a.value, b.value))
    return Tile(arith.cmpi(_ICMP[op], a.value, b.value))


def negate(x: Tile) -> Tile:
    if computable(x).dtype.is_float:  # (0.0 - x is +0.0 at x = +0.0: -x flips the sign bit)
        return Tile(arith.negf(x.value))
    return binary("-", 0, x)


def logical_not(x: Tile) -> Tile:
    if x.dtype != int1:
        x = compare("!=", x, 0)
    return binary("^", x, True)


def where(cond, x, y) -> Tile:
    if not isinstance(cond, (Tile, bool, int, float)):
        raise SemanticError(f"where's condition must be a tile or a number, got {describe(cond)}")
    if not isinstance(x, Tile) and not isinstance(y, Tile) and isinstance(x, (bool, int, float)):
        x = constant(x, python_dtype(x, python_dtype(y, None)))  # where(mask, 1.0, 0.0): both branches constant
    x, y = operands(x, y, "where's operand")
    if not isinstance(cond, Tile):
        cond = constant(bool(cond), int1)
    if cond.dtype != int1:
        cond = compare("!=", cond, 0)
    shape = broadcast_shapes(cond.shape, x.shape) if (cond.shape or x.shape) else []
    if shape:
        cond, x, y = broadcast_to(cond, shape), broadcast_to(x, shape), broadcast_to(y, shape)
    return Tile(arith.select(cond.value, x.value, y.value))


_MATH = {"exp": math.exp, "exp2": math.exp2, "log": math.log, "log2": math.log2, "sqrt": math.sqrt,
         "rsqrt": math.rsqrt, "tanh": math.tanh, "sin": math.sin, "cos": math.cos, "erf": math.erf,
         "floor": math.floor, "ceil": math.ceil}
_ROUNDING = ("floor", "ceil", "trunc", "round", "rint", "nearbyint")


def unary_math(name: str, x, op=None, accurate: bool = False) -> Tile:
    """Transcendental math; 16-bit floats compute in f32, as Triton and torch do. `op` makes the
    math op (by default the one `name` names); `accurate` marks it `tile.accurate` (full
    precision on a GPU too: `tile.extra.libdevice`'s)."""
    if not isinstance(x, Tile):
        x = constant(x, float32)
    dt = x.dtype
    if name in _ROUNDING and not dt.is_float:  # an integer is its own floor (torch.floor)
        return x
    if not dt.is_float:
        x = cast(x, float32)
    wide = cast(x, float32) if dt.bits < 32 and dt.is_float else x
    if name == "sigmoid":
        out = binary("/", 1.0, binary("+", 1.0, unary_math("exp", negate(wide))))
    else:
        out = Tile((op or _MATH[name])(wide.value))
        if accurate:
            out.value.owner.attributes[tile_ops.ACCURATE] = ir.UnitAttr.get()
    return cast(out, dt) if dt.is_float else out


def absolute(x: Tile) -> Tile:
    computable(x, "abs's operand")
    if x.dtype.is_int_unsigned():
        return x
    return Tile(math.absf(x.value) if x.dtype.is_float else math.absi(x.value))


def extremum(kind: str, a, b, what: str = "an operand", propagate_nan: bool = True) -> Tile:
    """Elementwise max or min; of floats, a NaN wins (`maximumf`) or, without propagate_nan,
    loses to a number (`maxnumf`)."""
    a, b = operands(a, b, what)
    if a.dtype.is_float and not propagate_nan:
        return Tile((arith.maxnumf if kind == "max" else arith.minnumf)(a.value, b.value))
    if a.dtype.is_float:
        return Tile((arith.maximumf if kind == "max" else arith.minimumf)(a.value, b.value))
    if a.dtype.is_int_unsigned():  # (unsigned ints, bools: as the comparisons)
        return Tile((arith.maxui if kind == "max" else arith.minui)(a.value, b.value))
    return Tile((arith.maxsi if kind == "max" else arith.minsi)(a.value, b.value))
