"""A row reduction of a tensor-core tile, where its registers are (methods of the GPU
`Translator`, called by `op_tile_reduce` and `op_tile_convert_layout`).

`tile-assign-layouts` reduces on blocked layouts: attention's scores, in the
`#tile.wgmma` (or `#tile.mma`) layout, reach their row max and row sum through a
`tile.convert_layout` of the whole tile, through shared memory, at every K step.
Where the tensor-core layout gives each row to one warp (`#tile.wgmma`: warp w % 4 of
a warpgroup holds rows 16 (w % 4) .. + 15 of each 64-row block), the reduction needs
no shared memory: each thread combines its registers of a row, then the four lanes
that share the row (lane = 4 * group + t) combine with two xor shuffles, as Triton
reduces in the mma layout. The conversion is then never made (`defer`: nothing reads
it); the row results reach the result's layout through a shared buffer of one value a
row, or stay where they are for broadcasts back that read them there (`held_registers`).

    %b = "tile.convert_layout"(%s) : (tensor<128x64xf32, #tile.wgmma<[2, 1]>>) -> tensor<128x64xf32, #blocked>
    %m = "tile.reduce"(%b) {axis = 1, kind = "max"} : (...) -> tensor<128xf32, #blocked1>
    # lowered as: per thread, the max of its 16 registers of each of its 2 rows;
    # shfl.bfly 1, 2; each lane stores its rows' maxima at buf[row]; barrier; loads in #blocked1
"""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, gpu, memref

from ..common.ir_builders import to_index
from .distributed_layout import MmaDistribution
from .first_copies import copy_bits, copy_number
from .held_registers import defer, only_read_through, pick
from .lane_shuffles import in_thread_combine, shuffle_combine
from .register_vectors import elements, from_elements, i32
from .static_registers import thread_coords


def mma_row_source(self, op):
    """(the tensor-core tile that `op`, a reduction along rows of its conversion to a blocked
    layout, can reduce in place, (lane stride, lanes) of a row): each warp holds whole rows
    (no two warps a row) and the lanes that share a row differ in a run of low lane bits.
    Else None."""
    if op.name != "tile.reduce" or ir.IntegerAttr(op.attributes["axis"]).value != 1:
        return None
    src = op.operands[0]
    if isinstance(src.owner, ir.Block) or src.owner.operation.name != "tile.convert_layout":
        return None
    tile = src.owner.operation.operands[0]
    dist = self.dist(tile)
    if not isinstance(dist, MmaDistribution) or len(dist.shape) != 2:
        return None
    lanes = _row_lanes(self, dist)
    return (tile, lanes) if lanes is not None else None


def _row_lanes(self, dist):
    """(lane stride, lanes) of the lanes that share each row; None where warps share rows."""
    rows = thread_coords(dist, self.threads)[0]
    per_warp = [set(w.ravel().tolist()) for w in rows.reshape(self.threads // 32, 32, -1)]
    if any(a & b for i, a in enumerate(per_warp) for b in per_warp[i + 1:]):
        return None
    tid = np.arange(self.threads)
    masks = [m for m in (1, 2, 4, 8, 16) if (rows[tid ^ m] == rows).all()]
    if masks and masks != [masks[0] << i for i in range(len(masks))]:
        return None
    return (masks[0], 1 << len(masks)) if masks else (1, 1)


def reduce_mma_rows(self, op, tile, row_lanes):
    """`op` (see `mma_row_source`) on `tile`'s registers: in the thread, across the lanes of
    each row; the result in its layout, or deferred for broadcasts that read it in place."""
    kind = ir.StringAttr(op.attributes["kind"]).value
    dist = self.dist(tile)
    elem = ir.RankedTensorType(tile.type).element_type
    n = dist.num_registers
    regs = elements(self.value(tile), n)
    rows = thread_coords(dist, self.threads)[0]
    groups: dict = {}
    for r in range(n):  # registers that hold the same row in every thread
        groups.setdefault(rows[:, r].tobytes(), []).append(r)
    stride, lanes = row_lanes
    values, firsts = [], []
    for rs in groups.values():
        acc = regs[rs[0]]
        for r in rs[1:]:
            acc = in_thread_combine(kind, elem, acc, regs[r])
        values.append(shuffle_combine(kind, elem, acc, stride, lanes))
        firsts.append(rs[0])
    result = op.results[0]
    held = [rows[:, firsts]]
    self.partials[result] = (values, held)
    picked = pick(held, thread_coords(self.dist(result), self.threads))
    if picked is not None:
        self.map[result] = from_elements([values[i] for i in picked], elem)
    elif only_read_through(result):
        defer(self, result, lambda: _into_layout(self, result, dist, values, firsts, elem))
    else:
        self.map[result] = _into_layout(self, result, dist, values, firsts, elem)


def _into_layout(self, result, dist, values, firsts, elem):
    """The row results into the result's layout through a buffer of one value a row per copy:
    the threads that hold a row (a quad's lanes, warpgroups side by side along N) each write
    their own copy, row r's k-th at r * copies + k, and readers read copy 0. Distinct
    addresses, so no race (`first_copies.py`), and no guard: a predicate live through an
    attention loop made ptxas spill a kernel at 255 registers."""
    per_row = set(copy_bits(thread_coords(dist, self.threads)[0][:, firsts]))
    bits = per_row.pop() if len(per_row) == 1 else 0  # (rows copied alike in every register, as in these layouts)
    copies = 1 << bin(bits).count("1")
    buf = self.scratch(elem, dist.shape[0] * copies)
    gpu.barrier()
    at = elements(self.coords(dist)[0], dist.num_registers)
    k = copy_number(self, bits)
    for v, r in zip(values, firsts):
        slot = arith.addi(arith.muli(at[r], i32(copies)), k) if copies > 1 else at[r]
        memref.StoreOp(v, buf, [to_index(slot)])
    gpu.barrier()
    rdist = self.dist(result)
    rows = elements(self.coords(rdist)[0], rdist.num_registers)
    out = [memref.LoadOp(buf, [to_index(arith.muli(c, i32(copies)) if copies > 1 else c)]).result for c in rows]
    return from_elements(out, elem)


def only_reduced_in_place(self, convert) -> bool:
    """Whether every user of a `convert_layout` reduces its rows in place (so that the
    conversion need not be made)."""
    users = [u.owner for u in convert.results[0].uses]
    return bool(users) and all(mma_row_source(self, u) is not None for u in users)


__all__ = ["mma_row_source", "reduce_mma_rows", "only_reduced_in_place"]
