"""Emitters of Triton's math namespaces: `tile.math.*` (Triton's `tl.math`) and
`tile.extra.libdevice.*` (`tl.extra.libdevice`, also as `tile.extra.cuda.libdevice`).

Each function is an MLIR `math`/`arith` op, or a few, so it runs on both targets: the
CPU target's lowering calls libm or an LLVM intrinsic, the GPU's libdevice (`__nv_asinf`,
`__nv_pow`, ...; convert-gpu-to-nvvm picks the f32 or f64 one). 16-bit floats compute in
f32, and integers convert to f32, as `tile.exp` does. The libdevice namespace is full
precision: its exp, exp2, log, tanh, div_rn and sqrt_rn carry `tile.accurate`, which keeps
them off the special-function-unit forms `tile.exp`, `tile.tanh` and `/` take on a GPU
(`codegen/gpu/fast_math.py`). libdevice functions that MLIR has no op for are composed:
`erfinv` (Giles' approximation refined by Newton steps on erf/erfc in f64), `hypot`
(in f64 for narrower floats, scaled for f64) and `exp10` (`pow(10, x)`).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith
from mlir.dialects import math as mlir_math

from ..dialects import tile_ops
from ..dialects.tile_ops import ACCURATE
from . import semantics, unsigned
from .builtins import EMITTERS, _describe, _tile
from .dtypes import float32, float64, int1, int32, int64
from .semantics import SemanticError, binary, cast, compare, constant, where
from .values import Tile

# One float operand, one math op; an integer operand converts to f32 first.
_UNARY = {
    "acos": mlir_math.acos, "acosh": mlir_math.acosh, "asin": mlir_math.asin, "asinh": mlir_math.asinh,
    "atan": mlir_math.atan, "atanh": mlir_math.atanh, "cbrt": mlir_math.cbrt, "cos": mlir_math.cos,
    "cosh": mlir_math.cosh, "erf": mlir_math.erf, "erfc": mlir_math.erfc, "exp": mlir_math.exp,
    "exp2": mlir_math.exp2, "expm1": mlir_math.expm1, "log": mlir_math.log, "log10": mlir_math.log10,
    "log1p": mlir_math.log1p, "log2": mlir_math.log2, "sin": mlir_math.sin, "sinh": mlir_math.sinh,
    "sqrt": mlir_math.sqrt, "rsqrt": mlir_math.rsqrt, "tan": mlir_math.tan, "tanh": mlir_math.tanh,
}
# Rounding to an integral value: an integer operand is its own result (as torch.floor's).
_ROUNDING = {
    "floor": mlir_math.floor, "ceil": mlir_math.ceil, "trunc": mlir_math.trunc,
    "round": mlir_math.round,  # (half away from zero, C's round)
    "rint": mlir_math.roundeven, "nearbyint": mlir_math.roundeven,  # (half to even: the default rounding mode)
}
_BINARY = {
    "atan2": mlir_math.atan2, "copysign": mlir_math.copysign, "fmod": arith.remf,
    "fmin": arith.minnumf, "fmax": arith.maxnumf,  # (C's: a NaN operand gives the other one)
    "div_rn": arith.divf, "pow": mlir_math.powf,
}
# The functions a GPU computes by a fast form (`codegen/gpu/fast_math.py`) unless marked accurate, as
# libdevice's are; Triton's `tl.math.exp` is fast too. (libdevice's sqrt is sqrt.approx.f32 as
# `tile.sqrt`, Triton's; sqrt_rn and div_rn are the IEEE ones in both namespaces.)
_FAST = ("exp", "exp2", "log", "tanh")


def _float_operand(x, what: str) -> tuple[Tile, Tile]:
    """(x as a tile, x in the type it is computed in): f32 for 16-bit floats and integers."""
    x = semantics.computable(_tile(x, what), what)
    if not x.dtype.is_float or x.dtype.bits < 32:
        return x, cast(x, float32)
    return x, x


def _result(out: Tile, x: Tile) -> Tile:
    """out in x's float type (an integer x's result stays f32)."""
    return cast(out, x.dtype) if x.dtype.is_float else out


def unary(name: str, x, accurate: bool = False) -> Tile:
    """A function of _UNARY or _ROUNDING, as `tile.exp` computes its own."""
    x = semantics.computable(_tile(x, f"{name}'s operand"), f"{name}'s operand")
    return semantics.unary_math(name, x, _UNARY.get(name) or _ROUNDING[name], accurate)


def _float_pair(x, y, name: str) -> tuple[Tile, Tile, Tile]:
    """(x, y) broadcast to one float type (f32 for 16-bit floats and integers), and the
    operand whose type the result takes."""
    a, b = semantics.operands(x, y, f"{name}'s operand")
    wide = float32 if not a.dtype.is_float or a.dtype.bits < 32 else a.dtype
    return cast(a, wide), cast(b, wide), a


def binary_fn(name: str, x, y, accurate: bool) -> Tile:
    if name == "pow" and _integer_exponent(y):
        return _powi(x, y)
    a, b, like = _float_pair(x, y, name)
    out = Tile(_BINARY[name](a.value, b.value))
    if accurate:
        out.value.owner.attributes[ACCURATE] = ir.UnitAttr.get()
    return _result(out, like)


def _integer_exponent(y) -> bool:
    if isinstance(y, Tile):
        return not y.dtype.is_float and y.dtype != int1
    return isinstance(y, int) and not isinstance(y, bool)


def _powi(x, n) -> Tile:
    """x ** n for an integer n (libdevice's `__nv_powif`, LLVM's `powi` on the CPU)."""
    x, wide = _float_operand(x, "pow's base")
    n = cast(n, int32) if isinstance(n, Tile) else constant(n, int32)
    shape = semantics.broadcast_shapes(wide.shape, n.shape) if (wide.shape or n.shape) else []
    wide, n = semantics.broadcast_to(wide, shape), semantics.broadcast_to(n, shape)
    return _result(Tile(mlir_math.fpowi(wide.value, n.value)), x)


def predicate(name: str, x) -> Tile:
    """isnan, isinf, isfinite, signbit: an int1 tile (Triton converts libdevice's int to it)."""
    x = semantics.computable(_tile(x, f"{name}'s operand"), f"{name}'s operand")
    if not x.dtype.is_float:
        raise SemanticError(f"{name} needs a float operand, got {_describe(x)}")
    if name == "signbit":  # the sign bit itself: -0.0 and -nan count (a 16-bit float's, widened exactly)
        wide = cast(x, float32) if x.dtype.bits < 32 else x
        bits = (int32 if wide.dtype == float32 else int64).to_mlir()
        return compare("<", Tile(arith.bitcast(ir.RankedTensorType.get(x.shape, bits) if x.shape else bits, wide.value)), 0)
    if name == "isnan":
        return compare("!=", x, x)
    magnitude = semantics.absolute(x)
    inf = float("inf")
    return compare("==", magnitude, inf) if name == "isinf" else compare("<", magnitude, inf)


def exp10(x) -> Tile:
    """10 ** x as pow(10, x): libm and libdevice have no exp10 that MLIR reaches, and
    exp2(x log2 10) loses |x| ulp."""
    x, wide = _float_operand(x, "exp10's operand")
    return _result(Tile(mlir_math.powf(constant(10.0, wide.dtype, wide.shape or None).value, wide.value)), x)


def hypot(x, y) -> Tile:
    """sqrt(x² + y²) without overflow: in f64 for narrower floats (exact squares, one
    rounding), else scaled by the larger magnitude; an infinite operand gives inf, even
    beside a NaN (C's hypot)."""
    a, b, like = _float_pair(x, y, "hypot")
    a, b = semantics.absolute(a), semantics.absolute(b)
    dt = a.dtype
    if dt.bits < 64:
        a64, b64 = cast(a, float64), cast(b, float64)
        root = Tile(mlir_math.sqrt(binary("+", binary("*", a64, a64), binary("*", b64, b64)).value))
        out = cast(root, dt)
    else:
        big, small = semantics.extremum("max", a, b), semantics.extremum("min", a, b)
        safe = where(compare("==", big, 0.0), 1.0, big)
        r = binary("/", small, safe)
        out = binary("*", big, Tile(mlir_math.sqrt(binary("+", 1.0, binary("*", r, r)).value)))
    infinite = semantics.binary("|", compare("==", a, float("inf")), compare("==", b, float("inf")))
    return _result(where(infinite, float("inf"), out), like)


# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), single precision:
# the central and the tail polynomial, each in w, highest coefficient first.
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                   -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
_TWO_OVER_SQRT_PI = 1.1283791670955126


def _polynomial(coefficients, w: Tile) -> Tile:
    p = constant(coefficients[0], w.dtype, w.shape or None)
    for c in coefficients[1:]:
        p = binary("+", binary("*", p, w), c)
    return p


def erfinv(x) -> Tile:
    """The inverse error function, in f64: Giles' approximation (about 1e-7) refined by
    Newton steps on erf(t) = |x| (on erfc(t) = 1 - |x| past 0.5, where 1 - |x| is exact and
    erf's slope small), two for a float up to f32, three for f64; ±1 gives ±inf, past it NaN."""
    x, wide = _float_operand(x, "erfinv's operand")
    y = cast(wide, float64)
    a = semantics.absolute(y)
    one_minus = binary("-", 1.0, a)
    w = _negative_log(binary("*", one_minus, binary("+", 1.0, a)))
    central = _polynomial(_ERFINV_CENTRAL, binary("-", w, 2.5))
    tail = _polynomial(_ERFINV_TAIL, binary("-", Tile(mlir_math.sqrt(w.value)), 3.0))
    t = binary("*", where(compare("<", w, 5.0), central, tail), a)
    for _ in range(3 if wide.dtype == float64 else 2):
        erf_t, erfc_t = Tile(mlir_math.erf(t.value)), Tile(mlir_math.erfc(t.value))
        residual = where(compare("<", a, 0.5), binary("-", erf_t, a), binary("-", one_minus, erfc_t))
        slope = binary("*", _TWO_OVER_SQRT_PI, Tile(mlir_math.exp(semantics.negate(binary("*", t, t)).value)))
        t = binary("-", t, binary("/", residual, slope))
    t = where(compare("==", a, 1.0), float("inf"), t)
    t = where(compare(">", a, 1.0), float("nan"), t)  # (NaN, too, stays NaN: the comparisons are false)
    return _result(cast(Tile(mlir_math.copysign(t.value, y.value)), wide.dtype), x)


def _negative_log(v: Tile) -> Tile:
    return semantics.negate(Tile(mlir_math.log(v.value)))


def umulhi(x, y) -> Tile:
    """The high half of the unsigned double-width product of two int32 or uint32 (or 64-bit)
    tiles, of their type (`mul.hi.u32` on a GPU)."""
    a, b = semantics.operands(x, y, "umulhi's operand")
    if a.dtype.is_float or a.dtype.bits not in (32, 64):
        raise SemanticError(f"umulhi needs int32 or int64 operands, got {_describe(a)}")
    bits = a.dtype.bits
    elem = ir.IntegerType.get_signless(2 * bits)
    shift = arith.ConstantOp(elem, ir.IntegerAttr.get(elem, bits)).result
    if a.shape:
        shift = tile_ops.splat(shift, a.shape)
    typed = lambda t: ir.RankedTensorType.get(a.shape, t) if a.shape else t  # noqa: E731
    prod = arith.muli(arith.extui(typed(elem), a.value), arith.extui(typed(elem), b.value))
    high = arith.trunci(typed(a.dtype.to_mlir()), arith.shrui(prod, shift))
    return Tile(unsigned.mark(high) if not a.dtype.signed else high)


# libdevice's float-to-integer conversions (bitsandbytes quantizes with `libdevice.llrint`):
# x rounded as named, then converted: exact, since the rounded value is integral (`cvt.rni.f32.f32`,
# `cvt.rzi.s64.f32` on a GPU, where libdevice's `__nv_llrintf` is one `cvt.rni.s64.f32`).
_TO_INT = {"llrint": ("rint", int64), "llround": ("round", int64)}
_TO_INT.update({f"float2{kind}_{mode}": (rounding, dtype) for kind, dtype in (("int", int32), ("ll", int64))
                for mode, rounding in (("rn", "rint"), ("rz", "trunc"), ("rd", "floor"), ("ru", "ceil"))})


def to_int(name: str, x) -> Tile:
    """libdevice's `llrint`, `float2int_rn`, ...: a float x (16-bit floats widened, exactly)
    rounded by _TO_INT's mode, as its integer type."""
    x = semantics.computable(_tile(x, f"{name}'s operand"), f"{name}'s operand")
    if not x.dtype.is_float:
        raise SemanticError(f"{name} needs a float operand, got {_describe(x)}")
    rounding, dtype = _TO_INT[name]
    return cast(unary(rounding, x), dtype)


def fdiv(x, y, ieee_rounding=False) -> Tile:
    """Triton's `tl.math.fdiv`: `/`, or with ieee_rounding the correctly rounded `div_rn`."""
    if not isinstance(ieee_rounding, bool):
        raise SemanticError(f"fdiv's ieee_rounding must be a compile-time bool, got {_describe(ieee_rounding)}")
    return binary_fn("div_rn", x, y, accurate=True) if ieee_rounding else binary("/", x, y)


def _register():
    """Fill EMITTERS under the stubs' names (`frontend/math_language.py`): `math.<name>` and
    `extra.libdevice.<name>`."""
    def put(name, fn, math=True, libdevice=True):
        for ns, on in (("math", math), ("extra.libdevice", libdevice)):
            if on:
                EMITTERS[f"{ns}.{name}"] = fn

    for name in [*_UNARY, *_ROUNDING]:
        put(name, lambda x, _n=name: unary(_n, x), libdevice=name not in _FAST)
    for name in _FAST:
        EMITTERS[f"extra.libdevice.{name}"] = lambda x, _n=name: unary(_n, x, accurate=True)
    for name in _BINARY:
        put(name, lambda x, y, _n=name: binary_fn(_n, x, y, accurate=_n == "div_rn"))
    for name in ("isnan", "isinf", "isfinite", "signbit"):
        put(name, lambda x, _n=name: predicate(_n, x))
    put("finitef", EMITTERS["math.isfinite"])
    put("isfinited", EMITTERS["math.isfinite"])
    put("exp10", exp10)
    put("hypot", hypot)
    put("erfinv", erfinv)
    put("umulhi", umulhi)
    put("fdiv", fdiv, libdevice=False)
    put("sqrt_rn", lambda x: unary("sqrt", x, accurate=True))
    for name in ("abs", "fabs"):
        put(name, EMITTERS["abs"])
    put("fma", EMITTERS["fma"])
    put("sigmoid", EMITTERS["sigmoid"], libdevice=False)
    # libdevice's fast forms are what tile computes by default on a GPU
    put("fast_expf", EMITTERS["exp"], math=False)
    put("fast_logf", EMITTERS["log"], math=False)
    put("fast_tanhf", EMITTERS["tanh"], math=False)
    put("fast_dividef", lambda x, y: binary("/", x, y), math=False)
    for name in _TO_INT:
        put(name, lambda x, _n=name: to_int(_n, x), math=False)


_register()
