"""`tile-induction-offsets`: an offset (or pointer) that a loop advances by a loop-invariant
step becomes a function of the induction variable, so that it is the same access as one
computed from the loop index.

Triton code advances its pointers in the loop (`a_ptrs += BLOCK_K * stride_ak`, tutorial
03 and most kernels in the wild); tile's own examples compute offsets from the index
(`a + rm[:, None] * s + (k0 + rk)[None, :]`). Axis info, `tile-pipeline` (which copies
iteration i + S - 1 inside iteration i, so it must recompute a load's offsets at another
induction value) and the TMA matcher only see the second form: a loop-carried offset
is opaque to them. This pass rewrites the first form into the second:

    # before
    scf.for %k = %lb to %ub step %st iter_args(%p = %p0) {
      ... "tile.load"(%A, %p, ...) ...
      %d = "tile.splat"(%inc) : (i32) -> tensor<128x64xi32>
      %p1 = arith.addi %p, %d
      scf.yield %p1
    }
    # after (the step's ops hoisted; the carried value left to canonicalize, which drops it
    # when nothing reads the loop's result)
    %d = "tile.splat"(%inc)
    scf.for %k = %lb to %ub step %st iter_args(%p = %p0) {
      %n = arith.divsi (arith.subi %k, %lb), %st      ; the iteration's number (%k itself for 0, 1)
      %pk = arith.addi %p0, "tile.splat"(arith.muli %n, %inc)
      ... "tile.load"(%A, %pk, ...) ...
      scf.yield %p
    }

A step is any chain of `addi`/`subi` of loop-invariant values (two increments in one
iteration, `p -= s`), on a scalar or an integer tile. Integer arithmetic wraps the same
way whether the sum runs or is multiplied out, so the rewrite is exact. A pointer
advanced under an `if`, by a step the loop changes, or carried through `scf.while` is
left as it is: it is still correct, only not pipelined. Our own pass: upstream's
`scf-for-loop-canonicalization` and induction-variable analyses know nothing of offsets
held in `tile` ops.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith

from ..dialects import tile_ops
from .int_ranges import constant_int
from .loop_slice import inside
from .registry import register_pass
from .walk import collect

# Ops that are pure and never trap, so a loop-invariant one may move before its loop
# (which might run no iteration). Divisions stay where they are.
_HOISTABLE = {
    "arith.constant", "arith.addi", "arith.subi", "arith.muli", "arith.shli", "arith.extsi", "arith.extui",
    "arith.trunci", "arith.index_cast", "tile.splat", "tile.broadcast", "tile.reshape", "tile.arange",
}


def _invariant_ops(v, loop, found: list) -> bool:
    """Whether v is loop-invariant: defined outside the loop, or by hoistable ops of the
    body whose operands are; those ops are appended to `found` (operands first)."""
    owner = v.owner.owner if isinstance(v.owner, ir.Block) else v.owner.operation
    if not inside(owner, loop):
        return True
    if isinstance(v.owner, ir.Block):
        return False
    op = v.owner.operation
    if op.name not in _HOISTABLE or op.parent != loop or op.regions:
        return False
    if op in found:
        return True
    if not all(_invariant_ops(o, loop, found) for o in op.operands):
        return False
    found.append(op)
    return True


def _step(y, x, loop):
    """The chain from the carried value x to the yielded y, as (terms, ops of the chain,
    invariant ops): y == x + sum(sign * term); None if y is not such a chain."""
    terms, chain, hoist = [], [], []
    v = y
    while v != x:
        if isinstance(v.owner, ir.Block):
            return None
        op = v.owner.operation
        if op.name not in ("arith.addi", "arith.subi") or op.parent != loop:
            return None
        a, b = op.operands
        if op.name == "arith.addi" and not _carries(a, x, loop):
            a, b = b, a  # (inc + p)
        if not _carries(a, x, loop) or not _invariant_ops(b, loop, hoist):
            return None
        terms.append((-1 if op.name == "arith.subi" else 1, b))
        chain.append(op)
        v = a
    return terms, chain, hoist


def _carries(v, x, loop) -> bool:
    """Whether v is x, or an addi/subi of the body on a value that carries x."""
    if v == x:
        return True
    if isinstance(v.owner, ir.Block):
        return False
    op = v.owner.operation
    if op.name not in ("arith.addi", "arith.subi") or op.parent != loop:
        return False
    return _carries(op.operands[0], x, loop) or op.name == "arith.addi" and _carries(op.operands[1], x, loop)


def _scalar(v):
    """s where v is `tile.splat(s)` (the common step: a stride times a block)."""
    if not isinstance(v.owner, ir.Block) and v.owner.operation.name == "tile.splat":
        return v.owner.operation.operands[0]
    return None


def _cast(v, ty):
    if v.type == ty:
        return v
    if isinstance(v.type, ir.IndexType) or isinstance(ty, ir.IndexType):
        return arith.index_cast(ty, v)
    return arith.extsi(ty, v) if ir.IntegerType(v.type).width < ir.IntegerType(ty).width else arith.trunci(ty, v)


def _times(n, term):
    """n * term, where n is the iteration number (a scalar) and term a scalar or a tile of
    the carried value's type; a splat term is multiplied as a scalar, then splat."""
    if not isinstance(term.type, ir.RankedTensorType):
        return arith.muli(_cast(n, term.type), term)
    shape = list(ir.RankedTensorType(term.type).shape)
    s = _scalar(term)
    if s is not None:
        return tile_ops.splat(arith.muli(_cast(n, s.type), s), shape)
    elem = ir.RankedTensorType(term.type).element_type
    return arith.muli(tile_ops.splat(_cast(n, elem), shape), term)


def _keep_hints(loop, x, value):
    """The hints the loop holds for its carried x (`tile.multiple_of` on a pointer it advances:
    `tile.divisibility_arg1`, frontend/hints.py) go to the op that now computes x's value."""
    suffix = f"_arg{x.arg_number}"
    for name in list(loop.attributes):
        if name.startswith("tile.") and name.endswith(suffix):
            value.owner.attributes[name[:-len(suffix)]] = loop.attributes[name]


def _iteration(loop, iv):
    """The iteration's number, (iv - lb) / step, built at the insertion point."""
    lb, _, st = list(loop.operands)[:3]
    n = iv
    if constant_int(lb) != 0:
        n = arith.subi(n, lb)
    if constant_int(st) != 1:
        n = arith.divsi(n, st)
    return n


@register_pass("tile-induction-offsets")
@dataclass
class TileInductionOffsets:
    def run(self, module_op):
        for loop in collect(module_op, ("scf.for",)):
            self.rewrite(loop)

    def rewrite(self, loop):
        body = loop.regions[0].blocks[0]
        yield_op = body.operations[-1].operation
        found = []
        for i, (x, y) in enumerate(zip(list(body.arguments)[1:], list(yield_op.operands))):
            t = x.type
            if isinstance(t, ir.RankedTensorType):
                t = ir.RankedTensorType(t).element_type
            step = _step(y, x, loop) if isinstance(t, ir.IntegerType) else None
            if step is not None and step[0]:
                found.append((i, x, *step))
        if not found:
            return
        moved = set()  # (a step's ops may serve two pointers: each moves once, after its operands)
        for *_, hoist in found:
            for op in hoist:
                if op not in moved:
                    op.move_before(loop)
                    moved.add(op)
        inits = list(loop.operands)[3:]
        with ir.InsertionPoint(list(body.operations)[0]), loop.location:
            n = _iteration(loop, body.arguments[0])
            values = []
            for i, x, terms, chain, hoist in found:
                value = inits[i]
                for sign, term in reversed(terms):
                    d = _times(n, term)
                    value = arith.addi(value, d) if sign > 0 else arith.subi(value, d)
                values.append(value)
        for (i, x, terms, chain, hoist), value in zip(found, values):
            _keep_hints(loop, x, value)
            x.replace_all_uses_except(value, chain[-1])
            if not _used(loop.results[i]):  # (else the loop still carries it, for its result)
                yield_op.operands[i] = x
                read = False
                for op in chain:  # (the last step first: a step only the next one read goes too)
                    if _used(op.result):
                        read = True
                    else:
                        op.erase()
                if read:  # a step the iteration reads (`c += s; store(c)`): from the iteration's value
                    x.replace_all_uses_with(value)
        for op in reversed([op for *_, hoist in found for op in hoist]):
            if op in moved and not _used(op.result):
                moved.discard(op)
                op.erase()


def _used(v) -> bool:
    return any(True for _ in v.uses)
