"""Listing the ops of a piece of IR, once, before a pass rewrites it.

Passes collect first and rewrite after, so that erasing or moving ops never
disturbs the walk.
"""

from __future__ import annotations

from mlir import ir

from ..frontend.errors import interrupt_of


def walk(root, visit, order=ir.WalkOrder.POST_ORDER) -> None:
    """root.walk(visit, order), raising what visit raised as itself: the bindings turn it into a
    RuntimeError holding its traceback as text (a Ctrl-C in a walk was an internal compiler error)."""
    raised = []

    def guarded(op):
        try:
            return visit(op)
        except BaseException as e:
            raised.append(e)
            return ir.WalkResult.INTERRUPT

    try:
        root.walk(guarded, order)
    except RuntimeError as e:  # (raised in `guarded` before its try)
        interrupt = interrupt_of(e)
        if interrupt is not None:
            raise interrupt from e
        raise
    if raised:
        raise raised[0]


def all_ops(root) -> list:
    """Every op nested in `root` (itself included), outer before inner, in program order."""
    found = []

    def visit(op):
        found.append(op)
        return ir.WalkResult.ADVANCE

    walk(root, visit, ir.WalkOrder.PRE_ORDER)
    return found


def collect(root, names) -> list:
    """The ops nested in `root` whose name is in `names`."""
    return [op for op in all_ops(root) if op.name in names]


def enclosing_loop(op, loops=("scf.for",)):
    """The innermost loop (an op named in `loops`) that holds `op`, below its function; else None."""
    parent = op.parent
    while parent is not None and parent.name not in ("func.func", "gpu.func"):
        if parent.name in loops:
            return parent
        parent = parent.parent
    return None


def in_loop(op, loops=("scf.for",)) -> bool:
    """Whether a loop (an op named in `loops`) holds `op`, below its function."""
    return enclosing_loop(op, loops) is not None


def blocks_of(root) -> list:
    """Every block nested in `root`."""
    return [b for op in all_ops(root) for r in op.regions for b in r.blocks]
