"""Listing the ops of a piece of IR, once, before a pass rewrites it.

Passes collect first and rewrite after, so that erasing or moving ops never
disturbs the walk.
"""

from __future__ import annotations

from mlir import ir


def all_ops(root) -> list:
    """Every op nested in `root` (itself included), outer before inner, in program order."""
    found = []

    def visit(op):
        found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def collect(root, names) -> list:
    """The ops nested in `root` whose name is in `names`."""
    return [op for op in all_ops(root) if op.name in names]


def blocks_of(root) -> list:
    """Every block nested in `root`."""
    return [b for op in all_ops(root) for r in op.regions for b in r.blocks]
