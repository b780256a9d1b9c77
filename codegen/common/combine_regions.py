"""The combine region of `tile.scan` / `tile.reduce_region` (`dialects/combine_ops.py`),
applied to values: its ops cloned at the insertion point with the block's arguments
replaced, as often as a lowering combines."""

from __future__ import annotations

from mlir import ir

from ...dialects.combine_ops import combine_block
from ...passes.walk import all_ops


def inline_combine(op, accs: list, xs: list) -> list:
    """combine(accs, xs): the values the region yields for these arguments."""
    block = combine_block(op)
    mapping = dict(zip(block.arguments, [*accs, *xs]))
    ops = list(block.operations)
    for inner in ops[:-1]:
        new = inner.operation.clone()
        for nested in all_ops(new):  # (an scf.if of the combine reads the arguments inside its regions)
            for i, v in enumerate(nested.operands):
                if v in mapping:
                    nested.operands[i] = mapping[v]
        mapping.update(zip(inner.results, new.results))
    return [mapping.get(v, v) for v in ops[-1].operands]
