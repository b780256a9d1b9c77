"""`tile.reduce` of a distributed tile (a method of the GPU `Translator`), in
three steps, as in Triton:

1. each thread combines its own registers that differ only along the axis;
2. lanes that hold different coordinates along the axis combine with
   `gpu.shuffle xor` (a butterfly: afterwards they all hold the result);
3. warps along the axis meet in shared memory: a scalar result is read back
   one partial per lane and shuffled again; a tile result is read back in its
   own layout.

Threads that hold copies of the same elements (a layout wider than the tile)
are left out of steps 2 and 3, so nothing is counted twice.
"""

from __future__ import annotations

import math

import numpy as np
from mlir import ir
from mlir.dialects import arith, gpu, memref

from ..common.ir_builders import combine, to_index
from ..common.lowerings import lowering
from .distributed_layout import Distribution, row_major_strides
from .distributed_mma_reduce import mma_row_source, reduce_mma_rows
from .lane_shuffles import in_thread_combine, shuffle_combine
from .first_copies import guarded, guards
from .held_registers import defer, only_read_through, pick
from .register_vectors import elements, from_elements, i32, linear_index
from .static_registers import thread_coords


def _effective(dist: Distribution, axis: int) -> tuple[int, int]:
    """Lanes and warps along `axis` that hold distinct coordinates."""
    L = dist.layout
    spt = min(L.size_per_thread[axis], dist.shape[axis])
    lanes = max(1, min(L.threads_per_warp[axis], dist.shape[axis] // spt))
    warps = max(1, min(L.warps_per_cta[axis], dist.shape[axis] // (spt * L.threads_per_warp[axis])))
    return lanes, warps


def _warp_along(self, dist, axis: int) -> np.ndarray:
    """Per thread, its warp's coordinate along `axis` (`warp_a` at compile time), modulo the
    warps that hold distinct elements (`_effective`): past them a tile shorter than the
    layout's wraps, and warp w + warps holds warp w's partial, a copy (which must not write
    past the scratch's `warps` slots)."""
    warp = np.arange(self.threads) // 32
    return warp // dist.warp_shift(axis) % _effective(dist, axis)[1]


def _scalar_across_warps(self, op, kind, elem, partial, warp_a, warps: int, dist, axis: int):
    """A full reduction's last step. Each warp writes its partial; lane i reads warp
    (i mod warps)'s and a butterfly over `warps` lanes combines them: one shared load and
    log2(warps) shuffles in every warp at once, not `warps` loads per thread (registers
    that cost occupancy). Back-to-back reductions in one block (a mean, then a variance)
    alternate between two halves of the scratch: the barrier between the previous one's
    writes and reads already orders its reads before these writes, so no barrier is needed
    ahead of the writes; nor is one ahead of the kernel's first use of shared memory."""
    block = ir.InsertionPoint.current.block
    last = self._last_scalar_reduce
    # The kernel's first use of shared memory, run once (not in a loop): nobody read it before.
    first = self.scratch_uses == 0 and block == self.entry.block
    buf = self.scratch(elem, 2 * warps)
    follows = last is not None and last[0] == block and last[1] == self.scratch_uses - 1
    half = 1 - last[2] if follows else 0
    if not follows and not first:
        gpu.barrier()
    offset = (lambda v: arith.addi(v, i32(warps))) if half else (lambda v: v)  # noqa: E731
    at = offset(warp_a)  # (every lane of a warp holds its partial: one writes)
    guarded(guards(self, _warp_along(self, dist, axis)[:, None])[0], lambda: memref.StoreOp(partial, buf, [to_index(at)]))
    gpu.barrier()
    mine = memref.LoadOp(buf, [to_index(offset(arith.andi(self.lane, i32(warps - 1))))]).result
    self.map[op.results[0]] = shuffle_combine(kind, elem, mine, 1, warps)
    self._last_scalar_reduce = (block, self.scratch_uses, half)


@lowering("tile.reduce", target="gpu")
def op_tile_reduce(self, op):
    in_place = mma_row_source(self, op)
    if in_place is not None:  # rows of a tensor-core tile, reduced where they are
        return reduce_mma_rows(self, op, *in_place)
    src = op.operands[0]
    axis = ir.IntegerAttr(op.attributes["axis"]).value
    kind = ir.StringAttr(op.attributes["kind"]).value
    dist = self.dist(src)
    elem = ir.RankedTensorType(src.type).element_type
    regs = elements(self.value(src), dist.num_registers)
    coords = [elements(c, dist.num_registers) for c in self.coords(dist)]

    # 1. within the thread
    groups: dict = {}
    for r, j in enumerate(dist.register_indices):
        key = tuple(x for d, x in enumerate(j) if d != axis)
        groups.setdefault(key, []).append(r)
    partials = {}
    for key, rs in groups.items():
        acc = regs[rs[0]]
        for r in rs[1:]:
            acc = in_thread_combine(kind, elem, acc, regs[r])
        partials[key] = (acc, rs[0])

    # 2. across lanes
    lanes, warps = _effective(dist, axis)
    stride = dist.lane_shift(axis)
    partials = {k: (shuffle_combine(kind, elem, v, stride, lanes), r) for k, (v, r) in partials.items()}

    # 3. across warps, and into the result's layout, through shared memory
    out_shape = [s for d, s in enumerate(dist.shape) if d != axis]
    result = op.results[0]
    if not out_shape and warps == 1:
        self.map[result] = next(iter(partials.values()))[0]
        return
    if warps == 1:  # each thread holds whole results for its rows: broadcasts back may read them there
        held = thread_coords(dist, self.threads)
        firsts = [r for _, r in partials.values()]
        values, where = [v for v, _ in partials.values()], [held[d][:, firsts] for d in range(dist.rank) if d != axis]
        self.partials[result] = (values, where)
        picked = pick(where, thread_coords(self.dist(result), self.threads))
        if picked is not None:  # the result's layout is a slice of this one: its registers are partials
            self.map[result] = from_elements([values[i] for i in picked], elem)
            return
        if only_read_through(result):
            defer(self, result, lambda: _into_layout(self, op, dist, axis, kind, elem, partials, coords, warps, out_shape))
            return
    made = _into_layout(self, op, dist, axis, kind, elem, partials, coords, warps, out_shape)
    if made is not None:
        self.map[result] = made


def _into_layout(self, op, dist, axis, kind, elem, partials, coords, warps, out_shape):
    """Step 3: the partials into the result's layout (combined across warps), through shared
    memory; the result's value (a scalar one across warps is mapped by `_scalar_across_warps`)."""
    result = op.results[0]
    count = math.prod(out_shape)
    out_strides = row_major_strides(out_shape)
    warp_a = arith.remui(arith.divui(self.warp, i32(dist.warp_shift(axis))), i32(warps))  # (as `_warp_along`)
    if not out_shape and warps & (warps - 1) == 0:
        _scalar_across_warps(self, op, kind, elem, next(iter(partials.values()))[0], warp_a, warps, dist, axis)
        return
    buf = self.scratch(elem, warps * count)
    # Every lane along the axis holds the result after the butterfly, and copies hold it too: one writes.
    held, kept = thread_coords(dist, self.threads), [d for d in range(dist.rank) if d != axis]
    firsts = [r for _, r in partials.values()]
    at = _warp_along(self, dist, axis)[:, None] * count + sum(held[d][:, firsts] * s for s, d in zip(out_strides, kept))
    gpu.barrier()
    for (v, r), f in zip(partials.values(), guards(self, at)):
        lin = arith.muli(warp_a, i32(count))
        for s, d in zip(out_strides, kept):
            lin = arith.addi(lin, arith.muli(coords[d][r], i32(s)))
        guarded(f, lambda v=v, lin=lin: memref.StoreOp(v, buf, [to_index(lin)]))
    gpu.barrier()
    if not out_shape:
        acc = memref.LoadOp(buf, [to_index(i32(0))]).result
        for w in range(1, warps):
            acc = combine(kind, elem, acc, memref.LoadOp(buf, [to_index(i32(w * count))]).result)
        return acc
    rdist = self.dist(result)
    out = []
    for lin in elements(linear_index(self.coords(rdist), out_strides, rdist.num_registers), rdist.num_registers):
        acc = memref.LoadOp(buf, [to_index(lin)]).result
        for w in range(1, warps):
            acc = combine(kind, elem, acc, memref.LoadOp(buf, [to_index(arith.addi(lin, i32(w * count)))]).result)
        out.append(acc)
    return from_elements(out, elem)


__all__ = ["op_tile_reduce"]
