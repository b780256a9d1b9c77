"""`tile.dot` (Triton's `tl.dot`): f32, f16 and bf16 tiles, float8 tiles (float8e4nv /
float8e5), with an f32 accumulator (f16 and float8 ones an f16 one too), and int8 tiles,
with an int32 one.

The dot keeps its 8-bit operands (float8 e4m3, e5m2, or one of each; int8) in the IR; the
target decides how to multiply them (`passes/fp8_dots.py`): sm_90a's wgmma multiplies them as
they are (`m64nNk32.f32.e4m3.e4m3`, `m64nNk32.s32.s8.s8`). Elsewhere (sm_80, sm_90, the CPU)
each float8 operand is first widened to f16, exactly (every e4m3 and e5m2 value is an f16),
and the f16 dot accumulates in f32 as wgmma does; int8 operands go to `mma.sync.m16n8k32.s8`
(the CPU: a matmul that sign-extends them and sums in int32). An int8 dot is exact for any
K: its sums wrap modulo 2^32 only past 2^31, as torch's int32 matmul does.

The accumulator follows Triton's rules (`triton/language/semantic.py`, `dot`): `out_dtype`
is the accumulator's dtype (float32 without one), an `acc` must be of it, and int8 operands
give int32. An f16 one is summed in f32 each dot (`_emit`).

f32 operands without `input_precision` take Triton's default for the target (`F32_DEFAULT`, set
by `emit_kernel`): tf32 on a GPU, whose tensor cores then multiply them, as Triton's dots do
there; exact on the CPU, as Triton's interpreter multiplies them. `input_precision="ieee"`
(or `allow_tf32=False`) keeps a GPU dot exact, and `"tf32"` rounds a CPU one.
"""

from __future__ import annotations

import contextvars

from ..dialects import tile_ops
from . import dtypes, semantics
from .batched_dot import batched_dot
from .builtins import _tile, emitter
from .dtypes import bfloat16, float16, float32, int8, int32
from .semantics import SemanticError, constant
from .values import Tile
from .values import describe as _describe

# f32 operands' precision where a dot names none: "tf32" for a GPU target, "ieee" for the CPU
F32_DEFAULT = contextvars.ContextVar("tile_f32_dot_precision", default="ieee")
MIN_K_8BIT = 32  # (Triton's `min_dot_size` for 8-bit operands on NVIDIA; one k32 tensor-core step)


@emitter("dot")
def _dot(a, b, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None, out_dtype=None):
    """Triton's `tl.dot`; float8 operands (e4m3, e5m2, mixed) go to `float8_dot`, integer ones to `int8_dot`."""
    a, b = _tile(a, "dot's a"), _tile(b, "dot's b")
    if len(a.shape) == 3:
        return batched_dot(_dot, a, b, acc, input_precision=input_precision, allow_tf32=allow_tf32,
                           max_num_imprecise_acc=max_num_imprecise_acc, out_dtype=out_dtype)
    if a.dtype in dtypes.FLOAT8 or b.dtype in dtypes.FLOAT8:
        return float8_dot(a, b, acc, input_precision, out_dtype)
    a, b = semantics.computable(a, "dot's a"), semantics.computable(b, "dot's b")
    if input_precision is None and allow_tf32 is not None:  # (Triton's older spelling)
        input_precision = "tf32" if allow_tf32 else "ieee"
    _check_precision(input_precision)
    _check_shapes(a, b)
    if a.dtype != b.dtype:
        raise SemanticError(f"dot operands must have one dtype, got {a.dtype!r} and {b.dtype!r}")
    if not a.dtype.is_float:
        return int8_dot(a, b, acc, out_dtype)
    if a.dtype not in (float32, float16, bfloat16):
        raise SemanticError(f"dot takes float32, float16, bfloat16, float8 or int8 operands, got {a.dtype!r} operands")
    acc = dot_accumulator(a, b, acc, out_dtype, (float32, float16) if a.dtype == float16 else (float32,))
    # As in Triton, the precision applies to f32 operands; 16-bit ones are exact already.
    return _emit(a, b, acc, tf32=(input_precision or F32_DEFAULT.get()) == "tf32" and a.dtype == float32)


def _check_precision(input_precision):
    if input_precision not in (None, "ieee", "tf32"):
        raise SemanticError(f"dot's input_precision must be \"ieee\" or \"tf32\", got {_describe(input_precision)}")


def _check_shapes(a: Tile, b: Tile):
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        raise SemanticError(f"dot needs (M, K) and (K, N) tiles, got {a.shape} and {b.shape}")


def dot_accumulator(a: Tile, b: Tile, acc, out_dtype, takes=(float32,)) -> Tile:
    """The accumulator of a dot of a and b, of one of the dtypes `takes` (f32; f16 too for
    16-bit and float8 operands; int32 for int8 ones): `acc`, or zeros. As in Triton,
    `out_dtype` defaults to the accumulator's dtype (float32 without one) and must be it."""
    acc = None if acc is None else _tile(acc, "dot's acc")
    if out_dtype is None:
        out_dtype = float32 if acc is None else acc.dtype
    if out_dtype == bfloat16:
        raise SemanticError("out_dtype=bfloat16 is unsupported: use out_dtype=tile.float32 and cast the result with "
                            ".to(tile.bfloat16)")
    shape = [a.shape[0], b.shape[1]]
    if acc is not None and acc.shape != shape:
        raise SemanticError(f"dot accumulator must have shape {shape}, got {acc.shape}")
    if acc is not None and acc.dtype != out_dtype:
        raise SemanticError(f"expected accumulator dtype {out_dtype!r}, got {acc.dtype!r}; pass "
                            f"out_dtype={acc.dtype!r} to use this accumulator dtype")
    # (int8 operands without an accumulator: int32 whatever out_dtype says, as Triton does, but
    # out_dtype=tile.float32, its default, is the only other one taken)
    if takes == (int32,) and acc is None and out_dtype == float32:
        out_dtype = int32
    if out_dtype not in takes:
        got = f"out_dtype={_describe(out_dtype)}" if acc is None else f"{a.dtype!r} operands and a {acc.dtype!r} accumulator"
        hint = " (tile.zeros(..., dtype=tile.int32))" if takes == (int32,) else ""
        raise SemanticError(f"a dot of {a.dtype!r} operands accumulates in {' or '.join(map(repr, takes))}{hint}, "
                            f"got {got}")
    return constant(0, out_dtype, shape) if acc is None else acc


def _emit(a: Tile, b: Tile, acc: Tile, tf32: bool = False) -> Tile:
    """The dot op. An f16 accumulator (`out_dtype=tile.float16`, Triton's for 16-bit and float8
    operands) is widened for it and its result rounded back: each dot's products are summed in
    f32 and rounded to f16 once, as fine as an f16 accumulation or finer."""
    if acc.dtype == float16:
        wide = semantics.cast(acc, float32)
        return semantics.cast(Tile(tile_ops.dot(a.value, b.value, wide.value, tf32=tf32)), float16)
    return Tile(tile_ops.dot(a.value, b.value, acc.value, tf32=tf32))


def int8_dot(a: Tile, b: Tile, acc, out_dtype) -> Tile:
    """int8 operands (of one dtype, 2-D, checked): int32 result, exact (see the module's docstring)."""
    if a.dtype != int8:
        raise SemanticError(f"dot of integer tiles takes int8 operands (int8 x int8 -> int32, as Triton's), got "
                            f"{a.dtype!r} operands: convert them with .to(tile.int8) or to a float type")
    if a.shape[1] < MIN_K_8BIT:
        raise SemanticError(f"dot of 8-bit operands needs K >= {MIN_K_8BIT} (one tensor-core step), got K = {a.shape[1]}")
    acc = dot_accumulator(a, b, acc, out_dtype, (int32,))
    return _emit(a, b, acc)


def float8_dot(a: Tile, b: Tile, acc, input_precision, out_dtype) -> Tile:
    """Both operands float8: the dot keeps them (see the module's docstring)."""
    for name, x in (("a", a), ("b", b)):
        if x.dtype not in dtypes.FLOAT8:
            raise SemanticError(f"dot of a float8 tile takes float8 tiles on both sides (e4m3 or e5m2), got dot's {name} "
                                f"of {x.dtype!r}: convert both with .to() to one 16-bit type, or both to float8")
    _check_precision(input_precision)
    _check_shapes(a, b)
    return _emit(a, b, dot_accumulator(a, b, acc, out_dtype, (float32, float16)))
