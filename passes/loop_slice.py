"""The ops of a loop body that compute some values, and their clones at another
induction value: how `tile-pipeline` issues iteration i + k's copies inside
iteration i (and before the loop) without peeling it."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from ..dialects import tile_ops
from .walk import all_ops


def inside(op, region_op) -> bool:
    """Whether op is nested (at any depth) in region_op."""
    p = op
    while p is not None:
        if p == region_op:
            return True
        p = p.parent
    return False


def body_slice(values, body, loop, iv):
    """The ops of `body` that compute `values`, in body order; None if they read a loop-carried value."""
    needed, work = set(), list(values)
    while work:
        v = work.pop()
        if v == iv:
            continue
        if isinstance(v.owner, ir.Block):
            if inside(v.owner.owner, loop):  # an iter_arg (or a block argument nested in the body)
                return None
            continue
        op = v.owner.operation
        if not inside(op, loop):
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


def split_from_group(v, body, loop, iv, memo: dict | None = None):
    """v itself, or, where v is a result of a fusion group of `body` that also reads
    loop-carried values (attention's V offsets, grouped with the softmax), a clone of the
    ops of the group that compute it alone, placed before the group: the value a copy of
    a later iteration can recompute. Unchanged (v) where those ops read loop-carried
    values themselves.

        # before: one group, its V offsets needing the scores
        %g:2 = scf.execute_region { ... %p = exp2(%s - %m) ... %offs = %base + %rn * %stride ... yield %p, %offs }
        # after: the offsets' ops alone, then the group
        %offs' = %base + %rn * %stride
        %g:2 = scf.execute_region { ... yield %p, %offs }

    `memo` (old value -> its clone), shared by the calls for one load's offsets and mask,
    clones what they share once: a block's row vector stays one value in both, as
    `block_access.py` wants it."""
    memo = {} if memo is None else memo
    if v in memo:
        return memo[v]
    if isinstance(v.owner, ir.Block) or v.owner.operation.name != "scf.execute_region":
        return v
    group = v.owner.operation
    inner = group.regions[0].blocks[0]
    yielded = inner.operations[-1].operands[list(group.results).index(v)]
    needed, outside, work = set(), [], [yielded]
    while work:
        x = work.pop()
        if not isinstance(x.owner, ir.Block) and x.owner.operation.parent == group:
            op = x.owner.operation
            if op not in needed:
                needed.add(op)
                work.extend(op.operands)
        elif isinstance(x.owner, ir.Block) and x.owner == inner:
            return v
        else:
            outside.append(x)
    # A value it reads from another such group (a mask's row bound computed beside
    # another load) is split out of that one first.
    for x in outside:
        if not isinstance(x.owner, ir.Block) and x.owner.operation.name == "scf.execute_region":
            memo[x] = split_from_group(x, body, loop, iv, memo)
    if body_slice([memo.get(x, x) for x in outside], body, loop, iv) is None:
        return v
    clone_slice([op.operation for op in inner.operations if op.operation in needed
                 and not all(r in memo for r in op.results)], memo, ir.InsertionPoint(group))
    return memo.get(yielded, yielded)


def _remap(op, mapping):
    for inner in all_ops(op):
        for i, o in enumerate(inner.operands):
            if o in mapping:
                inner.operands[i] = mapping[o]


def clone_slice(ops, mapping, ip):
    for op in ops:
        new = op.clone(ip=ip)
        _remap(new, mapping)
        for a, b in zip(op.results, new.results):
            mapping[a] = b


def is_index_load(op) -> bool:
    """A load of a scalar or of a 1-D integer tile: a page number, or one per token, read
    from a table to make addresses."""
    if op.name != "tile.load":
        return False
    t = op.results[0].type
    if not isinstance(t, ir.ShapedType):
        return True
    t = ir.RankedTensorType(t)
    return t.rank == 1 and isinstance(t.element_type, ir.IntegerType)


def guard_index_loads(ops, mapping, live):
    """The clones (`mapping`) of the index loads in `ops` (`is_index_load`) read only where
    the cloned iteration runs (`live()` makes that i1 in place, splat over a tile's mask):
    a later iteration's page number, read from a table, may lie past its end.

        # before -> after
        %p = "tile.load"(%table, %i, %true, %zero)  ->  %live = arith.cmpi slt, %i, %ub
                                                        %m = arith.andi %true, %live
                                                        %p = "tile.load"(%table, %i, %m, %zero)"""
    for op in ops:
        for inner in all_ops(op):
            if is_index_load(inner):
                clone = mapping[inner.results[0]].owner.operation
                with ir.InsertionPoint(clone), clone.location:
                    mask, alive = clone.operands[2], live()
                    if isinstance(mask.type, ir.ShapedType):
                        alive = tile_ops.splat(alive, list(ir.RankedTensorType(mask.type).shape))
                        alive.set_type(mask.type)  # (with the mask's layout)
                    clone.operands[2] = arith.andi(mask, alive)


def hoist_scalar(v, loop):
    """v, or where the loop computes it from values defined outside it (a base offset of a
    batch and head, computed inside a fusion group of the body), a clone of those scalar ops
    before the loop; None where one reads a value of the loop or is not a plain scalar op."""
    order, seen = [], set()

    def visit(x) -> bool:
        if isinstance(x.owner, ir.Block):
            return not inside(x.owner.owner, loop)
        op = x.owner.operation
        if not inside(op, loop) or op in seen:
            return True
        if op.regions or any(isinstance(r.type, ir.ShapedType) for r in op.results) or not all(
                visit(o) for o in op.operands):
            return False
        seen.add(op)
        order.append(op)
        return True

    if not visit(v):
        return None
    mapping = {}
    clone_slice(order, mapping, ir.InsertionPoint(loop))
    return mapping.get(v, v)
