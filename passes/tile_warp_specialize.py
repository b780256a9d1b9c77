"""`tile-warp-specialize`: split a kernel whose K loop `tile-pipeline` fed through TMA
rings into a producer warpgroup that issues the copies and consumer warpgroups that
run everything else (sm_90a; FlashAttention 3's and CUTLASS's scheme).

A loop asks for it with `tile.range(..., warp_specialize=True)` (the frontend sets
`tile.warp_specialize` on it), or every such loop with the option `all-loops`. The
block gains one warpgroup after the kernel's `num_warps` (which stay the consumers, so
their thread ids and layouts do not change). Before the split, thread 0 initializes the
mbarriers and every thread passes one block barrier; then

    %p = tile.warp_role {first = W, count = 4, total = W + 4, maxnreg = R}
    scf.if %p {                                     # producer warpgroup
      tile.set_max_registers {count = 40, increase = 0}
      scf.if (tile.warp_role {first = W, count = 1}) {   # one warp issues the copies
        scf.for %j = lb to ub step st {             # the loop's own bounds, recomputed
          i = (j - lb) / st, s = i % S
          tile.mbarrier_wait %empty, s, parity ((i / S) & 1) ^ 1   # the slot's last readers are done
          tile.tma_load %ring[s], %full, ... at iteration j     # arms full[s] with the bytes, copies
        }
      }
    } else {                                        # consumers: the kernel as it was
      tile.set_max_registers {count = C, increase = 1}
      ... scf.for %iv ... {
        tile.mbarrier_wait %full, s, parity (i / S) & 1          # as before; no copies issued here
        ... dots ...
        tile.dot_wait {pending = D}                              # iteration i - 1's dots are done:
        tile.mbarrier_arrive %empty, (i - 1) % S if i > 0        # each warp releases its slot
      }
    }

Parities: phase k of empty[s] completes when the consumers release iteration s + kS; the
producer's iteration j = s + kS needs phase k - 1, parity ((j / S) & 1) ^ 1, which for
k = 0 names the phase before the first, complete from the start: the first S copies go
without waiting. The producer issues only iterations that run, each of which the
consumers wait for, so no copy is in flight when they leave the loop, and the producer
waits only on releases of iterations i <= n - 1 - S, which the consumers make inside the
loop: it never waits on a barrier nobody arrives on. With dots left in flight, the
release comes after the `tile.dot_wait` that retires iteration i - 1's wgmmas; without
them, right after the last reader of the iteration's slot.

The loop's block barrier after its mbarrier wait (it kept a slot's old readers ahead of
its refill) goes: the empty barriers do that now. Every other block barrier of the
consumers becomes a named barrier of the consumer threads (`tile-consumer-barriers`, in
the GPU stage), since the producer warpgroup leaves early.

Loops it cannot split keep the pipelined code, with the reason in the loop's
`tile.warp_specialize_skipped` attribute (the launcher warns with it where the loop asked):
no TMA ring (cp.async, or nothing pipelined), a loop nested in another (a persistent
kernel's, whose rings live across the tiles), a kernel with TMA stores, consumers that are
not whole warpgroups, or copy coordinates that depend on more than scalar arithmetic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, scf

from ..dialects import pipeline_ops, warp_specialize_ops as ws
from .registry import register_pass
from .tile_canonicalize import erase_dead_ops
from .walk import all_ops, in_loop

PRODUCER_WARPS = 4  # a whole warpgroup: setmaxnreg works per warpgroup
REGISTERS_PER_SM = 65536
SKIPPED = "tile.warp_specialize_skipped"


class Unsupported(Exception):
    """Why a loop keeps its pipelined code."""


def register_plan(consumer_warps: int, producer: int = 40, blocks: int | None = None) -> tuple[int, int, int]:
    """(registers a thread at launch, the consumers' after `setmaxnreg.inc`, the producer's):
    what the producer gives back covers what the consumers take, so `setmaxnreg.inc` never
    waits for registers nobody frees. By default one consumer warpgroup keeps two blocks an SM
    possible (128 at launch, 216 for the consumers); more take the SM's registers for one block
    (CUTLASS's 168/232/40 for two). `blocks=1`: the SM's registers for one block
    (`codegen/backend/cubin.py` assembles a kernel so that spills at the default)."""
    groups = consumer_warps // 4
    threads = (consumer_warps + PRODUCER_WARPS) * 32
    blocks = blocks or (2 if groups == 1 else 1)
    budget = min(248, REGISTERS_PER_SM // blocks // threads // 8 * 8)
    consumer = min(240, (budget * threads - producer * 128) // (groups * 128) // 8 * 8)
    launch = -(-(producer * 128 + consumer * groups * 128) // threads // 8) * 8
    return launch, consumer, producer


def _i(v: int, ty):
    return arith.ConstantOp(ty, v).result


def _location(op) -> str:
    """`file:line` of the op's source (the loop's `for`), or the location as MLIR prints it."""
    m = re.search(r'"([^"]+)":(\d+)', str(op.location))
    return f"{m.group(1)}:{m.group(2)}" if m else str(op.location)


class _Scalars:
    """Clones of the scalar arithmetic a value is made of, for the producer, which sees
    nothing the consumers compute. Results of fusion groups are read through to what they
    yield; anything but pure scalar ops (a load, a tile) is Unsupported."""

    PURE = ("tile.program_id", "tile.num_programs")

    def __init__(self, fn, outer=None):
        self.args = set(fn.regions[0].blocks[0].arguments)
        self.memo: dict = {}
        self.outer = outer  # where loop-invariant values go: before every producer loop
        self.checked: set = set()

    def check(self, v, iv):
        """Unsupported unless `get` can clone v (the loop's induction variable `iv` given): said
        before the kernel is changed."""
        self.get(v, {iv: iv}, check_only=True)

    def get(self, v, mapping=None, check_only=False):
        mapping = mapping if mapping is not None else {}
        if v in mapping:
            return mapping[v]
        if v in self.memo or v in self.checked:
            return self.memo.get(v)
        if isinstance(v.owner, ir.Block):
            if v in self.args:
                return v
            raise Unsupported("the copies' coordinates depend on a loop or a branch the producer cannot follow")
        op = v.owner.operation
        if op.name == "scf.execute_region":
            inner = op.regions[0].blocks[0].operations[-1].operands[ir.OpResult(v).result_number]
            return self.get(inner, mapping, check_only)
        if isinstance(v.type, (ir.RankedTensorType, ir.MemRefType)) or op.regions or not (
                op.name.startswith("arith.") or op.name in self.PURE):
            raise Unsupported(f"the copies' coordinates depend on '{op.name}', not scalar arithmetic alone")
        operands = [self.get(o, mapping, check_only) for o in op.operands]
        if check_only:
            self.checked.add(v)
            return None
        per_iteration = in_loop(op)  # (a value of the loop body: cloned and cached per iteration)
        new = op.clone(ip=None if per_iteration else self.outer)
        for n, o in enumerate(operands):
            new.operands[n] = o
        result = new.results[ir.OpResult(v).result_number]
        (mapping if per_iteration else self.memo)[v] = result
        return result


@dataclass
class _Loop:
    """One loop's plan: its bounds, ring depth, barriers and copies, read off its pipelined form."""

    loop: object
    stages: int
    full: object
    ahead: int
    copies: list  # the tile.tma_load ops of the body
    prologue: list  # those before the loop
    allocs: list  # the ops making its rings and full barriers


@register_pass("tile-warp-specialize")
@dataclass
class TileWarpSpecialize:
    num_warps: int = 4  # the consumers' warps: the kernel's num_warps
    all_loops: bool = False  # every TMA-pipelined loop, not only those of tile.range(..., warp_specialize=True)
    producer_registers: int = 40

    def run(self, module_op):
        for fn in [op for op in all_ops(module_op) if op.name == "func.func"]:
            self.specialize(fn)

    def specialize(self, fn):
        plans = []
        for loop in [op for op in all_ops(fn) if op.name == "scf.for"]:
            asked = "tile.warp_specialize" in loop.attributes
            if not asked and not (self.all_loops and _pipelined(loop)):
                continue
            try:
                plans.append(self.plan(fn, loop))
            except Unsupported as e:
                loop.attributes[SKIPPED] = ir.StringAttr.get(f"{_location(loop)}: {e}")
        if plans:
            self.split(fn, plans)

    def plan(self, fn, loop) -> _Loop:
        body = loop.regions[0].blocks[0]
        waits = [op.operation for op in body.operations if op.name == "tile.mbarrier_wait"]
        copies = [op.operation for op in body.operations if op.name == "tile.tma_load"]
        if not waits or not copies:
            if any(op.name == "tile.async_copy" for op in all_ops(loop)):
                raise Unsupported("its loads go through cp.async rings, not TMA (TMA needs sm_90a and whole blocks "
                                  "of tensors whose row stride is a multiple of 16 bytes)")
            raise Unsupported("none of its loads is pipelined through a TMA ring (num_stages < 2, or no tile load "
                              "that a dot reads)")
        if loop.parent != fn:
            raise Unsupported("the loop is nested in another loop or a branch (a persistent kernel's K loop: its "
                              "rings live across the tiles)")
        if any(op.name == "tile.tma_store" for op in all_ops(fn)):
            raise Unsupported("the kernel stores tiles by TMA")
        if self.num_warps % 4 or (self.num_warps + PRODUCER_WARPS) * 32 > 1024:
            raise Unsupported(f"num_warps={self.num_warps}: the consumers must be whole warpgroups (4, 8, 12 or more "
                              "warps), with room for a producer warpgroup in a block of 1024 threads")
        if len(waits) != 1:
            raise Unsupported("the loop waits on more than one mbarrier")
        full = waits[0].operands[0]
        stages = ir.MemRefType(full.type).shape[0]
        ahead = _ahead(copies[0], stages)
        prologue = [u.owner for u in full.uses if u.owner.name == "tile.tma_load" and u.owner.parent == fn]
        made = [c.operands[0] for c in copies] + [full]
        allocs = [v.owner for n, v in enumerate(made) if v not in made[:n]]  # (in a fixed order: the rings' layout)
        if any(a.operation.parent != fn for a in allocs):
            raise Unsupported("the loop's rings are made in a loop or a branch")
        scalars, iv = _Scalars(fn), loop.regions[0].blocks[0].arguments[0]
        for v in [*list(loop.operands)[:3], *(x for c in copies for x in list(c.operands)[4:6])]:
            scalars.check(v, iv)
        return _Loop(loop, stages, full, ahead, copies, prologue, allocs)

    def split(self, fn, plans):
        block = fn.regions[0].blocks[0]
        launch, consumer, producer = register_plan(self.num_warps, self.producer_registers)
        total = self.num_warps + PRODUCER_WARPS
        first = block.operations[0]
        for p in plans:
            for a in p.allocs:
                a.move_before(first)
        with ir.InsertionPoint(first), fn.location:
            empties = [pipeline_ops.mbarrier_alloc(p.stages, self.num_warps) for p in plans]
            role = ws.warp_role(self.num_warps, PRODUCER_WARPS, total, launch)
            branch = scf.IfOp(role, [], has_else=True)
        with ir.InsertionPoint(branch.else_block), fn.location:
            ws.set_max_registers(consumer, True)
            consumer_end = scf.YieldOp([])
        for op in list(block.operations)[list(block.operations).index(branch.operation) + 1:]:
            if op.name != "func.return":
                op.move_before(consumer_end)
        with ir.InsertionPoint(branch.then_block), fn.location:
            ws.set_max_registers(producer, False)
            issuer = scf.IfOp(ws.warp_role(self.num_warps, 1, total, launch))
            scalars = _Scalars(fn, ir.InsertionPoint(issuer.operation))
            with ir.InsertionPoint(issuer.then_block):
                for p, empty in zip(plans, empties):
                    self.produce(p, empty, scalars)
                scf.YieldOp([])
            scf.YieldOp([])
        for p, empty in zip(plans, empties):
            self.consume(p, empty)
        fn.attributes["tile.producer_warps"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), PRODUCER_WARPS)

    def produce(self, p: _Loop, empty, scalars: _Scalars):
        """The producer's copy of the loop: wait for the slot, then its copies at iteration j."""
        loop = p.loop
        lb, ub, step = (scalars.get(v) for v in list(loop.operands)[:3])
        iv = loop.regions[0].blocks[0].arguments[0]
        ty = iv.type
        mine = scf.ForOp(lb, ub, step)
        with ir.InsertionPoint(mine.body), loop.location:
            j = mine.induction_variable
            stages, one = _i(p.stages, ty), _i(1, ty)
            i = arith.divsi(arith.subi(j, lb), step)
            slot = arith.remsi(i, stages)
            parity = arith.xori(arith.andi(arith.divsi(i, stages), one), one)
            pipeline_ops.mbarrier_wait(empty, slot, parity)
            # the body's copies are of iteration iv + ahead * step: at iv = j - ahead * step, of j
            mapping = {iv: arith.subi(j, arith.muli(step, _i(p.ahead, ty)))}
            live = arith.ConstantOp(ir.IntegerType.get_signless(1), 1).result
            for c in p.copies:
                ring, _, _, desc, row, col, _ = c.operands
                row, col = scalars.get(row, mapping), scalars.get(col, mapping)
                copy = pipeline_ops.tma_load(ring, slot, p.full, desc, row, col, live,
                                             [ir.IntegerAttr(b).value for b in ir.ArrayAttr(c.attributes["box"])],
                                             ir.IntegerAttr(c.attributes["swizzle"]).value)
                copy.attributes["warp"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), self.num_warps)
            scf.YieldOp([])

    def consume(self, p: _Loop, empty):
        """The consumers' loop: no copies, no barrier after the wait, a release per iteration."""
        loop = p.loop
        body = loop.regions[0].blocks[0]
        rings = [c.operands[0] for c in p.copies]
        for c in p.copies + p.prologue:
            c.erase()
        erase_dead_ops(loop.parent)  # the erased copies' coordinates and liveness
        wait = next(op.operation for op in body.operations if op.name == "tile.mbarrier_wait")
        after = _next(wait)
        staged = any(op.name == "tile.local_store" for op in all_ops(loop))
        if after is not None and after.name == "gpu.barrier" and not staged:
            after.erase()
        iv = body.arguments[0]
        lb, _, step = list(loop.operands)[:3]
        ty = iv.type
        dot_waits = [op.operation for op in body.operations if op.name == "tile.dot_wait"]
        if dot_waits:  # iteration i - 1's dots are done after this iteration's dot wait
            at, back = dot_waits[-1], p.stages - 1
        else:  # every reader of this iteration's slot ran synchronously
            at, back = _last_reader(body, rings), 0
        with ir.InsertionPoint.after(at), loop.location:
            i = arith.divsi(arith.subi(iv, lb), step)
            slot = arith.remsi(arith.addi(i, _i(back, ty)), _i(p.stages, ty))
            live = arith.cmpi(arith.CmpIPredicate.sge, i, _i(1 if back else 0, ty))
            ws.mbarrier_arrive(empty, slot, live)
        for use in list(p.full.uses):
            if use.owner.name == "tile.mbarrier_dealloc":
                with ir.InsertionPoint.after(use.owner), loop.location:
                    pipeline_ops.mbarrier_dealloc(empty)


def _pipelined(loop) -> bool:
    return any(op.name in ("tile.mbarrier_wait", "tile.async_copy") for op in all_ops(loop))


def _next(op):
    ops = list(op.block.operations)
    n = ops.index(op)
    return ops[n + 1].operation if n + 1 < len(ops) else None


def _last_reader(body, rings):
    """The last op of the body that reads a slot of `rings`: a `tile.local_load`, or an op
    reading one's result (a dot reads its operands from the slot where it runs)."""
    ops = [op.operation for op in body.operations]
    last = 0
    for n, op in enumerate(ops):
        for inner in all_ops(op):
            reads = inner.name == "tile.local_load" and inner.operands[0] in rings
            reads = reads or any(not isinstance(o.owner, ir.Block) and o.owner.name == "tile.local_load"
                                 and o.owner.operands[0] in rings for o in inner.operands)
            if reads:
                last = n
    return ops[last]


def _ahead(copy, stages: int) -> int:
    """How many iterations ahead the body's copies run: their slot is (i + ahead) % S."""
    slot = copy.operands[1]
    op = None if isinstance(slot.owner, ir.Block) else slot.owner
    add = None if op is None or op.name != "arith.remsi" or isinstance(op.operands[0].owner, ir.Block) \
        else op.operands[0].owner
    if add is None or add.name != "arith.addi" or isinstance(add.operands[1].owner, ir.Block) \
            or add.operands[1].owner.name != "arith.constant":
        raise Unsupported("the loop's copies are not in the form tile-pipeline makes (slot (i + ahead) % S)")
    return ir.IntegerAttr(add.operands[1].owner.attributes["value"]).value
