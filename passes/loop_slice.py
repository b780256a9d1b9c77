"""The ops of a loop body that compute some values, and their clones at another
induction value: how `tile-pipeline` issues iteration i + k's copies inside
iteration i (and before the loop) without peeling it."""

from __future__ import annotations

from mlir import ir

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
