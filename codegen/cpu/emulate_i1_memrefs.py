"""`emulate-i1-memrefs`: store booleans in memory as bytes.

Our own pass (upstream has none), for the CPU target after `convert-linalg-to-loops`
and the GPU target after `convert-tile-to-gpu` (kernels' `gpu.func` signatures too), or
on its linalg path after `tile-gpu-launch` (shared-memory `memref.global`s too). The LLVM
lowering of `memref.store` asserts (aborting the process) on an i1 element,
and i1 buffers arise from bool tensor arguments, reductions of masks and the
helper that `buffer-deallocation-pipeline` emits for loop- or branch-carried
buffers. torch stores a bool in one byte, so every i1 memref becomes an i8
memref: a load is followed by `trunci`, a store preceded by `extui`.

    # before
    memref.store %b, %m[%i] : memref<?xi1>
    # after
    %e = arith.extui %b : i1 to i8
    memref.store %e, %m[%i] : memref<?xi8>
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith

from ...passes.registry import register_pass
from ...passes.walk import walk


def _is_i1(t) -> bool:
    return isinstance(t, ir.IntegerType) and t.width == 1


def _widened(t):
    """`t` with i1 elements as i8 if it is an i1 memref, else None."""
    if not isinstance(t, ir.MemRefType) or not _is_i1(t.element_type):
        return None
    mt = ir.MemRefType(t)
    return ir.MemRefType.get(list(mt.shape), ir.IntegerType.get_signless(8), mt.layout, mt.memory_space)


def _widen_function_type(fn):
    ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    ins = [_widened(t) or t for t in ftype.inputs]
    outs = [_widened(t) or t for t in ftype.results]
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(ins, outs))


@register_pass("emulate-i1-memrefs")
@dataclass
class EmulateI1Memrefs:
    def run(self, module_op):
        loads, stores, values = [], [], []

        def visit(op):  # collect first: widening a memref hides which ops used it as i1
            if op.name in ("func.func", "gpu.func"):
                _widen_function_type(op)
            if op.name == "memref.global" and _widened(ir.TypeAttr(op.attributes["type"]).value):
                # (the GPU's linalg path: a mask's buffer in shared memory)
                op.attributes["type"] = ir.TypeAttr.get(_widened(ir.TypeAttr(op.attributes["type"]).value))
            if op.name == "memref.load" and _widened(op.operands[0].type):
                loads.append(op)
            if op.name == "memref.store" and _widened(op.operands[1].type):
                stores.append(op)
            values.extend(list(op.results) + [a for r in op.regions for b in r.blocks for a in b.arguments])
            return ir.WalkResult.ADVANCE

        walk(module_op, visit, ir.WalkOrder.PRE_ORDER)
        for v in values:
            wide = _widened(v.type)
            if wide is not None:
                v.set_type(wide)
        i1, i8 = ir.IntegerType.get_signless(1), ir.IntegerType.get_signless(8)
        for op in loads:
            result = op.results[0]
            result.set_type(i8)
            with ir.InsertionPoint.after(op), op.location:
                narrow = arith.trunci(i1, result)
            for use in list(result.uses):
                if use.owner != narrow.owner:
                    use.owner.operands[use.operand_number] = narrow
        for op in stores:
            with ir.InsertionPoint(op), op.location:
                op.operands[0] = arith.extui(i8, op.operands[0])
