"""`tile.dot` of float8 tiles (Triton's `tl.dot` of float8e4nv / float8e5 tiles, f32 accumulator).

The dot keeps its float8 operands (e4m3, e5m2, or one of each) in the IR; the target
decides how to multiply them (`passes/fp8_dots.py`): sm_90a's wgmma multiplies them as
they are (`m64nNk32.f32.e4m3.e4m3`), elsewhere (sm_80, sm_90, the CPU) each operand is
first widened to f16, exactly (every e4m3 and e5m2 value is an f16), and the f16 dot
accumulates in f32 as wgmma does.
"""

from __future__ import annotations

from ..dialects import tile_ops
from . import dtypes
from .semantics import SemanticError
from .values import Tile
from .values import describe as _describe


def dot(a: Tile, b: Tile, acc, input_precision, out_dtype, accumulator) -> Tile:
    """`accumulator(a, b, acc, out_dtype)`: the dot's f32 accumulator tile (`builtins.dot_accumulator`)."""
    for name, x in (("a", a), ("b", b)):
        if x.dtype not in dtypes.FLOAT8:
            raise SemanticError(f"dot of a float8 tile takes float8 tiles on both sides (e4m3 or e5m2), got dot's {name} "
                                f"of {x.dtype!r}: convert both with .to() to one 16-bit type, or both to float8")
    if input_precision not in (None, "ieee", "tf32"):
        raise SemanticError(f"dot's input_precision must be \"ieee\" or \"tf32\", got {_describe(input_precision)}")
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        raise SemanticError(f"dot needs (M, K) and (K, N) tiles, got {a.shape} and {b.shape}")
    acc = accumulator(a, b, acc, out_dtype)
    return Tile(tile_ops.dot(a.value, b.value, acc.value))
