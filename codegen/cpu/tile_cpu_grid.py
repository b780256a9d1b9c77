"""`tile-cpu-grid`: run a kernel's programs as loops on the CPU.

Our own pass (upstream has no notion of a launch grid). It appends the grid
size as three i32 arguments and wraps the body in loops over it:

    # before
    func.func @k(%x: memref<...>) attributes {tile.kernel} {
      %pid = "tile.program_id"() {axis = 0 : i32} : () -> i32
      ...
    # after
    func.func @k(%x: memref<...>, %gx: i32, %gy: i32, %gz: i32) attributes {llvm.emit_c_interface, tile.kernel} {
      scf.for %z = %c0 to %gz step %c1 : i32 { scf.for %y ... { scf.for %x ... { <body, %pid -> %x> } } }
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, scf

from ...passes.registry import register_pass
from ...passes.walk import collect
from ..common.ir_builders import kernel_functions


@register_pass("tile-cpu-grid")
@dataclass
class TileCpuGrid:
    def run(self, module_op):
        i32 = ir.IntegerType.get_signless(32)
        for fn in kernel_functions(module_op):
            block = fn.regions[0].blocks[0]
            loc = fn.location
            grid = [block.add_argument(i32, loc) for _ in range(3)]
            ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
            fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get([*ftype.inputs, i32, i32, i32], []))
            fn.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
            body_ops = list(block.operations)[:-1]
            with ir.InsertionPoint.at_block_begin(block), loc:
                zero, one = arith.ConstantOp(i32, 0).result, arith.ConstantOp(i32, 1).result
                ivs, ip = [None] * 3, None
                for axis in (2, 1, 0):
                    loop = scf.ForOp(zero, grid[axis], one, [], ip=ip)
                    with ir.InsertionPoint(loop.body):
                        scf.YieldOp([])
                    ivs[axis], ip = loop.induction_variable, ir.InsertionPoint.at_block_begin(loop.body)
                    inner_yield = loop.body.operations[-1]
            for op in body_ops:
                op.move_before(inner_yield)
            for op in collect(fn, {"tile.program_id", "tile.num_programs"}):
                axis = ir.IntegerAttr(op.attributes["axis"]).value
                op.results[0].replace_all_uses_with(ivs[axis] if op.name == "tile.program_id" else grid[axis])
                op.erase()
