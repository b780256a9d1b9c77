"""Triton's `tl.dot_scaled`: a dot of microscaled blocks, emulated.

    dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False,
               lhs_k_pack=True, rhs_k_pack=True, out_dtype=float32)

lhs (M x K) and rhs (K x N) hold float8 values ("e4m3", "e5m2"; "bf16" and "fp16" take no
scale); lhs_scale (M x K/32) and rhs_scale (N x K/32) are e8m0 scales, one byte each (the
exponent of a power of two, bias 127: 2^(s - 127); 255 is NaN), one per 32 elements of K,
as uint8 (or int8 holding the same bytes). A scale may be None (no scaling).

No tensor core of sm_90a multiplies scaled blocks (Blackwell's `tcgen05.mma` does); as
Triton does there, each operand is scaled in registers and the dot is a 16-bit one:
value * 2^(s - 127) as bf16, exact where it stays within bf16's range (a float8 value's
mantissa fits bf16's, and bf16 has f32's exponents), then `tile.dot` with f32
accumulation. The scales are spread over their 32 elements of K by a gather.
fp4 ("e2m1", two values a byte) is refused: the hardware lacks fp4 before Blackwell.
"""

from __future__ import annotations

from mlir import ir

from ..dialects.tile_ops import REGISTERS_A, permutation_of
from . import dtypes, semantics
from .builtins import EMITTERS, SemanticError, _tile, emitter
from .dtypes import bfloat16, float16, float32, int32
from .values import Tile
from .values import describe as _describe

FORMATS = {"e4m3": dtypes.float8e4m3, "e5m2": dtypes.float8e5m2, "bf16": bfloat16, "fp16": float16}
GROUP = 32  # elements of K a scale covers (the MX formats')


def _scale_factors(scale, rows: int, k: int, what: str):
    """The e8m0 bytes of a rows x K/32 tile as f32 powers of two (2^(s - 127); 255: NaN)."""
    s = _tile(scale, what)
    if s.dtype.name not in ("int8", "uint8") or s.shape != [rows, k // GROUP]:
        raise SemanticError(f"dot_scaled's {what} must be a {rows}x{k // GROUP} tile of e8m0 bytes (uint8), one per "
                            f"{GROUP} elements of K, got a {'x'.join(map(str, s.shape)) or 'scalar'} {s.dtype!r} tile")
    e = semantics.binary("&", semantics.cast(s, int32), 0xFF)
    power = EMITTERS["cast"](semantics.binary("<<", e, 23), float32, bitcast=True)
    power = semantics.where(semantics.compare("==", e, 0), 2.0**-127, power)  # (an f32 subnormal)
    return semantics.where(semantics.compare("==", e, 255), float("nan"), power)


def _spread(factors, rows: int, k: int):
    """A rows x K/32 tile of factors as rows x K, each repeated over its 32 elements of K."""
    x = EMITTERS["reshape"](factors, (rows, k // GROUP, 1))
    return EMITTERS["reshape"](semantics.broadcast_to(x, [rows, k // GROUP, GROUP]), (rows, k))


def _operand(x, fmt, scale, what: str, k_axis: int):
    """`x` in the dot's 16-bit type, scaled along K (axis `k_axis`) by its e8m0 scales."""
    if not isinstance(fmt, str) or fmt not in (*FORMATS, "e2m1"):
        raise SemanticError(f"dot_scaled's {what}_format must be one of {', '.join(repr(f) for f in FORMATS)}, "
                            f"got {_describe(fmt)}")
    if fmt == "e2m1":
        raise SemanticError(f"dot_scaled's {what}_format 'e2m1' (fp4): the hardware lacks fp4 (sm_90a's tensor cores "
                            "take e4m3 and e5m2 at 8 bits at least, fp4 is Blackwell's); use 'e4m3' or 'e5m2'")
    x = _tile(x, f"dot_scaled's {what}")
    if x.dtype != FORMATS[fmt] or len(x.shape) != 2:
        raise SemanticError(f"dot_scaled's {what} must be a 2-D {FORMATS[fmt]!r} tile for format '{fmt}', got a "
                            f"{'x'.join(map(str, x.shape)) or 'scalar'} {x.dtype!r} tile")
    if fmt in ("bf16", "fp16"):
        if scale is not None:
            raise SemanticError(f"dot_scaled's {what}_scale must be None for format '{fmt}'")
        return x
    if scale is None:
        return semantics.cast(x, bfloat16)
    rows, k = (x.shape[1], x.shape[0]) if k_axis == 0 else x.shape
    factors = _spread(_scale_factors(scale, rows, k, f"{what}_scale"), rows, k)
    loaded = _transposed_from(x) if k_axis == 0 else None
    if loaded is not None:  # rhs `b.T`: scaled as loaded (N x K), transposed after (read K-major by wgmma)
        return EMITTERS["trans"](semantics.cast(semantics.binary("*", semantics.cast(loaded, float32), factors), bfloat16))
    if k_axis == 0:  # rhs: K x N, its scales N x K/32
        factors = EMITTERS["trans"](factors)
    return semantics.cast(semantics.binary("*", semantics.cast(x, float32), factors), bfloat16)


def _transposed_from(x):
    """The tile that x is the 2-D transpose of (`b.T`), else None."""
    op = x.value.owner
    if isinstance(op, ir.OpView) and op.name == "tile.trans" and list(permutation_of(op)) == [1, 0]:
        return Tile(op.operands[0])
    return None


@emitter("dot_scaled")
def _dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False, lhs_k_pack=True,
                rhs_k_pack=True, out_dtype=float32):
    if lhs_k_pack is not True or rhs_k_pack is not True:
        raise SemanticError("dot_scaled's lhs_k_pack and rhs_k_pack must be True (packing along K, fp4's only)")
    a = _operand(lhs, lhs_format, lhs_scale, "lhs", 1)
    b = _operand(rhs, rhs_format, rhs_scale, "rhs", 0)
    if a.dtype != b.dtype:  # (fp16 by a scaled float8: both as f16 would overflow the scaled one)
        a, b = semantics.cast(a, bfloat16), semantics.cast(b, bfloat16)
    out = EMITTERS["dot"](a, b, acc, out_dtype=out_dtype)
    dot = out.value.owner
    if isinstance(dot, ir.OpView) and dot.name == "tile.dot":
        # As Triton's on Hopper: wgmma takes the scaled A from registers (`tile-assign-layouts`),
        # no shared copy of it beside the float8 rings
        dot.attributes[REGISTERS_A] = ir.UnitAttr.get()
    return out
