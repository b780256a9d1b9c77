"""`ieee-min-max`: arith.maximumf / minimumf -> llvm.intr.maximum / minimum, for the CPU
target, before `arith-expand`.

`arith-expand` (which the CPU pipeline runs for its f32 -> bf16 rounding) rewrites
maximumf as `a > b ? a : b` with a NaN check, which loses the ordering of signed zeros
that the op promises (-0.0 < +0.0): tile.maximum(0.0, -0.0) and the max of [0.0, -0.0]
were -0.0. LLVM's intrinsics keep it, and x86 lowers them in a few instructions.
`arith-emulate-unsupported-floats` has run: the operands are f32 or f64.

    # before
    %m = arith.maximumf %a, %b : f32
    # after
    %m = llvm.intr.maximum(%a, %b) : (f32, f32) -> f32
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import llvm

from ...passes.registry import register_pass
from ...passes.walk import collect


@register_pass("ieee-min-max")
@dataclass
class IeeeMinMax:
    def run(self, module_op):
        for op in collect(module_op, ("arith.maximumf", "arith.minimumf")):
            intrinsic = llvm.intr_maximum if op.name == "arith.maximumf" else llvm.intr_minimum
            with ir.InsertionPoint(op), op.location:
                value = intrinsic(op.operands[0], op.operands[1])
            op.results[0].replace_all_uses_with(value)
            op.erase()
