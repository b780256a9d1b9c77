"""Which of a pipelined K loop's wgmma dots may stay in flight across iterations
(`tile-pipeline`'s `in_flight` dots), and which of their operands, made in registers,
it stages in two ring slots so that they may. Our own analysis: upstream has no
notion of asynchronous tensor-core groups at this level.
"""

from __future__ import annotations

from mlir import ir

from ..dialects.layout import Wgmma, element_bits, encoding_of
from .invariant_operands import DOT_OPERANDS
from .loop_slice import inside


def _in_ring(v, loads, loop) -> bool:
    """Whether dot operand v is read from a ring: one of `loads` (to be pipelined), or a
    `tile.local_load` before the loop (`invariant_operands.py`)."""
    if isinstance(v.owner, ir.Block):
        return False
    op = v.owner.operation
    return op in loads or op.name == "tile.local_load" and not inside(op, loop)


def _dots(found) -> tuple[set, set]:
    """The pipelined loads of `found` and the dots that read them."""
    loads = {load for load, _ in found}
    return loads, {u.owner for load in loads for u in load.results[0].uses if u.owner.name == "tile.dot"}


def made_in_body(loop, found) -> list:
    """(dot, operand number) of the 16-bit operands of the pipelined loads' wgmma dots
    that the body computes in registers (a weight decoded from its ring), in a layout
    other than wgmma's own (which A is read from registers in): each may be staged in a
    ring of two slots (`tile.local_store`) so that its dot can stay in flight."""
    loads, dots = _dots(found)
    out = []
    for dot in dots:
        for n in DOT_OPERANDS:
            v = dot.operands[n]
            if isinstance(v.owner, ir.Block) or v.owner.operation in loads or not inside(v.owner.operation, loop):
                continue
            t = ir.RankedTensorType(v.type)
            if t.rank == 2 and element_bits(t.element_type) == 16 and not isinstance(encoding_of(t), Wgmma):
                out.append((dot, n))
    return out


def in_flight_dots(loop, body, found, made=()) -> list:
    """(dot, loop result number) of the pipelined wgmma dots that may stay in flight: each
    reads both operands from rings (this loop's, one filled before it, or, for an operand
    in `made`, the two slots it is to be staged in) and accumulates into a loop-carried
    value that only it reads and that only the loop yields."""
    loads, dots = _dots(found)
    out = []
    yield_op = body.operations[len(body.operations) - 1].operation
    for dot in dots:
        acc, result = dot.operands[2], dot.results[0]
        if not isinstance(encoding_of(result.type), Wgmma) or not isinstance(acc.owner, ir.Block) or acc.owner != body:
            return []
        if not all(_in_ring(dot.operands[n], loads, loop) or (dot, n) in made for n in DOT_OPERANDS):
            return []
        uses = [(u.owner, u.operand_number) for u in result.uses]
        if len(uses) != 1 or uses[0][0] != yield_op or len(list(acc.uses)) != 1:
            return []
        n = uses[0][1]
        if acc.arg_number != n + 1:  # the iter_arg the yield feeds back
            return []
        out.append((dot, n))
    return out
