"""`tile.atomic_rmw` in the distributed GPU codegen: every element combined once.

A layout may give one element to several threads (a tile smaller than its layout's CTA
tile wraps around; a slice layout's lanes, or a row layout's quad, hold copies): a store
may write the element from each copy, an atomic must not. Each register's update runs in
the thread that holds the element's first copy, where its mask holds:

    # before
    %old = "tile.atomic_rmw"(%y, %offs, %v, %mask) {kind = "add"} : (...) -> tensor<256xf32, #tile.blocked<...>>
    # after, per register r
    %old_r = scf.if (%mask_r & %first_copy_r) { memref.atomic_rmw addf %v_r, %flat[%off_r] } else { 0.0 }

`memref.atomic_rmw` lowers to `llvm.atomicrmw`, PTX `atom.global.add.f32`. Where the old
values are used, the copies read them back from shared memory, where the first copies
wrote them; a scalar atomic runs in thread 0, and every thread reads its old value back.
"""

from __future__ import annotations

import functools
import math

from mlir import ir
from mlir.dialects import arith, gpu, memref

from ..dialects.layout import element_bits
from .convert_tile_to_linalg import atomic_update, const_index, flat_view, if_else, to_index
from .distributed_layout import Distribution, RowsDistribution, row_major_strides
from .register_vectors import elements, from_elements, i32, linear_index


def first_copies(self, dist) -> list | None:
    """Per register, an i1: whether this thread holds the first copy of its element (None:
    every element has one copy, as in the tensor-core layouts)."""
    if isinstance(dist, RowsDistribution):  # the four threads of a quad hold a row
        first = arith.cmpi(arith.CmpIPredicate.eq, arith.andi(self.lane, i32(3)), i32(0))
        return [first] * dist.num_registers
    if not isinstance(dist, Distribution):
        return None
    L, n = dist.layout, dist.num_registers
    conds = [[] for _ in range(n)]
    unwrapped = self.unwrapped_coords(dist)
    # ids past those a layout uses repeat the ones below
    for ids, used, have in ((self.lane, math.prod(L.threads_per_warp), 32),
                            (self.warp, math.prod(L.warps_per_cta), self.num_warps)):
        if used < have:
            below = arith.cmpi(arith.CmpIPredicate.ult, ids, i32(used))
            for c in conds:
                c.append(below)
    for d in range(dist.rank):
        if dist.shape[d] % dist.cta(d) == 0:
            continue
        # a coordinate that reaches past the tile, before it wraps, is a copy
        for r, at in enumerate(elements(unwrapped[d], n)):
            conds[r].append(arith.cmpi(arith.CmpIPredicate.ult, at, i32(dist.shape[d])))
    if not conds[0]:
        return None
    return [functools.reduce(arith.andi, c) for c in conds]


def op_tile_atomic_rmw(self, op):
    base, offsets, value, mask = op.operands
    elem = ir.MemRefType(base.type).element_type
    update = atomic_update(op, flat_view(self.value(base)))
    if not isinstance(offsets.type, ir.RankedTensorType):
        first = arith.cmpi(arith.CmpIPredicate.eq, self.tid, i32(0))
        old = update(self.value(offsets), self.value(value), arith.andi(self.value(mask), first))
        if list(op.result.uses):  # thread 0's old value, to every thread
            buf = self.scratch(elem, 1, align=element_bits(elem) // 8)
            gpu.barrier()
            if_else(first, None, lambda: memref.StoreOp(old, buf, [const_index(0)]), None)
            gpu.barrier()
            old = memref.LoadOp(buf, [const_index(0)]).result
        self.map[op.result] = old
        return
    dist = self.dist(value)
    n = dist.num_registers
    offs, vals, masks = (elements(self.value(x), n) for x in (offsets, value, mask))
    first = first_copies(self, dist)
    if first is not None:
        masks = [arith.andi(m, f) for m, f in zip(masks, first)]
    olds = [update(o, v, m) for o, v, m in zip(offs, vals, masks)]
    if first is not None and list(op.result.uses):
        olds = _to_copies(self, dist, olds, first, elem)
    self.map[op.result] = from_elements(olds, elem)


def _to_copies(self, dist, olds: list, first: list, elem) -> list:
    """Each element's old value, from the thread that updated it to every thread holding a
    copy of it, through shared memory: a copy's own `else` value (0) would otherwise reach
    what reads the result (the histogram's ranks, stored from every copy: a race whose
    winner changed under compute-sanitizer)."""
    n = dist.num_registers
    buf = self.scratch(elem, math.prod(dist.shape), align=16)
    at = elements(linear_index(self.coords(dist), row_major_strides(dist.shape), n), n)
    gpu.barrier()
    for old, i, f in zip(olds, at, first):
        if_else(f, None, lambda old=old, i=i: memref.StoreOp(old, buf, [to_index(i)]), None)
    gpu.barrier()
    return [memref.LoadOp(buf, [to_index(i)]).result for i in at]
