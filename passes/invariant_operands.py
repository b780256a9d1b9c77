"""Loop-invariant wgmma operands copied into shared memory once (part of `tile-pipeline`).

A tile loaded before a loop and read only as an operand of the wgmma dots in it
(attention's Q, read at every K step) would be held in registers, and written to
shared memory before every wgmma, which reads its operands there (the staged path of
`codegen/gpu/distributed_wgmma.py`). It is copied once into a one-slot ring instead,
where the dots read it as they read the pipelined operands:

    # before
    %q = "tile.load"(%x, %offs, %mask, %zero) : (...) -> tensor<128x128xbf16, ...>
    scf.for ... { "tile.dot"(%q, %k, %acc) ... }
    # after
    %ring = "tile.local_alloc"() : () -> memref<1x128x128xbf16, #gpu.address_space<workgroup>>
    "tile.async_copy"(%ring, %c0, %x, %offs, %mask) ; "tile.async_commit"() ; "tile.async_wait"() {pending = 0}
    %q = "tile.local_load"(%ring, %c0) : (...) -> tensor<128x128xbf16, ...>
    scf.for ... { "tile.dot"(%q, %k, %acc) ... }
    "tile.local_dealloc"(%ring)

The ring lives until the last loop of the block that reads the tile (attention's
second loop, over its masked key blocks).

Only for wgmma dots: mma.sync reads register operands as they are, and a one-time
load into its operand registers is what it wants.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from ..dialects import pipeline_ops
from ..dialects.layout import Wgmma, element_bits, encoding_of
from .block_access import match_block
from .walk import all_ops

DOT_OPERANDS = (0, 1)  # a, b of `tile.dot` (2 is the accumulator)


def _loops_reading(load, is_zero) -> list | None:
    """The loops of `load`'s block whose wgmma dots read it, in order, if it is a 16-bit 2-D
    tile (a row-major block or a gather, not a column-major block, whose slot would hold the
    transpose), with zeros where masked off, read only as a wgmma dot operand inside loops
    after it; else None."""
    t = load.results[0].type
    if not isinstance(t, ir.RankedTensorType) or t.rank != 2 or element_bits(t.element_type) != 16:
        return None
    uses = [(u.owner, u.operand_number) for u in load.results[0].uses]
    if not uses or not is_zero(load.operands[3]):
        return None
    loops = []
    for o, n in uses:
        if o.name != "tile.dot" or n not in DOT_OPERANDS or not isinstance(encoding_of(o.results[0].type), Wgmma):
            return None
        top = o
        while top is not None and top.parent != load.parent:
            top = top.parent
        if top is None or top.name != "scf.for":
            return None
        if top not in loops:
            loops.append(top)
    block = match_block(load)
    return None if block is not None and block.transposed else loops


def stage_invariant_operands(module_op, is_zero) -> None:
    """Copy each loop-invariant wgmma operand into a one-slot ring where it was loaded, and
    free the ring after the last loop that reads it (attention's Q, read by the loop over
    whole key blocks and by the one over the masked rest)."""
    for load in [op for op in all_ops(module_op) if op.name == "tile.load"]:
        loops = _loops_reading(load, is_zero)
        if not loops:
            continue
        base, offsets, mask, _ = load.operands
        t = ir.RankedTensorType(load.results[0].type)
        with ir.InsertionPoint(load), load.location:
            ring = pipeline_ops.local_alloc(1, list(t.shape), t.element_type)
            slot = arith.ConstantOp(ir.IntegerType.get_signless(32), 0).result
            pipeline_ops.async_copy(ring, slot, base, offsets, mask)
            pipeline_ops.async_commit()
            pipeline_ops.async_wait(0)
            got = pipeline_ops.local_load(ring, slot, load.results[0].type)
        load.results[0].replace_all_uses_with(got)
        load.erase()
        last = loops[0]
        for loop in loops[1:]:
            last = loop if last.operation.is_before_in_block(loop.operation) else last
        with ir.InsertionPoint.after(last), last.location:
            pipeline_ops.local_dealloc(ring)
