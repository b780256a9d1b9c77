"""`libm-calls`: `math.expm1` and `math.log1p` on CPU scalars as calls to libm's expm1f /
log1pf (expm1 / log1p for f64).

Our own pass, for the CPU target before `convert-math-to-llvm`, whose forms of these two are
exp(x) - 1 and an approximation of log(1 + x): both give 0 at x = 1e-9, where the functions
exist for their accuracy near 0. (`convert-math-to-libm` would call libm, but it cannot run
first: it fails on the math ops libm has no function for, as math.absi and math.fpowi.)

    %y = math.expm1 %x : f32    ->    %y = func.call @expm1f(%x) : (f32) -> f32
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func

from ...passes.registry import register_pass
from ...passes.walk import collect

_LIBM = {"math.expm1": "expm1", "math.log1p": "log1p"}


@register_pass("libm-calls")
@dataclass
class LibmCalls:
    def run(self, module_op):
        found = [op for op in collect(module_op, set(_LIBM)) if isinstance(op.results[0].type, (ir.F32Type, ir.F64Type))]
        declared = set()
        body = module_op.regions[0].blocks[0]
        for op in found:
            ty = op.results[0].type
            name = _LIBM[op.name] + ("f" if isinstance(ty, ir.F32Type) else "")
            if name not in declared:
                declared.add(name)
                with ir.InsertionPoint.at_block_begin(body), ir.Location.unknown():
                    func.FuncOp(name, ir.FunctionType.get([ty], [ty]), visibility="private")
            with ir.InsertionPoint(op), op.location:
                op.results[0].replace_all_uses_with(func.CallOp([ty], ir.FlatSymbolRefAttr.get(name), [op.operands[0]]).result)
            op.erase()
