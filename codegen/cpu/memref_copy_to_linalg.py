"""`memref-copy-to-linalg`: memref.copy -> linalg.copy.

Our own pass: bufferization emits memref.copy, whose lowering calls the
`memrefCopy` runtime function; neither the ExecutionEngine here (the wheel has
no runner-utils library) nor a GPU has it. As a linalg op, the copy becomes
loops like every other linalg op.

    # before
    memref.copy %a, %b : memref<64xf32> to memref<64xf32>
    # after
    linalg.copy ins(%a : memref<64xf32>) outs(%b : memref<64xf32>)
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg

from ...passes.registry import register_pass
from ...passes.walk import collect


@register_pass("memref-copy-to-linalg")
@dataclass
class MemrefCopyToLinalg:
    def run(self, module_op):
        for op in collect(module_op, {"memref.copy"}):
            with ir.InsertionPoint(op), op.location:
                linalg.copy(op.operands[0], outs=[op.operands[1]])
            op.erase()
