"""`clone-elementwise-producers`: give each use of a pure elementwise linalg op its own copy.

Our own pass, run before upstream `linalg-fuse-elementwise-ops`, which fuses a
producer into its consumer only when it has one use. Recomputing a few
arithmetic ops per element is cheaper than a round trip through memory, so
after this every pure elementwise value (masks, offsets, activations) fuses
into each consumer and no intermediate buffer is left for it. It also keeps
i1 masks out of memory, which the LLVM lowering of memref cannot store.
Producers that read memory (loads) are left alone: they must not repeat.

    # before
    %m = linalg.generic {...} ins(%a) outs(%e) { arith.cmpi ... }   // two uses
    %x = linalg.generic ins(%m, ...)    %y = linalg.generic ins(%m, ...)
    # after
    %m0 = linalg.generic {...} ...      %x = linalg.generic ins(%m0, ...)
    %m1 = linalg.generic {...} ...      %y = linalg.generic ins(%m1, ...)
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import tensor

from ...passes.registry import register_pass
from ...passes.walk import collect

_PURE_DIALECTS = ("arith.", "math.", "linalg.index", "linalg.yield")


def pure_elementwise(op) -> bool:
    if op.name == "linalg.fill":
        return True
    if op.name != "linalg.generic" or not op.results:
        return False
    if any("reduction" in str(it) for it in ir.ArrayAttr(op.attributes["iterator_types"])):
        return False
    body = op.regions[0].blocks[0]
    return all(inner.operation.name.startswith(_PURE_DIALECTS) for inner in body.operations)


def _unread_outputs_to_empty(op):
    """An elementwise generic that never reads its `outs` (converted arith ops pass their
    first operand there, for its shape) gets a `tensor.empty` instead: that operand is no
    real use, and counting it would double the clones at every step of a chain.

        # before
        %y = linalg.generic ins(%a, %b) outs(%a) { ^bb0(%x, %z, %unread): ... }
        # after
        %e = tensor.empty() ...   %y = linalg.generic ins(%a, %b) outs(%e) { ... }
    """
    if op.name != "linalg.generic":
        return
    n_out = len(op.results)
    args = op.regions[0].blocks[0].arguments
    for i in range(n_out):
        operand = len(op.operands) - n_out + i
        value, ty = op.operands[operand], op.operands[operand].type
        owner = value.owner if isinstance(value, ir.OpResult) else None
        if (owner is not None and owner.name == "tensor.empty") or list(args[len(args) - n_out + i].uses) \
                or not ir.RankedTensorType(ty).has_static_shape:
            continue
        with ir.InsertionPoint(op), op.location:
            op.operands[operand] = tensor.EmptyOp(ir.RankedTensorType(ty).shape, ir.RankedTensorType(ty).element_type).result


@register_pass("clone-elementwise-producers")
@dataclass
class CloneElementwiseProducers:
    def run(self, module_op):
        generics = collect(module_op, {"linalg.generic", "linalg.fill"})
        for op in generics:
            if pure_elementwise(op):
                _unread_outputs_to_empty(op)
        # Reverse program order: a clone's own operands are then split by later visits.
        for op in reversed(generics):
            if not pure_elementwise(op):
                continue
            uses = list(op.results[0].uses)
            for use in uses[1:]:
                clone = op.clone(ir.InsertionPoint(op))
                use.owner.operands[use.operand_number] = clone.results[0]
