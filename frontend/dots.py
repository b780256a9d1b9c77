"""`tile.dot` (Triton's `tl.dot`): f32, f16 and bf16 tiles, and float8 tiles (float8e4nv /
float8e5, f32 accumulator).

The dot keeps its float8 operands (e4m3, e5m2, or one of each) in the IR; the target
decides how to multiply them (`passes/fp8_dots.py`): sm_90a's wgmma multiplies them as
they are (`m64nNk32.f32.e4m3.e4m3`), elsewhere (sm_80, sm_90, the CPU) each operand is
first widened to f16, exactly (every e4m3 and e5m2 value is an f16), and the f16 dot
accumulates in f32 as wgmma does.
"""

from __future__ import annotations

from ..dialects import tile_ops
from . import dtypes, semantics
from .batched_dot import batched_dot
from .builtins import _tile, emitter
from .dtypes import bfloat16, float16, float32
from .semantics import SemanticError, constant
from .values import Tile
from .values import describe as _describe


@emitter("dot")
def _dot(a, b, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None, out_dtype=None):
    """Triton's `tl.dot`; float8 operands (e4m3, e5m2, mixed) go to `float8_dot`."""
    a, b = _tile(a, "dot's a"), _tile(b, "dot's b")
    if len(a.shape) == 3:
        return batched_dot(_dot, a, b, acc, input_precision=input_precision, allow_tf32=allow_tf32,
                           max_num_imprecise_acc=max_num_imprecise_acc, out_dtype=out_dtype)
    if a.dtype in dtypes.FLOAT8 or b.dtype in dtypes.FLOAT8:
        return float8_dot(a, b, acc, input_precision, out_dtype)
    a, b = semantics.computable(a, "dot's a"), semantics.computable(b, "dot's b")
    if input_precision is None and allow_tf32 is not None:  # (Triton's older spelling)
        input_precision = "tf32" if allow_tf32 else "ieee"
    if input_precision not in (None, "ieee", "tf32"):
        raise SemanticError(f"dot's input_precision must be \"ieee\" or \"tf32\", got {_describe(input_precision)}")
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        raise SemanticError(f"dot needs (M, K) and (K, N) tiles, got {a.shape} and {b.shape}")
    if a.dtype != b.dtype:
        raise SemanticError(f"dot operands must have one dtype, got {a.dtype!r} and {b.dtype!r}")
    acc = dot_accumulator(a, b, acc, out_dtype)
    if a.dtype not in (float32, float16, bfloat16):
        raise SemanticError(f"dot takes float32, float16, bfloat16 or float8 operands and a float32 accumulator, got "
                            f"{a.dtype!r} operands")
    # As in Triton, the precision applies to f32 operands; 16-bit ones are exact already.
    return Tile(tile_ops.dot(a.value, b.value, acc.value, tf32=input_precision == "tf32" and a.dtype == float32))


def dot_accumulator(a: Tile, b: Tile, acc, out_dtype) -> Tile:
    """The f32 accumulator of a dot of a and b: `acc`, or zeros."""
    if out_dtype not in (None, float32):
        raise SemanticError(f"dot accumulates in float32 (out_dtype=tile.float32), got out_dtype={_describe(out_dtype)}")
    shape = [a.shape[0], b.shape[1]]
    acc = constant(0, float32, shape) if acc is None else _tile(acc, "dot's acc")
    if acc.shape != shape:
        raise SemanticError(f"dot accumulator must have shape {shape}, got {acc.shape}")
    if acc.dtype != float32:
        raise SemanticError(f"dot takes float32, float16, bfloat16 or float8 operands and a float32 accumulator, got "
                            f"{a.dtype!r} operands and a {acc.dtype!r} accumulator")
    return acc


def float8_dot(a: Tile, b: Tile, acc, input_precision, out_dtype) -> Tile:
    """Both operands float8: the dot keeps them (see the module's docstring)."""
    for name, x in (("a", a), ("b", b)):
        if x.dtype not in dtypes.FLOAT8:
            raise SemanticError(f"dot of a float8 tile takes float8 tiles on both sides (e4m3 or e5m2), got dot's {name} "
                                f"of {x.dtype!r}: convert both with .to() to one 16-bit type, or both to float8")
    if input_precision not in (None, "ieee", "tf32"):
        raise SemanticError(f"dot's input_precision must be \"ieee\" or \"tf32\", got {_describe(input_precision)}")
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        raise SemanticError(f"dot needs (M, K) and (K, N) tiles, got {a.shape} and {b.shape}")
    acc = dot_accumulator(a, b, acc, out_dtype)
    return Tile(tile_ops.dot(a.value, b.value, acc.value))
