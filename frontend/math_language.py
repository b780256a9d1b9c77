"""Triton's math namespaces as kernel-language stubs (as `language.py`'s): this module is
`tile.math` (Triton's `tl.math`), and `libdevice_stubs()` fills `tile.extra.libdevice`
(`tl.extra.libdevice`; also `tile.extra.cuda.libdevice`). Their emitters are in
`frontend/math_functions.py`.

A name `tile` already has is the same function here (`tile.math.exp is tile.exp`: on a GPU
the special-function unit's, as Triton's `tl.math.exp`); the libdevice namespace's exp, exp2,
log and tanh are libdevice's full-precision functions (`__nv_expf`, `__nv_tanhf`), as Triton's.
"""

from __future__ import annotations

from . import language as _language
from .errors import TileError as _TileError

_DOCS = {
    "abs": "Absolute value.", "fabs": "Absolute value.",
    "acos": "Arc cosine.", "acosh": "Inverse hyperbolic cosine.", "asin": "Arc sine.",
    "asinh": "Inverse hyperbolic sine.", "atan": "Arc tangent.", "atanh": "Inverse hyperbolic tangent.",
    "atan2": "atan2(y, x): the angle of the point (x, y).", "cbrt": "Cube root.",
    "ceil": "Smallest integral value not below x.", "copysign": "|x| with the sign of y.",
    "cos": "Cosine (radians).", "cosh": "Hyperbolic cosine.",
    "div_rn": "x / y correctly rounded (IEEE), where `/` is within 2 ulp on a GPU.",
    "erf": "The error function.", "erfc": "1 - erf(x), accurate where erf(x) is near 1.",
    "erfinv": "The inverse error function.", "exp": "e ** x.", "exp10": "10 ** x.", "exp2": "2 ** x.",
    "expm1": "e ** x - 1, accurate near 0.",
    "fdiv": "x / y; with ieee_rounding=True correctly rounded (div_rn).",
    "floor": "Largest integral value not above x.", "fma": "x * y + z, rounded once.",
    "fmax": "C's fmax: the larger, a NaN operand giving the other.",
    "fmin": "C's fmin: the smaller, a NaN operand giving the other.",
    "fmod": "C's fmod: x - trunc(x / y) * y, exactly (the sign of x).",
    "hypot": "sqrt(x ** 2 + y ** 2) without overflow.",
    "isfinite": "Whether x is finite (an int1 tile).", "finitef": "Whether x is finite (an int1 tile).",
    "isfinited": "Whether x is finite (an int1 tile).", "isinf": "Whether x is +inf or -inf (an int1 tile).",
    "isnan": "Whether x is NaN (an int1 tile).", "signbit": "Whether x's sign bit is set, -0.0 too (an int1 tile).",
    "log": "Natural logarithm.", "log10": "Base-10 logarithm.", "log1p": "log(1 + x), accurate near 0.",
    "log2": "Base-2 logarithm.",
    "nearbyint": "x rounded to an integral value, halves to even.",
    "pow": "x ** y, for a float or an integer y.", "rint": "x rounded to an integral value, halves to even.",
    "round": "x rounded to an integral value, halves away from zero (C's round).",
    "rsqrt": "1 / sqrt(x).", "sigmoid": "1 / (1 + exp(-x)).", "sin": "Sine (radians).",
    "sinh": "Hyperbolic sine.", "sqrt": "Square root (sqrt.approx.f32 on a GPU, as Triton's).",
    "sqrt_rn": "Square root correctly rounded (IEEE).", "tan": "Tangent (radians).",
    "tanh": "Hyperbolic tangent.", "trunc": "x rounded toward zero.",
    "umulhi": "The high half of the unsigned double-width product of two int32 or uint32 (or 64-bit) tiles.",
    "fast_expf": "e ** x on the special-function unit (tile.exp).", "fast_logf": "ln x on the special-function unit (tile.log).",
    "fast_tanhf": "tanh x on the special-function unit (tile.tanh).", "fast_dividef": "x / y within 2 ulp (`/`).",
    "llrint": "x rounded halves to even, as an int64.", "llround": "x rounded halves away from zero, as an int64.",
    "float2int_rn": "x rounded halves to even, as an int32.", "float2int_rz": "x rounded toward zero, as an int32.",
    "float2int_rd": "x rounded down, as an int32.", "float2int_ru": "x rounded up, as an int32.",
    "float2ll_rn": "x rounded halves to even, as an int64.", "float2ll_rz": "x rounded toward zero, as an int64.",
    "float2ll_rd": "x rounded down, as an int64.", "float2ll_ru": "x rounded up, as an int64.",
}
_MATH_ONLY = ("fdiv", "sigmoid")
_TO_INT = ("llrint", "llround", "float2int_rn", "float2int_rz", "float2int_rd", "float2int_ru", "float2ll_rn",
           "float2ll_rz", "float2ll_rd", "float2ll_ru")
_LIBDEVICE_ONLY = ("fast_expf", "fast_logf", "fast_tanhf", "fast_dividef", *_TO_INT)


def _stub(namespace: str, name: str):
    def stub(*args, **kwargs):
        raise _TileError(f"tile.{namespace}.{name} can only be called inside a @tile.kernel or @tile.func")

    stub.__name__ = stub.__qualname__ = name
    stub.__doc__ = _DOCS[name]
    stub.tile_builtin = f"{namespace}.{name}"
    return stub


def libdevice_stubs() -> dict:
    """The functions of `tile.extra.libdevice`, by name."""
    return {n: _stub("extra.libdevice", n) for n in _DOCS if n not in _MATH_ONLY}


globals().update({n: getattr(_language, n, None) or _stub("math", n) for n in _DOCS if n not in _LIBDEVICE_ONLY})
__all__ = [n for n in _DOCS if n not in _LIBDEVICE_ONLY]
