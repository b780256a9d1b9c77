"""`expand-float8`: float8 (e4m3, e5m2) to a wider float and back, in integer arithmetic, for the CPU.

Our own pass, for the CPU target after `convert-linalg-to-loops` (scalar code):
LLVM has no f8 type (a memref of f8E4M3FN loads bytes), and upstream's
`arith-expand` expands only the f8E8M0 and f4E2M1 conversions. Each `arith.extf`
from f8E4M3FN becomes the decode of its byte: sign s, exponent e (4 bits, bias 7),
mantissa m (3 bits) give (-1)^s (8 + m) 2^(e - 10) for e > 0 and (-1)^s 2m 2^-10
for e = 0 (the subnormals), exact in f32; 0x7f and 0xff are NaN. Then `truncf`
to a 16-bit type where that is the result (exact: four significant bits). An
f8E5M2 byte is the top byte of an f16: shifted up and bitcast. The GPU converts
with `cvt.rn.f16x2.e4m3x2` (`.e5m2x2`) instead (`float8.py`, which holds the decode).
Each `arith.truncf` to a float8 type becomes the encode of its f32 value (`encode_float8`:
rounded to nearest even, as torch; the GPU's is `cvt.rn.satfinite.e4m3x2.f32`).

    # before
    %y = arith.extf %x : f8E4M3FN to bf16
    # after
    %b = arith.bitcast %x : f8E4M3FN to i8 ; %u = arith.extui %b : i8 to i32
    ... %mag = select(e > 0, (m + 8) << e, m << 1) ; %v = uitofp %mag * 2^-10, negated if s, NaN if e = 15 and m = 7
    %y = arith.truncf %v : f32 to bf16
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ...passes.registry import register_pass
from ...passes.walk import walk
from ..common.float8 import decode_float8, encode_float8, is_float8


@register_pass("expand-float8")
@dataclass
class ExpandFloat8:
    def run(self, module_op):
        found = []

        def visit(op):
            if (op.name == "arith.extf" and is_float8(op.operands[0].type)) or (
                    op.name == "arith.truncf" and is_float8(op.results[0].type)):
                found.append(op)
            return ir.WalkResult.ADVANCE

        walk(module_op, visit)
        for op in found:
            with ir.InsertionPoint(op), op.location:
                code = decode_float8 if op.name == "arith.extf" else encode_float8
                op.results[0].replace_all_uses_with(code(op.operands[0], op.results[0].type))
            op.erase()
