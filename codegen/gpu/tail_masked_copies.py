"""Async copies and stores of runs cut by a bound (methods of the GPU `Translator`).

A `tile.async_copy` whose mask is `uniform & (index < bound)`, where `index` counts up along
the run (the columns of a K block, `k0 + arange(0, BK) < K`) and `bound` is the same along
it, is copied in whole 16-byte `cp.async`s whose source size is the run's elements below the
bound (the hardware fills the rest with zeros), not element by element: a descriptor made in
the kernel from a loaded shape (tutorial 08's grouped GEMM) bounds its K blocks so, and
nothing there proves K a multiple of the run. A `tile.store` so masked in a kernel with a dot
(a GEMM's epilogue) writes each run with one vector store, or where the bound cuts it (the
last run of a row) element by element. A run starts on a multiple of its width (the index's
divisibility), so it never straddles 0 or 2**32: the index below the bound at the run's start
and the count `bound - start` (at most the width) say which elements are in, for `slt` and
`ult` alike.

    # the mask's leaves, per run of w elements starting at s
    %ok = (uniform leaves at s) & (index(s) < bound(s))
    %size = select(%ok, min(bound(s) - index(s), w), 0)
    cp.async.cg.shared.global [dst], [src], 16, %size
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, memref, nvgpu, scf, vector

from ...dialects.layout import element_bits as bits
from ...passes.tile_fuse import through_groups
from ..common.ir_builders import const_index, if_else, to_index
from .first_copies import guards, issue_copy, linear
from .static_registers import thread_coords
from .register_vectors import elements, from_elements, i32
from .register_vectors import splat as _splat

_BELOW = (int(arith.CmpIPredicate.slt), int(arith.CmpIPredicate.ult))


@dataclass
class TailMask:
    width: int
    uniform: list  # leaves constant along each run
    tails: list  # (the cmpi op of `index < bound`, per dim whether the mask broadcasts it)


def _leaves(mask) -> list:
    """The operands of the mask's `&`s, through fusion groups and layout conversions."""
    out, todo = [], [through_groups(mask)]
    while todo:
        v = todo.pop()
        name = None if isinstance(v.owner, ir.Block) else v.owner.operation.name
        if name in ("arith.andi", "tile.convert_layout"):
            todo += [through_groups(o) for o in v.owner.operation.operands]
        else:
            out.append(v)
    return out


def _peeled(v):
    """(the cmpi under v's broadcasts and layout conversions, per dim whether v broadcasts it), or None."""
    shape = list(ir.RankedTensorType(v.type).shape)
    spread = [False] * len(shape)
    while not isinstance(v.owner, ir.Block) and v.owner.operation.name in ("tile.broadcast", "tile.convert_layout"):
        op = v.owner.operation
        src = list(ir.RankedTensorType(op.operands[0].type).shape)
        spread = [b or (s == 1 and d != 1) for b, s, d in zip(spread, src, shape)]
        v = through_groups(op.operands[0])
    if isinstance(v.owner, ir.Block) or v.owner.operation.name != "arith.cmpi":
        return None
    return v.owner.operation, spread


def tail_mask(self, width: int, mask) -> TailMask | None:
    """The mask as uniform leaves and `index < bound` leaves over runs of `width` elements (the
    offsets' runs, `run_width` without the mask), wider than its own constancy allows, or None."""
    if width <= 1 or not isinstance(mask.type, ir.RankedTensorType):
        return None
    uniform, tails = [], []
    for leaf in _leaves(mask):
        if self.axis(leaf).constancy >= width:
            if leaf.type != mask.type and not self.rematerializable(leaf):
                return None  # (read from registers of another layout)
            uniform.append(leaf)
            continue
        found = _peeled(leaf)
        if found is None:
            return None
        cmp, spread = found
        predicate = ir.IntegerAttr(cmp.attributes["predicate"]).value
        index, bound = (self.axis(o) for o in cmp.operands)
        if (predicate not in _BELOW or spread[-1] or index.contiguity < width or index.divisibility % width
                or bound.constancy < width or not all(self.rematerializable(o) for o in cmp.operands)):
            return None
        tails.append((cmp, spread))
    return TailMask(width, uniform, tails) if tails else None


def at_run_starts(self, dist, starts: list[int], coords: tuple, tiles: list) -> list[dict]:
    """Each tile's value at the first register of each run ({register: value}): where the
    tile is recomputable (offsets and masks made of aranges and splats), evaluated there
    only, for the copies are made a run at a time; an i1 mask made for every register
    (and replicated along each run) costs bit packing and unpacking in the PTX, about
    a hundred instructions a K step for attention's K and V. `coords`: per dim, the
    coordinates of every register (elements)."""
    out, at = [], None
    for v in tiles:
        if len(starts) < dist.num_registers and self.rematerializable(v):
            if at is None:
                at = [from_elements([c[r] for r in starts], ir.IntegerType.get_signless(32)) for c in coords]
                static = [c[:, starts] for c in thread_coords(dist, self.threads)]
            got = elements(self.eval_at(v, at, len(starts), static), len(starts))
            out.append(dict(zip(starts, got)))
        else:
            out.append(dict(enumerate(elements(self.value(v), dist.num_registers))))
    return out


def run_sizes(self, dist, offsets, tm: TailMask) -> tuple[list[int], dict, list]:
    """(the runs' first registers, the offsets there, each run's elements in bounds as an index)."""
    n, w = dist.num_registers, tm.width
    coords = [elements(c, n) for c in self.coords(dist)]
    starts = list(range(0, n, w))
    offs, *uniform = at_run_starts(self, dist, starts, coords, [offsets, *tm.uniform])
    at = [from_elements([c[r] for r in starts], ir.IntegerType.get_signless(32)) for c in coords]
    zero = _splat(i32(0), len(starts))
    counts = []  # per tail leaf, per run: the elements below the bound (0 where the run starts at or past it)
    for cmp, spread in tm.tails:
        here = [zero if s else c for c, s in zip(at, spread)]
        index, bound = (elements(self.eval_at(o, here, len(starts)), len(starts)) for o in cmp.operands)
        predicate = arith.CmpIPredicate(ir.IntegerAttr(cmp.attributes["predicate"]).value)
        width = arith.ConstantOp(index[0].type, w).result
        counts.append([arith.select(arith.cmpi(predicate, i, b), arith.minui(arith.subi(b, i), width),
                                    arith.ConstantOp(i.type, 0).result) for i, b in zip(index, bound)])
    sizes = []
    for k, r in enumerate(starts):
        size = counts[0][k]
        for more in counts[1:]:
            size = arith.minui(size, more[k])
        size = arith.index_cast(ir.IndexType.get(), size)
        for u in uniform:
            size = arith.select(u[r], size, const_index(0))
        sizes.append(size)
    return starts, offs, sizes


def tail_copy(self, tile, flat, dist, offsets, tm: TailMask, slot_coords) -> None:
    """The copies of `tail_mask`'s runs (`op_tile_async_copy`'s, into a slot of `tile`, whose
    registers `slot_coords` places)."""
    n, w = dist.num_registers, tm.width
    rows, cols = slot_coords([elements(c, n) for c in self.coords(dist)], n)
    starts, offs, sizes = run_sizes(self, dist, offsets, tm)
    first = guards(self, linear(thread_coords(dist, self.threads), dist.shape)[:, starts])  # one copy of a run
    for r, size, f in zip(starts, sizes, first):
        dst = to_index(tile.offset(rows[r], cols[r]))
        issue_copy(self, f, lambda r=r, dst=dst, size=size: nvgpu.DeviceAsyncCopyOp(
            tile.buf, [dst], flat, [to_index(offs[r])], ir.IntegerAttr.get(ir.IndexType.get(), w), srcElements=size,
            bypassL1=ir.UnitAttr.get() if w * bits(tile.elem) == 128 else None).result)


def tail_store(self, flat, dist, offsets, values: list, tm: TailMask) -> None:
    """`op_tile_store`'s runs: one vector store where the whole run is in bounds, else its
    elements below the bound one by one (the last run of a row, at most)."""
    w, elem = tm.width, flat.type.element_type
    starts, offs, sizes = run_sizes(self, dist, offsets, tm)
    for r, size in zip(starts, sizes):
        start = to_index(offs[r])
        whole = arith.cmpi(arith.CmpIPredicate.eq, size, const_index(w))
        run = from_elements(values[r:r + w], elem)

        def each(r=r, size=size, start=start):
            for j in range(w - 1):  # (the run is cut: its last element is out)
                if_else(arith.cmpi(arith.CmpIPredicate.ult, const_index(j), size), None,
                        lambda j=j: memref.StoreOp(values[r + j], flat, [arith.addi(start, const_index(j))]), None)

        op = scf.IfOp(whole, [], has_else=True)
        with ir.InsertionPoint(op.then_block):
            vector.StoreOp(run, flat, [start], alignment=w * bits(elem) // 8)
            scf.YieldOp([])
        with ir.InsertionPoint(op.else_block):
            each()
            scf.YieldOp([])

