"""Copies of the next output tile issued before this one's epilogue, for `tile-pipeline`:
where a TMA-pipelined K loop sits in a loop over output tiles (a persistent kernel's),
its rings and mbarriers live across that outer loop, and right after the K loop the
first copies of the next tile (outer iteration t + step) start, so that they land
while this tile's epilogue runs instead of after it.

    %ring = tile.local_alloc ; %bars = tile.mbarrier_alloc           (once)
    <the first tile's first copies: the outer body's slice at t = lb, live if lb < ub>
    scf.for %t = %lb to %ub step %step {
      %base = ((t - lb) / step) * nK          ; K iterations before this tile (slot and phase)
      scf.for %k ... { wait %bars[(base + i) % S], phase ((base + i) / S) & 1 ... }
      <the next tile's first copies: the slice at t + step, slots (base + nK + s) % S,
       live if t + step < ub>
      <epilogue>
    }
    tile.local_dealloc %ring ; tile.mbarrier_dealloc %bars

Counting K iterations across tiles (`base`) keeps every slot's mbarrier phase
running on, so the barriers are initialized once. The slots the next tile's first
copies fill are those of iterations nK - S .. nK - 3, whose readers every thread
finished before the last iteration's barrier, as in the steady state.

It applies when the K loop's bounds do not change across tiles (so nK does not),
the K loop is the only loop in the outer body, and what the copies' starts need from
the outer body is index arithmetic on the outer induction variable (cloned at t + step).
The ring then holds shared memory through the epilogue, whose layout conversion
goes through what is left above it (in row chunks, `distributed_convert.py`);
a ring larger than `MAX_RING_BYTES` keeps to one tile.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith

from .loop_slice import body_slice, clone_slice, inside
from .walk import all_ops

MAX_RING_BYTES = 200 * 1024  # of the 227 KB of an H100/H200 block, the rest for the epilogue's exchanges
_PURE = ("tile.splat", "tile.arange", "tile.broadcast", "tile.reshape", "tile.trans", "tile.program_id", "tile.num_programs",
         "tile.convert_layout", "scf.execute_region", "scf.yield")


@dataclass
class NextTileCopies:
    """How a K loop's copies run across the loop over tiles around it (module doc)."""

    outer: ir.Operation  # the loop over tiles
    ops: list  # the ops of its body that the copies' starts need, in order

    @property
    def tile(self):
        return self.outer.regions[0].blocks[0].arguments[0]

    def first_tile(self, ip) -> tuple[dict, ir.Value]:
        """(values of the outer body at its first iteration, whether it runs), made at ip
        (before the loop over tiles): what the first tile's prologue copies read."""
        t0, t_ub = list(self.outer.operands)[:2]
        mapping = {self.tile: t0}
        clone_slice(self.ops, mapping, ip)
        with ip:
            return mapping, arith.cmpi(arith.CmpIPredicate.slt, t0, t_ub)

    def base(self, loop) -> tuple[ir.Value, ir.Value]:
        """(K iterations of the tiles before this one, of this one), before the K loop: where the
        ring's slots and phases stand."""
        lb, ub, step = list(loop.operands)[:3]
        t_lb, _, t_step = list(self.outer.operands)[:3]
        ity = lb.type
        with ir.InsertionPoint(loop), loop.location:
            one, zero = arith.ConstantOp(ity, 1).result, arith.ConstantOp(ity, 0).result
            trips = arith.maxsi(arith.divsi(arith.addi(arith.subi(ub, lb), arith.subi(step, one)), step), zero)
            return arith.muli(arith.divsi(arith.subi(self.tile, t_lb), t_step), trips), trips

    def next_tile(self, issue, its: list, ub, stages: int, base, trips, ip) -> None:
        """At ip (right after the K loop), the next tile's first copies (iterations `its`, at the
        outer body's values for t + step, live if that tile runs), into the slots after this
        tile's last."""
        t_ub, t_step = list(self.outer.operands)[1:3]
        with ip:
            t_next = arith.addi(self.tile, t_step)
        mapping = {self.tile: t_next}
        clone_slice(self.ops, mapping, ip)
        with ip:
            more = arith.cmpi(arith.CmpIPredicate.slt, t_next, t_ub)
            done = arith.addi(base, trips)
            ity = done.type
        for s, it in enumerate(its):
            with ip:
                slot = arith.remsi(arith.addi(done, arith.ConstantOp(ity, s).result), arith.ConstantOp(ity, stages).result)
            issue(slot, it, ub, ip, mapping, more)


def plan(loop, inner_ops, starts, ring_bytes: int) -> NextTileCopies | None:
    """The copies of `loop` (a K loop whose starts' slice in its body is `inner_ops`) across the
    loop over tiles around it, where they can run a tile ahead; else None."""
    outer = loop.operation.parent
    if outer is None or outer.name != "scf.for" or ring_bytes > MAX_RING_BYTES:
        return None
    outer_body = outer.regions[0].blocks[0]
    if any(op.operation != loop.operation and op.name == "scf.for" for op in all_ops(outer) if op != outer):
        return None
    if any(not _outside(v, outer) for v in list(loop.operands)[:3]):
        return None
    needed = [v for op in inner_ops for inner in all_ops(op) for v in inner.operands]
    needed += [v for v, _ in starts if v is not None]
    needed = [v for v in needed if not _outside(v, outer) and _outside(v, loop)]
    ops = body_slice(needed, outer_body, outer, outer_body.arguments[0])
    if ops is None or any(not (o.name.startswith("arith.") or o.name in _PURE) for op in ops for o in all_ops(op)):
        return None
    return NextTileCopies(outer, ops)


def _outside(v, op) -> bool:
    """Whether v is defined outside op (so it does not change while op runs)."""
    owner = v.owner.owner if isinstance(v.owner, ir.Block) else v.owner.operation
    return not inside(owner, op)
