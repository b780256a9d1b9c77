"""Emitters of Triton's `core.py` builtins that library kernels call on values:
`tile.to_tensor` (Triton's `semantic.to_tensor_type` rules, which differ from a literal's in an
expression: 2**31 is a uint32, a float32 subnormal a float64) and `tile.expect_zero`."""

from __future__ import annotations

from . import semantics
from .builtin_registry import EMITTERS, emitter
from .constexpr import unwrap
from .dtypes import float32, float64, int1, int32, int64, uint32, uint64
from .semantics import SemanticError
from .values import Pointer, TensorArg, Tile
from .values import describe

_FLOAT32_MIN, _FLOAT32_MAX = 2.0**-126, (2 - 2**-23) * 2**127


def to_tensor_type(x):
    """Triton's dtype for the Python number x."""
    if isinstance(x, bool):
        return int1
    if isinstance(x, int):
        for dt, lo, hi in ((int32, -2**31, 2**31), (uint32, 2**31, 2**32), (int64, -2**63, 2**63), (uint64, 2**63, 2**64)):
            if lo <= x < hi:
                return dt
        raise SemanticError(f"to_tensor: integer {x} does not fit in 64 bits")
    m = abs(x)
    return float32 if m == float("inf") or m == 0.0 or x != x or _FLOAT32_MIN <= m <= _FLOAT32_MAX else float64


@emitter("to_tensor")
def _to_tensor(x):
    if isinstance(x, (Tile, Pointer, TensorArg)):
        return x
    x = unwrap(x)
    if not isinstance(x, (bool, int, float)):
        raise SemanticError(f"to_tensor takes a number or a run-time value, got {describe(x)}")
    return semantics.constant(x, to_tensor_type(x))


@emitter("expect_zero")
def _expect_zero(x, mask):
    if not isinstance(x, Tile):
        raise SemanticError(f"expect_zero takes a tile or a run-time scalar, got {describe(x)}")
    EMITTERS["device_assert"](semantics.compare("==", x, 0), "expect_zero expected x == 0 where mask is true", mask=mask)
    return x
