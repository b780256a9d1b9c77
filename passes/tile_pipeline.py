"""`tile-pipeline`: software-pipeline the operand loads of `dot` in a loop over K,
through rings of `num_stages` shared-memory buffers filled by async copies.

Our own pass, at the tile level (upstream's `scf` pipeliner schedules ops but
knows nothing of async copies into shared rings, and the nvgpu ops only exist
below the distribution to threads). Like Triton's pipeliner, it works on the
tile IR after layout assignment, so the copies it makes keep the layouts of the
loads they replace; `convert-tile-to-gpu` lowers the new ops to
`nvgpu.device_async_copy` (`cp.async`), commit/wait groups, and `dot` reads its
operands from the ring (`ldmatrix` for mma.sync, matrix descriptors for wgmma).

A `tile.load` in an `scf.for` body is pipelined when its `other` is zero (what
`cp.async` fills in), its offsets and mask depend only on the induction variable,
on values defined outside the loop and on index loads (page numbers read from a
table, a scalar or a 1-D integer tile, read again ahead for the copy; such a load
then gets no ring of its own), the loop stores nothing into its tensor,
and either
- its only users are `dot` operands in that body (16-bit, or f32 going to tf32
  tensor-core dots), or
- it is a 2-D tile of 8-, 16- or 32-bit elements that the loop reads in registers
  (a quantized weight decoded before its `dot`, a paged key block), in a loop that
  holds a `dot` or asks for stages itself; in the latter without a dot, also a 1-D
  tile (a long row's chunk), in slots of one row.
A loop made by `tile.range(..., num_stages=N)` carries `tile.num_stages = N`,
which replaces the pass's option for that loop; elsewhere loops without a dot are
left alone. A `tile.local_load` that ops other than dots read is read into
registers, in its layout, right where it stands (`ld.shared`). For S stages (>= 2):

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
    tile.local_dealloc %ring                  ; its memory is free for later scratch

Issuing the copies of the last iterations with an all-false mask, rather than
peeling the loop, keeps one copy of the body (as Triton does); a false mask
makes `cp.async` read nothing.

A dot whose accumulator is in the `#tile.wgmma` layout may keep running while
the next iteration starts (`in_flight`: its lowering commits the wgmma group
but does not wait for it) when nothing but the next dot reads its result (the
next iteration's, or a dot after it that accumulates into it: INT4's two
halves of K, a chain whose wgmmas the tensor cores order, with 4 stages or
more) and both its operands are in rings. An operand made in registers (a weight decoded
from its ring) would be staged in scratch memory that the next iteration
overwrites; it gets a ring of two slots instead, written by `tile.local_store`
right before its dot and read there (`tile.local_load`), so that the dot of
iteration i reads slot i % 2 while iteration i + 1 fills the other (three slots,
i % 3, in a TMA loop where they fit at no cost in programs an SM: the loop then
needs no barrier after its mbarrier wait, `_staging_slots`). The
copies of the next stage are then issued after the dot, while the tensor cores
work, and a `tile.dot_wait {pending = D}` (D = the loop's in-flight dots, a
group each) ends the body: the dots of iteration i - 1 are then done in this
warpgroup, and after the next wait's barrier in every warpgroup. So the copies run one iteration
less ahead (S - 2: iteration i + S - 2 goes into the slot of iteration i - 2),
and after the loop a `tile.dot_wait {pending = 0}` waits for the last dots
before their results are read:

    scf.for ... {
      tile.async_wait {pending = S-3}
      %acc2 = tile.dot %a, %b, %acc {in_flight = 1}
      ... copies of iteration i + S - 2 into slot (i + S - 2) % S ...
      %acc3 = tile.dot_wait %acc2 {pending = 1}
      scf.yield %acc3
    }
    %r = tile.dot_wait %loop_result {pending = 0}
    tile.async_wait {pending = 0}

That is the TMA rings' order. cp.async rings (`wait-before-copies`, the default) take
Triton's instead: the `tile.dot_wait` comes right after the dots, then a barrier (every
warpgroup's dots of iteration i - 1 are done), then the copies, which so run S - 1
iterations ahead into the slot iteration i - 1 read; at 3 stages the other order waited
each iteration for copies issued one iteration before (Triton's tutorial matmul, sm_90a):

    scf.for ... {
      tile.async_wait {pending = S-2}
      %acc2 = tile.dot %a, %b, %acc {in_flight = 1}
      %acc3 = tile.dot_wait %acc2 {pending = 1}
      gpu.barrier
      ... copies of iteration i + S - 1 into slot (i + S - 1) % S ...
      scf.yield %acc3
    }

With `tma` (sm_90a), when every pipelined load reads a whole block of a
row-major kernel tensor masked at its bounds (`block_access.py`; for the B of
a wgmma dot, also of a column-major one, whose slots then hold the block's
transpose and whose `tile.local_load` is `transposed`), the copies are TMA
copies instead: the kernel gains one `!llvm.ptr` argument per load (a
tensor map the host encodes from the arguments its `tile.tma` entry names),
`tile.mbarrier_alloc` makes one mbarrier per slot, and

    tile.tma_load %ring[slot], %bars, %desc, %row, %col, %live   (the block's start at that iteration)
    scf.for ... {
      tile.mbarrier_wait %bars[i % S], parity (i / S) & 1 ; gpu.barrier
      ... dot, then the copies of iteration i + ahead, then the dot wait ...
    }

No drain: a copy is issued only for an iteration that runs, and each is waited for.
A scalar load among the cloned address ops (a page number read from a table) reads
only for an iteration that runs: its mask is joined with the iteration's liveness.
After the loop, `tile.mbarrier_dealloc %bars` invalidates the mbarriers. Inside a
loop over output tiles (a persistent kernel's), the rings and mbarriers instead
live across that loop, and the next tile's first copies start right after this
K loop, so that they land while this tile's epilogue runs (`next_tile_copies.py`).

Without TMA, a load of a column-major block gets the same transposed slots, filled
by `cp.async` copies made in the slot's shape (`transposed_copies.py`).

A wgmma operand loaded before the loop (attention's Q) is copied into shared memory
once, before the loop, where it was loaded (`invariant_operands.py`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, gpu

from ..dialects import pipeline_ops
from ..dialects.pipeline_ops import PREFETCH_GUARD
from ..dialects.layout import MAX_SHARED, SM_SHARED, element_bits
from ..dialects.op_definition import create
from ..dialects.tile_ops import WRITES, is_tf32
from .loop_slice import body_slice, clone_slice, guard_index_loads, hoist_scalar, inside, is_index_load, split_from_group
from .next_tile_copies import plan
from .registry import register_pass
from .tile_canonicalize import erase_dead_ops
from .tile_fuse import read_in_place, through_groups
from .block_access import match_copy_block
from .fp8_dots import k_major_fp8
from .in_flight_dots import in_flight_dots, made_in_body
from .invariant_operands import DOT_OPERANDS, stage_invariant_operands
from .tma_copies import add_descriptor, issue_tma, slot_shape, start_slice, tma_blocks
from .transposed_copies import transposed_copy
from .walk import all_ops

# Shared memory left, beside the rings, for what else the kernel stages (reductions, barriers).
STAGING_HEADROOM = 8 * 1024

_NOT_ARITHMETIC = {"tile.load", "tile.load_tile", "tile.gather", "tile.reduce"}


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


def _arithmetic(ops) -> bool:
    """Whether a slice (`body_slice`) is there and only computes addresses: no tile loads,
    dots or reductions, which a copy of a later iteration must not repeat (a load of a
    scalar or a 1-D integer tile, such as page numbers read from a table, is part of an
    address: `is_index_load`)."""
    return ops is not None and not any(
        (inner.name in _NOT_ARITHMETIC and any(isinstance(r.type, ir.RankedTensorType) for r in inner.results)
         and not is_index_load(inner)) or inner.name == "tile.dot" for op in ops for inner in all_ops(op))


def _to_dots(load) -> bool:
    """Every use of `load` is a dot's operand, or a transpose that dots read in place as
    their B (attention's backward: qT the B of k @ qT, trans(qT) of dS @ trans(qT), marked
    by `tile-k-major-loads`), as the lowering of `tile.local_load` reads a slot."""
    return all(u.owner.name == "tile.dot" or u.owner.name == "tile.trans" and read_in_place(u.owner.results[0])
               for u in load.results[0].uses)


def _with_hoisted_bases(b, loop):
    """`b` with its bases computed before the loop where they can be (`hoist_scalar`); the
    others (a pointer's advance, `k * step`) are computed with each iteration's copies."""
    if b is None or not b.bases:
        return b
    return dataclasses.replace(b, bases=tuple(hoist_scalar(x, loop) or x for x in b.bases))


def _position(block, op) -> int:
    return next(n for n, o in enumerate(block.operations) if o.operation == op)


def _bytes(load, b) -> int:
    """Bytes of one slot of `load`'s ring."""
    t = ir.RankedTensorType(load.results[0].type)
    return math.prod(slot_shape(load, b)) * element_bits(t.element_type) // 8


def _staging_slots(S: int, found, blocks, staged) -> int:
    """Slots of the rings a decoded dot operand is staged in, in a TMA loop: 3 where they fit
    beside the copies' rings and leave as many programs an SM as 2 would, else 2.

    With 2, iteration i writes the slot that iteration i - 2's wgmmas read, done in every
    warpgroup only once each has passed iteration i's barrier after the mbarrier wait. With
    3, it writes iteration i - 3's, done in every warpgroup at the barrier after iteration
    i - 1's stores (each had waited there for its dots of i - 3), and the copies issued after
    iteration i's dots go to iteration i - 2's slots, free at iteration i's: the top barrier
    then guards nothing, and goes. The FP8 example at 256x128x64/8/4 (one program an SM
    either way) ran 0.767x -> 0.786x torch's bf16 matmul; at 128x128x64/8/3 a third slot
    took it from two programs an SM to one, 0.597x -> 0.344x (H100, 2026-12-06)."""
    rings = S * sum(_bytes(load, b) for (load, _), b in zip(found, blocks))
    stage = sum(math.prod(t.shape) * element_bits(t.element_type) // 8 for t in staged)

    def per_sm(slots: int) -> int:
        return SM_SHARED // (rings + slots * stage + 1024)

    fits = rings + 3 * stage + STAGING_HEADROOM <= MAX_SHARED
    return 3 if fits and per_sm(3) >= per_sm(2) else 2


def _i32(v: int, ty):
    return arith.ConstantOp(ty, v).result


@register_pass("tile-pipeline")
@dataclass
class TilePipeline:
    num_stages: int = 2
    tma: bool = False  # sm_90a: copy whole blocks with TMA, completing on mbarriers
    divisible_args: str = ""  # kernel arguments known 16-byte aligned (tensors) or multiples of 16 (ints)
    across_tiles: bool = True  # TMA rings in a loop over tiles: the next tile's first copies before the epilogue
    wait_before_copies: bool = True  # cp.async rings with dots in flight: Triton's order (module doc)

    def run(self, module_op):
        if self.num_stages >= 2:
            stage_invariant_operands(module_op, _is_zero)
        for loop in [op for op in all_ops(module_op) if op.name == "scf.for"]:
            if "tile.num_stages" in loop.attributes:
                self.pipeline(loop, ir.IntegerAttr(loop.attributes["tile.num_stages"]).value, True)
            elif self.num_stages >= 2:
                self.pipeline(loop, self.num_stages, False)

    def candidates(self, loop, body, iv, explicit: bool) -> list:
        """The loads to pipeline and the ops of their offsets and masks; loads the loop reads
        in registers too where it holds a dot or asks for stages itself (`explicit`), and
        only those of a loop without a dot that asks."""
        found = []
        stored = [op.operands[0] for op in all_ops(loop) if op.name in WRITES]
        dots = any(op.name == "tile.dot" for op in all_ops(loop))
        registers = dots or explicit
        for op in body.operations:
            op = op.operation
            if op.name != "tile.load" or not isinstance(op.results[0].type, ir.RankedTensorType):
                continue  # (a scalar load, such as a page number read from a table)
            if "volatile" in op.attributes:  # read when the program says, never ahead
                continue
            base, offsets, mask, other = op.operands
            t = ir.RankedTensorType(op.results[0].type)
            users = [(u.owner, u.operand_number) for u in op.results[0].uses]
            to_dots = all(o.name == "tile.dot" and n in DOT_OPERANDS and o.parent == loop for o, n in users)
            if to_dots:
                ok = str(t.element_type) in (("f32",) if all(is_tf32(o) for o, _ in users) else ("f16", "bf16")) \
                    or k_major_fp8(op, users)
            else:
                ok = registers and element_bits(t.element_type) in (8, 16, 32) and all(inside(o, loop) for o, _ in users)
            # (a 1-D tile, a row's chunk, in slots of one row; not beside dots, whose TMA rings want 2-D blocks)
            if not (t.rank == 2 or t.rank == 1 and not dots) or not ok or not users or not _is_zero(other):
                continue
            if not isinstance(base.owner, ir.Block) and inside(base.owner.operation, loop) or base in stored:
                continue  # (a copy run ahead would read before this loop's stores wrote)
            ops = body_slice([offsets, mask], body, loop, iv)
            if not _arithmetic(ops):  # the offsets or mask grouped with this iteration's dots' values
                memo: dict = {}  # (what the offsets and mask share, cloned once)
                split = [split_from_group(v, body, loop, iv, memo) for v in (offsets, mask)]
                ops = body_slice(split, body, loop, iv)
                if _arithmetic(ops):
                    op.operands[1], op.operands[2] = split
            # (nor before this loop's stores wrote what its offsets read: an index table)
            reads_stored = ops is not None and any(
                o.name == "tile.load" and o.operands[0] in stored for i in ops for o in all_ops(i))
            if _arithmetic(ops) and not reads_stored:
                found.append((op, ops))
        # before: page numbers copied ahead into a ring of their own, the keys they locate read
        # in the loop -> after: the keys copied ahead, the page numbers read ahead for them
        # (a table read alone ahead bought a wait and a barrier a step and no overlap: paged
        # attention 59-60% of the H100's copy rate at 2 stages, 84-91% at 1, 2026-12-05)
        addresses = {inner for _, ops in found for op in ops for inner in all_ops(op)}
        return [(op, ops) for op, ops in found if op not in addresses]

    def pipeline(self, loop, S: int, explicit: bool):
        """`explicit`: S is the loop's own (`tile.num_stages`)."""
        body = loop.regions[0].blocks[0]
        iv = body.arguments[0]
        found = self.candidates(loop, body, iv, explicit) if S >= 2 else []
        if not found:
            return
        made = made_in_body(loop, found) if S >= 3 else []
        async_dots = in_flight_dots(loop, body, found, made) if S >= 3 else []
        if S < 4 and any(len(chain) > 1 for chain, _ in async_dots):
            # A chain's copies would then run one iteration ahead: INT4's 128x128x64 at 3 stages
            # waited on them, 304 -> 260 TFLOP/s (at 4 stages 304 -> 328; H100, 2026-12-06).
            async_dots = []
        made = made if async_dots else []  # (in_flight_dots takes every dot of the loads, or none)
        blocks = tma_blocks(found, self.divisible_args) if self.tma else None
        # cp.async rings with dots in flight: the copies wait for the dots of the iteration before
        # (then a barrier) and run S - 1 iterations ahead, as Triton's do; TMA's run S - 2 ahead.
        early_wait = bool(async_dots) and not blocks and self.wait_before_copies
        ahead = S - 1 - (1 if async_dots and not early_wait else 0)  # iterations the copies run ahead
        lb, ub, step = list(loop.operands)[:3]
        ity = iv.type
        rings = []
        # Each load's block when its slot holds a transpose: a TMA copy's (any block), or a
        # column-major dot operand's, copied with cp.async in the slot's shape (`transposed_copies.py`).
        per_load = blocks or [match_copy_block(load) if _to_dots(load) else None for load, _ in found]
        # With TMA inside a loop over output tiles, the rings outlive the K loop and the next
        # tile's first copies start before this one's epilogue (`next_tile_copies.py`).
        across = blocks and self.across_tiles and plan(loop, start_slice(found, blocks), [
            x for b in blocks for x in (b.row, b.col)], S * sum(_bytes(load, b) for (load, _), b in zip(found, blocks)))
        outer = across.outer if across else None
        if not blocks:  # a column-major block's loop-invariant base offsets: computed once, before the loop
            per_load = [_with_hoisted_bases(b, loop) for b in per_load]
        # Prologue: rings and the first `ahead` iterations' copies, before the loop (the outer one).
        before = ir.InsertionPoint(outer or loop)
        with before, loop.location:
            for (load, _), b in zip(found, per_load):
                elem = ir.RankedTensorType(load.results[0].type).element_type
                rings.append(pipeline_ops.local_alloc(S, slot_shape(load, b), elem))
            staged = [ir.RankedTensorType(dot.operands[n].type) for dot, n in made]
            slots = _staging_slots(S, found, per_load, staged) if blocks and not across else 2
            staging = [pipeline_ops.local_alloc(slots, t.shape, t.element_type) for t in staged]
            if blocks:
                bars = pipeline_ops.mbarrier_alloc(S, len(found))
                descs = [add_descriptor(load, b) for (load, _), b in zip(found, blocks)]
                issue = functools.partial(issue_tma, found, blocks, rings, bars, descs)
            else:
                issue = functools.partial(self.issue, found, rings, per_load)
            first_tile = across.first_tile(before) if across else ()
            its = []
            for s in range(ahead):
                its.append(arith.addi(lb, arith.muli(step, _i32(s, ity))) if s else lb)
                issue(_i32(s, ity), its[-1], ub, before, *first_tile)
        if across:
            base, trips = across.base(loop)
        # Steady state: at the top of the body, wait for this iteration's group, read the
        # slots, and start iteration i + ahead in its slot (free: the dots that read it
        # finished before every thread passed the wait's barrier).
        first = body.operations[0]
        top = ir.InsertionPoint(first)
        with top, loop.location:
            if not blocks:
                pipeline_ops.async_wait(ahead - 1)
            i = arith.divsi(arith.subi(iv, lb), step)
            if across:  # counted on from the tiles before
                i = arith.addi(base, i)
            read = arith.remsi(i, _i32(S, ity))
            if blocks:  # the slot's copies have landed; then every thread is past the slot's old readers
                pipeline_ops.mbarrier_wait(bars, read, arith.andi(arith.divsi(i, _i32(S, ity)), _i32(1, ity)))
                if not made or slots < 3:
                    gpu.BarrierOp()
            write = arith.remsi(arith.addi(i, _i32(ahead, ity)), _i32(S, ity))
            for (load, _), ring, b in zip(found, rings, per_load):
                got = pipeline_ops.local_load(ring, read, load.results[0].type, transposed=b is not None and b.transposed)
                load.results[0].replace_all_uses_with(got)
            nxt = arith.addi(iv, arith.muli(step, _i32(ahead, ity)))
            half = arith.remsi(i, _i32(slots, ity)) if made else None
        for (dot, n), ring in zip(made, staging):
            # before: tile.dot %a, %w_decoded, ... -> after: tile.local_store %w_decoded, %ring[i % 2];
            # tile.dot %a, (tile.local_load %ring[i % 2]), ...: a ring operand, so the dot may stay in flight
            with ir.InsertionPoint(dot), loop.location:
                v = dot.operands[n]
                pipeline_ops.local_store(v, ring, half)
                dot.operands[n] = pipeline_ops.local_load(ring, half, v.type)
        if async_dots:
            # After the last dot, so that its wgmma runs while the copies are issued.
            last = max((chain[-1] for chain, _ in async_dots), key=lambda d: _position(body, d))
            after = ir.InsertionPoint(body.operations[_position(body, last) + 1])
            if not early_wait:
                issue(write, nxt, ub, after)
            groups = sum(len(chain) for chain, _ in async_dots)  # one wgmma group a dot
            with after, loop.location:
                for chain, _ in async_dots:
                    for dot in chain:
                        dot.attributes["in_flight"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 1)
                    # before: scf.yield %d -> after: scf.yield (tile.dot_wait %d {pending = groups})
                    waited = pipeline_ops.dot_wait(chain[-1].results[0], groups)
                    chain[-1].results[0].replace_all_uses_except(waited, waited.owner.operation)
                if early_wait:  # every warpgroup's dots of the iteration before are done: their slot is free
                    gpu.BarrierOp()
            if early_wait:
                issue(write, nxt, ub, after)
        else:
            issue(write, nxt, ub, top)
        after_loop = ir.InsertionPoint.after(loop.operation)
        if across:
            with loop.location:
                across.next_tile(issue, its, ub, S, base, trips, after_loop)
        # Epilogue: wait for the last dots, drain the copies still in flight (they copy nothing).
        with after_loop, loop.location:
            for _, n in async_dots:
                result = loop.results[n]
                done = pipeline_ops.dot_wait(result, 0)
                result.replace_all_uses_except(done, done.owner.operation)
            if not blocks:  # (a TMA copy is issued only for an iteration that runs, and waited for)
                pipeline_ops.async_wait(0)
        with ir.InsertionPoint.after(outer.operation) if outer else after_loop, loop.location:
            for ring in reversed(rings + staging):  # nothing reads or writes them any more
                pipeline_ops.local_dealloc(ring)
            if blocks:
                pipeline_ops.mbarrier_dealloc(bars)
        for load, ops in found:
            load.erase()
        erase_dead_ops(loop)  # the loads' offset and mask ops, which nothing reads now

    def issue(self, found, rings, per_load, slot, it, ub, ip):
        """Clone the loads' offsets and masks at induction value `it` (one copy of the ops
        they share; of a column-major block, what its start needs) and start their copies
        into `slot`, as one commit group."""
        loop = found[0][0].parent
        body = loop.regions[0].blocks[0]
        needed = set()
        for (_, ops), b in zip(found, per_load):
            # (of a column-major block: its starts, the bases not hoisted before the loop, and its
            # bounds and stride where an op of the body computes them, not in a fusion group
            # (`transposed_copy` clones those): mamba's `offs_k < chunk_size_limit - k`)
            starts = [x for x, _ in (b.row, b.col) if x is not None] + list(b.bases) + [
                x for x in (b.rows, b.cols, b.stride) if x is not None and not isinstance(x.owner, ir.Block)
                and x.owner.operation.parent == loop] if b else []
            needed.update(ops if b is None else body_slice(starts, body, loop, body.arguments[0]) or [])
        mapping = {body.arguments[0]: it}
        cloned = [op.operation for op in body.operations if op.operation in needed]
        clone_slice(cloned, mapping, ip)
        guard_index_loads(cloned, mapping, lambda: arith.cmpi(arith.CmpIPredicate.slt, it, ub))
        with ip:
            live = arith.cmpi(arith.CmpIPredicate.slt, it, ub)
            for (load, _), ring, b in zip(found, rings, per_load):
                base, offsets, mask, _ = load.operands
                if b is not None:
                    pipeline_ops.async_copy(ring, slot, base, *transposed_copy(load, b, mapping, live))
                    continue
                m = mapping.get(mask, mask)
                m = arith.andi(m, create("splat", [m.type], [live]).result)
                m.owner.attributes[PREFETCH_GUARD] = ir.UnitAttr.get()  # (a user's `mask & flag` zero-fills)
                pipeline_ops.async_copy(ring, slot, base, mapping.get(offsets, offsets), m)
            pipeline_ops.async_commit()
