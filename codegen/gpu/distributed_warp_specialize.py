"""The GPU lowering of what `tile-warp-specialize` makes (methods of the GPU `Translator`),
and `tile-consumer-barriers`, which keeps the consumers' block barriers to themselves.

- `tile.warp_role`: whether this thread's warp is among the role's; the kernel's block
  grows to the op's `total` warps (`known_block_size`, so `.reqntid`) and starts with
  `maxnreg` registers a thread (`.maxnreg`: what `setmaxnreg` trades from).
- `tile.set_max_registers`: `setmaxnreg.inc` / `.dec.sync.aligned.u32` (`nvvm.setmaxregister`).
- `tile.mbarrier_arrive`: lane 0 of each warp arrives on the slot's mbarrier, if live.

    # before (tile-opt stage)
    %p = "tile.warp_role"() {count = 4 : i32, first = 4 : i32, maxnreg = 128 : i32, total = 8 : i32} : () -> i1
    scf.if %p { "tile.set_max_registers"() {count = 40, increase = 0} ... } else { ... gpu.barrier ... }
    # after (gpu stage)
    scf.if %p { nvvm.setmaxregister decrease 40 ... } else { nvvm.setmaxregister increase 216
                                                            ... nvvm.barrier id = 1 number_of_threads = 128 ... }
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, nvgpu, nvvm, scf

from ...passes.registry import register_pass
from ...passes.walk import all_ops
from ..common.ir_builders import to_index
from ..common.lowerings import lowering
from .register_vectors import i32

CONSUMER_BARRIER = 1  # the named barrier of the consumer threads (0 is the whole block's)


def _attr(op, name: str) -> int:
    return ir.IntegerAttr(op.attributes[name]).value


def _gpu_func(block):
    op = block.owner.operation
    while op.name != "gpu.func":
        op = op.parent.operation
    return op


@lowering("tile.warp_role", target="gpu")
def op_tile_warp_role(self, op):
    first, count, total = (_attr(op, a) for a in ("first", "count", "total"))
    fn = _gpu_func(ir.InsertionPoint.current.block)
    i32_t = ir.IntegerType.get_signless(32)
    fn.attributes["known_block_size"] = ir.DenseI32ArrayAttr.get([total * 32, 1, 1])
    fn.attributes["nvvm.maxnreg"] = ir.IntegerAttr.get(i32_t, _attr(op, "maxnreg"))
    fn.attributes["tile.consumer_threads"] = ir.IntegerAttr.get(i32_t, self.threads)
    # (warp - first) <u count: first <= warp < first + count
    self.map[op.results[0]] = arith.cmpi(arith.CmpIPredicate.ult, arith.subi(self.warp, i32(first)), i32(count))


@lowering("tile.set_max_registers", target="gpu")
def op_tile_set_max_registers(self, op):
    action = nvvm.SetMaxRegisterAction.increase if _attr(op, "increase") else nvvm.SetMaxRegisterAction.decrease
    nvvm.SetMaxRegisterOp(_attr(op, "count"), action)


@lowering("tile.mbarrier_arrive", target="gpu")
def op_tile_mbarrier_arrive(self, op):
    bars_v, slot, live = op.operands
    lane0 = arith.andi(arith.cmpi(arith.CmpIPredicate.eq, self.lane, i32(0)), self.value(live))
    branch = scf.IfOp(lane0)
    with ir.InsertionPoint(branch.then_block):
        nvgpu.MBarrierArriveOp(self.map[bars_v], to_index(self.value(slot)))
        scf.YieldOp([])


@register_pass("tile-consumer-barriers")
@dataclass
class ConsumerBarriers:
    """In a warp-specialized kernel, each block barrier the consumers pass (every `gpu.barrier`
    after their `setmaxnreg.inc`) becomes `bar.sync 1, <consumer threads>`: the producer
    warpgroup never reaches them, and `bar.sync 0` would wait for it forever."""

    def run(self, module_op):
        for fn in [op for op in all_ops(module_op) if op.name == "gpu.func" and "tile.consumer_threads" in op.attributes]:
            threads = _attr(fn, "tile.consumer_threads")
            for grow in [op for op in all_ops(fn) if op.name == "nvvm.setmaxregister"
                         and str(op.attributes["action"]).endswith("increase>")]:
                block = grow.block
                ops = [o.operation for o in block.operations]
                for op in ops[ops.index(grow) + 1:]:
                    for barrier in [b for b in all_ops(op) if b.name == "gpu.barrier"]:
                        with ir.InsertionPoint(barrier), barrier.location:
                            nvvm.BarrierOp(None, barrierId=i32(CONSUMER_BARRIER), numberOfThreads=i32(threads))
                        barrier.erase()
