"""`tile-pipeline`: software-pipeline the operand loads of `dot` in a loop over K,
through rings of `num_stages` shared-memory buffers filled by async copies.

Our own pass, at the tile level (upstream's `scf` pipeliner schedules ops but
knows nothing of async copies into shared rings, and the nvgpu ops only exist
below the distribution to threads). Like Triton's pipeliner, it works on the
tile IR after layout assignment, so the copies it makes keep the layouts of the
loads they replace; `convert-tile-to-gpu` lowers the new ops to
`nvgpu.device_async_copy` (`cp.async`), commit/wait groups, and `dot` reads its
operands from the ring (`ldmatrix` for mma.sync, matrix descriptors for wgmma).

A `tile.load` in an `scf.for` body is pipelined when its only users are `dot`
operands in that body, its `other` is zero (what `cp.async` fills in) and its
offsets and mask depend only on the induction variable and on values defined
outside the loop. For S = num_stages (>= 2):

    # prologue: iterations 0 .. S-2 are started before the loop
    %ring = tile.local_alloc : memref<S x R x C x T, workgroup>
    (offsets, mask at iv = lb + s*step), mask &= (that iv < ub)
    tile.async_copy %ring[s], ...   ; tile.async_commit          (s = 0 .. S-2)
    scf.for %iv ... {
      # steady state: wait for iteration i, start iteration i + S - 1 in the slot
      # iteration i - 1 used (free: every thread passed the wait's barrier)
      tile.async_wait {pending = S-2}
      %a = tile.local_load %ring[i % S]
      (offsets, mask at iv + (S-1)*step), mask &= (iv + (S-1)*step < ub)
      tile.async_copy %ring[(i + S - 1) % S], ... ; tile.async_commit
      ... tile.dot %a, ...
    }
    # epilogue: the last S-1 groups copy nothing (their masks are false); drain them
    tile.async_wait {pending = 0}

Issuing the copies of the last iterations with an all-false mask, rather than
peeling the loop, keeps one copy of the body (as Triton does); a false mask
makes `cp.async` read nothing.

A dot whose accumulator is in the `#tile.wgmma` layout may keep running while
the next iteration starts (`in_flight = 1`: it waits only for the previous
one) when nothing but the next dot reads its result. Its slots are then still
being read during the next iteration, so the copies run one iteration less
ahead (S - 2: iteration i + S - 2 goes into the slot of iteration i - 2, which
every warpgroup has finished), and after the loop a `tile.dot_wait` waits for
the last dot before its result is read:

    scf.for ... {
      tile.async_wait {pending = S-3}
      ... copies of iteration i + S - 2 into slot (i + S - 2) % S ...
      %acc2 = tile.dot %a, %b, %acc {in_flight = 1}
    }
    %r = tile.dot_wait %loop_result {pending = 0}
    tile.async_wait {pending = 0}
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith

from ..dialects import tile_ops
from ..dialects.layout import Wgmma, encoding_of
from ..dialects.op_definition import create
from .registry import register_pass
from .tile_fuse import through_groups
from .walk import all_ops

_DOT_OPERANDS = (0, 1)


def _is_zero(v) -> bool:
    v = through_groups(v)
    if isinstance(v.owner, ir.Block):
        return False
    op = v.owner.operation
    if op.name == "tile.splat":
        return _is_zero(op.operands[0])
    if op.name == "arith.constant":
        attr = op.attributes["value"]
        if isinstance(attr, ir.DenseElementsAttr) and attr.is_splat:
            attr = attr.get_splat_value()
        if isinstance(attr, ir.FloatAttr):
            return attr.value == 0.0 and str(attr).lstrip().find("-") != 0
        if isinstance(attr, ir.IntegerAttr):
            return attr.value == 0
    return False


def _inside(op, region_op) -> bool:
    """Whether op is nested (at any depth) in region_op."""
    p = op
    while p is not None:
        if p == region_op:
            return True
        p = p.parent
    return False


def _slice(values, body, loop, iv):
    """The ops of `body` that compute `values`, in body order; None if they read a loop-carried value."""
    needed, work = set(), list(values)
    while work:
        v = work.pop()
        if v == iv:
            continue
        if isinstance(v.owner, ir.Block):
            if _inside(v.owner.owner, loop):  # an iter_arg (or a block argument nested in the body)
                return None
            continue
        op = v.owner.operation
        if not _inside(op, loop):
            continue
        top = op
        while top.parent != loop:  # the op of `body` that holds it
            top = top.parent
        if top in needed:
            continue
        if top.name not in ("scf.execute_region",) and top.regions:
            return None
        needed.add(top)
        for inner in all_ops(top):
            for o in inner.operands:
                work.append(o)
    return [op.operation for op in body.operations if op.operation in needed]


def _remap(op, mapping):
    for inner in all_ops(op):
        for i, o in enumerate(inner.operands):
            if o in mapping:
                inner.operands[i] = mapping[o]


def _clone_slice(ops, mapping, ip):
    for op in ops:
        new = op.clone(ip=ip)
        _remap(new, mapping)
        for a, b in zip(op.results, new.results):
            mapping[a] = b


def _i32(v: int, ty):
    return arith.ConstantOp(ty, v).result


@register_pass("tile-pipeline")
@dataclass
class TilePipeline:
    num_stages: int = 2

    def run(self, module_op):
        if self.num_stages < 2:
            return
        for loop in [op for op in all_ops(module_op) if op.name == "scf.for"]:
            self.pipeline(loop)

    def candidates(self, loop, body, iv) -> list:
        found = []
        for op in body.operations:
            op = op.operation
            if op.name != "tile.load":
                continue
            base, offsets, mask, other = op.operands
            t = ir.RankedTensorType(op.results[0].type)
            users = [(u.owner, u.operand_number) for u in op.results[0].uses]
            if (t.rank != 2 or str(t.element_type) not in ("f16", "bf16") or not users or not _is_zero(other)
                    or any(o.name != "tile.dot" or n not in _DOT_OPERANDS or o.parent != loop for o, n in users)):
                continue
            if not isinstance(base.owner, ir.Block) and _inside(base.owner.operation, loop):
                continue
            ops = _slice([offsets, mask], body, loop, iv)
            if ops is not None:
                found.append((op, ops))
        return found

    def pipeline(self, loop):
        body = loop.regions[0].blocks[0]
        iv = body.arguments[0]
        found = self.candidates(loop, body, iv)
        if not found:
            return
        S = self.num_stages
        async_dots = self.async_dots(loop, body, found) if S >= 3 else []
        ahead = S - 1 - (1 if async_dots else 0)  # iterations the copies run ahead
        lb, ub, step = list(loop.operands)[:3]
        ity = iv.type
        rings = []
        # Prologue: rings and the first `ahead` iterations' copies, before the loop.
        with ir.InsertionPoint(loop), loop.location:
            for load, _ in found:
                t = ir.RankedTensorType(load.results[0].type)
                rings.append(tile_ops.local_alloc(S, list(t.shape), t.element_type))
            for s in range(ahead):
                it = arith.addi(lb, arith.muli(step, _i32(s, ity))) if s else lb
                self.issue(found, rings, _i32(s, ity), it, ub, ir.InsertionPoint(loop))
        # Steady state: at the top of the body, wait for this iteration's group, read the
        # slots, and start iteration i + ahead in its slot (free: the dots that read it
        # finished before every thread passed the wait's barrier).
        first = body.operations[0]
        top = ir.InsertionPoint(first)
        with top, loop.location:
            tile_ops.async_wait(ahead - 1)
            i = arith.divsi(arith.subi(iv, lb), step)
            read = arith.remsi(i, _i32(S, ity))
            write = arith.remsi(arith.addi(i, _i32(ahead, ity)), _i32(S, ity))
            for (load, _), ring in zip(found, rings):
                got = tile_ops.local_load(ring, read, load.results[0].type)
                load.results[0].replace_all_uses_with(got)
            nxt = arith.addi(iv, arith.muli(step, _i32(ahead, ity)))
            self.issue(found, rings, write, nxt, ub, top)
        # Epilogue: wait for the last dots, drain the copies still in flight (they copy nothing).
        with ir.InsertionPoint.after(loop.operation), loop.location:
            for dot, n in async_dots:
                dot.attributes["in_flight"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 1)
                result = loop.results[n]
                done = tile_ops.dot_wait(result, 0)
                result.replace_all_uses_except(done, done.owner.operation)
            tile_ops.async_wait(0)
        for load, ops in found:
            load.erase()
        for load, ops in found:
            for op in reversed(ops):
                if all(not list(r.uses) for r in op.results):
                    op.erase()

    def async_dots(self, loop, body, found) -> list:
        """(dot, loop result number) of the pipelined wgmma dots that may stay in flight: each
        accumulates into a loop-carried value that only it reads and that only the loop yields."""
        dots = {u.owner for load, _ in found for u in load.results[0].uses}
        out = []
        yield_op = body.operations[len(body.operations) - 1].operation
        for dot in dots:
            acc, result = dot.operands[2], dot.results[0]
            if not isinstance(encoding_of(result.type), Wgmma) or not isinstance(acc.owner, ir.Block) or acc.owner != body:
                return []
            uses = [(u.owner, u.operand_number) for u in result.uses]
            if len(uses) != 1 or uses[0][0] != yield_op or len(list(acc.uses)) != 1:
                return []
            n = uses[0][1]
            if acc.arg_number != n + 1:  # the iter_arg the yield feeds back
                return []
            out.append((dot, n))
        return out

    def issue(self, found, rings, slot, it, ub, ip):
        """Clone the loads' offsets and masks at induction value `it` (one copy of the ops
        they share) and start their copies into `slot`, as one commit group."""
        loop = found[0][0].parent
        needed = {op for _, ops in found for op in ops}
        mapping = {loop.regions[0].blocks[0].arguments[0]: it}
        _clone_slice([op.operation for op in loop.regions[0].blocks[0].operations if op.operation in needed], mapping, ip)
        with ip:
            live = arith.cmpi(arith.CmpIPredicate.slt, it, ub)
            for (load, _), ring in zip(found, rings):
                base, offsets, mask, _ = load.operands
                m = mapping.get(mask, mask)
                m = arith.andi(m, create("splat", [m.type], [live]).result)
                tile_ops.async_copy(ring, slot, base, mapping.get(offsets, offsets), m)
            tile_ops.async_commit()
