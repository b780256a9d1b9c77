"""`tile.print` on a GPU: `vprintf` (upstream `gpu.printf`) per register, of the first copy of
each element a thread holds (`common/device_print.py` has the format and the CPU's printf)."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, gpu

from ..common.device_print import _line, _prefix
from ..common.ir_builders import if_else
from ..common.lowerings import lowering
from .distributed_atomic import first_copies
from .register_vectors import elements


@lowering("tile.print", target="gpu")
def op_tile_print(self, op):
    value = op.operands[0]
    pids = [arith.index_cast(ir.IntegerType.get_signless(32), gpu.block_id(d)) for d in (gpu.Dimension.x, gpu.Dimension.y,
                                                                                       gpu.Dimension.z)]
    if not isinstance(value.type, ir.RankedTensorType):  # once a program, from thread 0
        fmt, v = _line(_prefix(op), 0, self.value(value))
        first = arith.cmpi(arith.CmpIPredicate.eq, self.tid, arith.ConstantOp(self.tid.type, 0).result)
        if_else(first, None, lambda: gpu.printf(fmt, *pids, v), None)
        return
    dist = self.dist(value)
    n = dist.num_registers
    coords = [elements(c, n) for c in self.coords(dist)]
    values = elements(self.value(value), n)
    firsts = first_copies(self, dist)
    for r in range(n):
        def emit(r=r):
            fmt, v = _line(_prefix(op), dist.rank, values[r])
            gpu.printf(fmt, *pids, *(c[r] for c in coords), v)

        if firsts is None:
            emit()
        else:
            if_else(firsts[r], None, emit, None)
