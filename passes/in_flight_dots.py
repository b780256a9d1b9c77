"""Which of a pipelined K loop's wgmma dots may stay in flight across iterations
(`tile-pipeline`'s `in_flight` dots), and which of their operands, made in registers,
it stages in ring slots of their own (two or three) so that they may. Our own analysis: upstream has no
notion of asynchronous tensor-core groups at this level.
"""

from __future__ import annotations

from mlir import ir

from ..dialects.layout import Wgmma, element_bits, encoding_of
from .invariant_operands import DOT_OPERANDS
from .loop_slice import inside
from .tile_fuse import read_in_place


def _in_ring(v, loads, loop) -> bool:
    """Whether dot operand v is read from a ring: one of `loads` (to be pipelined), or a
    `tile.local_load` before the loop (`invariant_operands.py`)."""
    if isinstance(v.owner, ir.Block):
        return False
    op = v.owner.operation
    if op.name == "tile.trans" and read_in_place(v):  # (an operand read in place through it: fp8_dots.py, tile_k_major_loads.py)
        return _in_ring(op.operands[0], loads, loop)
    return op in loads or op.name == "tile.local_load" and not inside(op, loop)


def _dots(found, body) -> tuple[set, list]:
    """The pipelined loads of `found` and the dots that read them, in the loop body's order
    (the staging rings are made in this order)."""
    loads = {load for load, _ in found}
    dots = {u.owner for load in loads for u in load.results[0].uses if u.owner.name == "tile.dot"}
    ordered = [op for op in body.operations if op in dots]
    return loads, ordered + [d for d in dots if d not in ordered]  # (a dot in a nested region: rare)


def made_in_body(loop, found) -> list:
    """(dot, operand number) of the 16-bit operands of the pipelined loads' wgmma dots
    that the body computes in registers (a weight decoded from its ring), in a layout
    other than wgmma's own (which A is read from registers in): each may be staged in a
    ring of two or three slots (`tile.local_store`) so that its dot can stay in flight."""
    loads, dots = _dots(found, loop.regions[0].blocks[0])
    out = []
    for dot in dots:
        for n in DOT_OPERANDS:
            v = dot.operands[n]
            if isinstance(v.owner, ir.Block) or _in_ring(v, loads, loop) or not inside(v.owner.operation, loop):
                continue
            t = ir.RankedTensorType(v.type)
            if t.rank == 2 and element_bits(t.element_type) == 16 and not isinstance(encoding_of(t), Wgmma):
                out.append((dot, n))
    return out


def in_flight_dots(loop, body, found, made=()) -> list:
    """The chains of pipelined wgmma dots that may stay in flight, as (dots, loop result
    number): each dot reads both operands from rings (this loop's, one filled before it,
    or, for an operand in `made`, the slots it is to be staged in); the first
    accumulates into a loop-carried value that only it reads, each next one into the
    dot before's result, which only it reads (INT4's two halves of K), and only the
    loop yields the last's. Every dot of the loads, or none: [] when one does not fit."""
    loads, dots = _dots(found, body)
    yield_op = body.operations[len(body.operations) - 1].operation
    out, chained = [], set()
    for first in dots:
        acc = first.operands[2]
        if not isinstance(acc.owner, ir.Block) or acc.owner != body:
            continue  # (not a chain's first; its chain is checked from its first)
        if len(list(acc.uses)) != 1:
            return []
        chain, dot = [], first
        while True:
            if not isinstance(encoding_of(dot.results[0].type), Wgmma):
                return []
            if not all(_in_ring(dot.operands[n], loads, loop) or (dot, n) in made for n in DOT_OPERANDS):
                return []
            chain.append(dot)
            uses = [(u.owner, u.operand_number) for u in dot.results[0].uses]
            if len(uses) != 1:
                return []
            user, n = uses[0]
            if user in dots and n == 2:  # the next dot of the chain accumulates into this one
                dot = user
                continue
            if user != yield_op or acc.arg_number != n + 1:  # the iter_arg the yield feeds back
                return []
            break
        out.append((chain, n))
        chained.update(chain)
    return out if len(chained) == len(dots) else []
