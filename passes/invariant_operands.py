"""Loop-invariant wgmma operands copied into shared memory once (part of `tile-pipeline`).

A tile loaded before a loop and read only as an operand of the wgmma dots in it
(attention's Q, read at every K step) would be held in registers, and written to
shared memory before every wgmma, which reads its operands there (the staged path of
`codegen/distributed_wgmma.py`). It is copied once into a one-slot ring instead,
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

Only for wgmma dots: mma.sync reads register operands as they are, and a one-time
load into its operand registers is what it wants.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from ..dialects import pipeline_ops
from ..dialects.layout import Wgmma, element_bits, encoding_of
from .block_access import match_block
from .loop_slice import inside

DOT_OPERANDS = (0, 1)  # a, b of `tile.dot` (2 is the accumulator)


def _invariant_operand(load, loop, is_zero) -> bool:
    """A 16-bit 2-D tile loaded outside `loop` (a row-major block or a gather, not a
    column-major block, whose slot would hold the transpose), with zeros where masked off,
    read only as a wgmma dot operand inside `loop`."""
    if load.name != "tile.load" or inside(load, loop):
        return False
    t = load.results[0].type
    if not isinstance(t, ir.RankedTensorType) or t.rank != 2 or element_bits(t.element_type) != 16:
        return False
    uses = [(u.owner, u.operand_number) for u in load.results[0].uses]
    if not uses or not is_zero(load.operands[3]):
        return False
    if any(o.name != "tile.dot" or n not in DOT_OPERANDS or not inside(o, loop)
           or not isinstance(encoding_of(o.results[0].type), Wgmma) for o, n in uses):
        return False
    block = match_block(load)
    return block is None or not block.transposed


def stage_invariant_operands(loop, is_zero) -> None:
    """Copy each loop-invariant wgmma operand of `loop`'s dots into a one-slot ring before
    the loop (where it was loaded), and free the ring after the loop."""
    body = loop.regions[0].blocks[0]
    loads = []
    for op in body.operations:
        op = op.operation
        if op.name != "tile.dot":
            continue
        for n in DOT_OPERANDS:
            v = op.operands[n]
            if isinstance(v.owner, ir.Block) or v.owner.operation in loads:
                continue
            if _invariant_operand(v.owner.operation, loop, is_zero):
                loads.append(v.owner.operation)
    rings = []
    for load in loads:
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
        rings.append(ring)
    with ir.InsertionPoint.after(loop), loop.location:
        for ring in reversed(rings):
            pipeline_ops.local_dealloc(ring)
