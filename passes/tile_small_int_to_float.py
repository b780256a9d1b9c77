"""`tile-small-int-to-float`: an integer tile converted to f32 whose values are proven
small (|v| < 2^22, `int_ranges.py`) is converted through the float's bits instead:
v + 0x4B400000, read as an f32, is 1.5 * 2^23 + v exactly, so subtracting 1.5 * 2^23
gives v, exactly.

    # before
    %f = arith.sitofp %q : tensor<64x128xi32> to tensor<64x128xf32>
    # after
    %s = arith.addi %q, %magic : tensor<64x128xi32>        // %magic: tile.splat of 0x4B400000
    %b = arith.bitcast %s : tensor<64x128xi32> to tensor<64x128xf32>
    %f = arith.subf %b, %offset : tensor<64x128xf32>      // %offset: tile.splat of 12582912.0

A conversion to f16 or bf16 (what canonicalization makes of `.to(float32).to(bfloat16)`)
goes the same way to f32, then `arith.truncf`: the f32 is exact, so the one rounding
is the conversion's own, and two results pack into one `cvt.rn.bf16x2.f32`.

Why: an int-to-float `cvt` runs on the GPU's conversion unit (16 results a cycle per
SM on sm_90, by NVIDIA's throughput table), an integer add and an f32 add on the
integer and FMA pipes; exact for every value in range, it is the usual trick of
hand-written dequantization kernels. No upstream pass does it (upstream's
`arith-int-range-narrowing` narrows integer widths, and a narrower `cvt` is still a
`cvt`). It runs before `tile-fuse`, so the new ops join the same fusion group.

Measured (H100, 2026-12-05 19:21, `benchmarks/results`): the INT4 example's K loop
lost its 64 I2F a thread a step, and its prefill stayed where it was (267 ->
269-270 TFLOP/s at 128x128x64): the conversions were not what limits that kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith

from ..dialects import tile_ops
from .int_ranges import int_range
from .registry import register_pass
from .walk import collect

MAGIC = 0x4B400000  # the bits of 12582912.0 = 1.5 * 2^23
LIMIT = 1 << 22  # within it, 1.5 * 2^23 + v is an f32 with v in its low mantissa bits


def _splat_constant(like, value):
    """`value` splat over `like`'s tensor type, as the frontend writes constants
    (`tile.splat` of a scalar; the layout pass gives it its encoding)."""
    t = ir.RankedTensorType(like)
    elem = t.element_type
    scalar = arith.ConstantOp(elem, value if isinstance(elem, ir.IntegerType) else float(value)).result
    return tile_ops.splat(scalar, list(t.shape))


def small(op) -> bool:
    """Whether `op` converts an integer tile, proven within +-2^22, to an f32, f16 or bf16 tile."""
    if op.name not in ("arith.sitofp", "arith.uitofp") or not isinstance(op.operands[0].type, ir.RankedTensorType):
        return False
    src, dst = (ir.RankedTensorType(v.type).element_type for v in (op.operands[0], op.results[0]))
    if not isinstance(dst, (ir.F32Type, ir.F16Type, ir.BF16Type)) or ir.IntegerType(src).width != 32:
        return False
    r = int_range(op.operands[0])
    if r is None or op.name == "arith.uitofp" and r[0] < 0:
        return False  # (unknown; or negative as signed: a large unsigned value)
    return -LIMIT < r[0] and r[1] < LIMIT


def rewrite(op) -> None:
    src, out_type = op.operands[0], op.results[0].type
    f32 = ir.RankedTensorType.get(ir.RankedTensorType(src.type).shape, ir.F32Type.get(),
                                  ir.RankedTensorType(src.type).encoding)
    with ir.InsertionPoint(op), op.location:
        biased = arith.addi(src, _splat_constant(src.type, MAGIC))
        bits = arith.bitcast(f32, biased)
        value = arith.subf(bits, _splat_constant(f32, 12582912.0))
        if value.type != out_type:
            # before: sitofp %q to bf16 -> after: truncf (the f32 above) to bf16, rounded once
            value = arith.truncf(out_type, value)
    assert value.type == out_type
    op.results[0].replace_all_uses_with(value)
    op.erase()


@register_pass("tile-small-int-to-float")
@dataclass
class TileSmallIntToFloat:
    def run(self, module_op):
        for op in collect(module_op, ("arith.sitofp", "arith.uitofp")):
            if small(op):
                rewrite(op)
