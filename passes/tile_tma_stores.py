"""`tile-tma-stores`: a tensor-core accumulator stored to a whole block of a row-major
kernel tensor, masked at its bounds, becomes a `tile.tma_store` (sm_90a).

Our own pass: upstream has TMA stores (`nvgpu.tma.async.store`) but nothing that
finds which tile-level stores they can replace. `tile-assign-layouts` sends an
accumulator (`#tile.wgmma` or `#tile.mma`) to a row store through a
`convert_layout` into a blocked layout, so that each warp writes whole rows with
16-byte stores. A TMA store takes the accumulator as it is instead: every thread
writes its registers into shared memory, laid out as the tensor map's boxes,
and one thread hands the boxes to the TMA unit, which writes them to global
memory while the program goes on (the next output tile's K loop, in a
persistent kernel), clipping at the tensor's bounds; no thread issues a global
store or waits for one (`codegen/gpu/distributed_tma.py`).

    # before (after tile-assign-layouts)
    %v = "tile.convert_layout"(%acc) : (tensor<128x256xbf16, #tile.wgmma<[2, 1]>>) -> tensor<128x256xbf16, #blocked>
    "tile.store"(%out, %offs, %v, %mask)     %offs = rm[:, None] * s + rn[None, :], %mask = (rm < M) & (rn < N)
    # after (%desc: a new kernel argument; staging: a ring and its first free slot, see below)
    "tile.tma_store"(%desc, %row0, %col0, %acc, %free, %ring) {box = [128, 64], swizzle = 128}

Only a store inside a loop (a persistent kernel's loop over output tiles) is
rewritten: there the TMA unit's writes overlap the next iteration's work. At the
end of a program they overlap nothing, and the wait for them to have read shared
memory, before the block may exit, costs what the threads' own stores did: on the
H200, 4096^3 bf16, in interleaved launches against Triton, the persistent matmul
went from 1.002x to 1.007x, one program per tile from 0.990x to 0.985x
(benchmarks/results/2026-12-04-1709-tma-stores).

Where the store follows the next tile's first copies into TMA rings that stay
live (`next_tile_copies.py`: copies after the K loop), the ring slots those copies leave free (the K loop's
last iterations', whose dots are done) are its staging memory, named on the op
(the ring and its first free slot): the whole tile goes there at once, and the
next K loop's copies into those slots wait for the stores to have read them.
Otherwise the tile goes through scratch memory, a few panels at a time where a
live ring leaves less room, each group read before the next is written; staged
in the free slots, the persistent matmul went from 1.007x to 1.013x Triton at
4096^3 and from 1.006x to 1.012x at 8192^3 (interleaved launches,
benchmarks/results/2026-12-04-1738).

The block must be one a tensor map describes (`block_access.py`,
`tma_copies.tensor_map_ready`), and the tensor one the kernel neither reads nor
stores to anywhere else, since the TMA unit's writes are not ordered with the
program's own accesses. A box is all the tile's rows by one 128-byte panel of
columns, so that the epilogue can go through shared memory a few panels at a time
where a live ring leaves less room.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith

from ..dialects import pipeline_ops
from ..dialects.tile_ops import WRITES
from ..dialects.layout import Mma, Wgmma, element_bits, encoding_of, shared_panel
from .axis_info import divisible_indices
from .block_access import match_store_block, start_value
from .registry import register_pass
from .tile_fuse import through_groups
from .tma_copies import add_descriptor, tensor_map_ready
from .walk import all_ops, in_loop


def _accumulator(value):
    """The tensor-core tile a stored value converts, or None."""
    v = through_groups(value)
    if isinstance(v.owner, ir.Block) or v.owner.operation.name != "tile.convert_layout":
        return None
    src = v.owner.operation.operands[0]
    return src if isinstance(encoding_of(src.type), (Mma, Wgmma)) else None


def _free_slots(store, t, panel) -> tuple | None:
    """(ring, its first free slot) where the ring slots free during this store can hold the
    tile, a few panels a slot; else None (scratch memory). The next tile's first copies
    (`next_tile_copies.py`), issued into a TMA ring before this store in the same loop
    body, fill slots s0 .. s0 + ahead - 1 (mod the stages); the other stages - ahead slots
    held the K loop's last iterations, whose dots are done: free until the next K loop
    issues its copies into them (which first waits for the stores to have read them,
    `codegen/gpu/distributed_tma.py`)."""
    copies, freed = [], set()
    for op in _block_before(store):
        if op.name == "scf.for":  # only copies after the K loop: the next tile's, not this one's prologue
            copies = []
        elif op.name == "tile.tma_load":
            copies.append(op)
        elif op.name == "tile.local_dealloc":  # a ring freed before the store is scratch memory by then
            freed.add(op.operands[0])
    rows, cols = t.shape
    best = []
    rings = []  # in program order, so that the choice (the first of the largest slots) is deterministic
    for c in copies:
        if c.operands[0] not in rings and c.operands[0] not in freed:
            rings.append(c.operands[0])
    for ring in rings:
        r = ir.MemRefType(ring.type)
        stages, slot_bytes = r.shape[0], r.shape[1] * r.shape[2] * element_bits(r.element_type) // 8
        mine = [c for c in copies if c.operands[0] == ring]
        per_slot = slot_bytes // (rows * panel * element_bits(t.element_type) // 8) * panel  # columns a slot holds
        chunks = cols // min(per_slot, cols) if per_slot else 0  # as the codegen splits it: a power of two
        if not chunks or cols % chunks or chunks & (chunks - 1) or chunks > stages - len(mine):
            continue
        if not best or slot_bytes > best[0]:
            best = [slot_bytes, ring, mine[0].operands[1], len(mine), stages]
    if not best:
        return None
    _, ring, first, ahead, stages = best
    i32 = ir.IntegerType.get_signless(32)
    free = arith.remui(arith.addi(first, arith.ConstantOp(i32, ahead).result), arith.ConstantOp(i32, stages).result)
    return ring, free


def _block_before(op) -> list:
    """The ops before op in its block."""
    for region in op.parent.regions:
        for block in region.blocks:
            ops = [o.operation for o in block.operations]
            if op.operation in ops:
                return ops[:ops.index(op.operation)]
    return []


@register_pass("tile-tma-stores")
@dataclass
class TileTmaStores:
    divisible_args: str = ""  # kernel arguments known 16-byte aligned (tensors) or multiples of 16 (ints)

    def run(self, module_op):
        divisible = divisible_indices(self.divisible_args)
        ops = all_ops(module_op)
        accessed = {}  # tensor -> how many loads and stores reach it
        for op in ops:
            if op.name in ("tile.load", "tile.load_tile") + WRITES:
                accessed[op.operands[0]] = accessed.get(op.operands[0], 0) + 1
        for op in ops:
            if op.name == "tile.store" and accessed.get(op.operands[0]) == 1:
                self.rewrite(op, divisible)

    def rewrite(self, store, divisible):
        if not in_loop(store) or not isinstance(store.operands[2].type, ir.RankedTensorType):
            return  # (a scalar store: tutorial 09's counter)
        acc = _accumulator(store.operands[2])
        b = match_store_block(store)
        if acc is None or b is None or b.transposed:
            return
        t = ir.RankedTensorType(acc.type)
        rows, cols = t.shape
        if not tensor_map_ready(b, store.operands[0], [rows, cols], t, divisible):
            return
        panel, swizzle = shared_panel(rows, cols, element_bits(t.element_type))
        desc = add_descriptor(store, b)
        converts = [through_groups(v) for v in store.operands[1:]]
        with ir.InsertionPoint(store), store.location:
            row, col = start_value(b.row, {}), start_value(b.col, {})
            pipeline_ops.tma_store(desc, row, col, acc, [rows, panel], swizzle, _free_slots(store, t, panel))
        store.erase()
        for v in converts:  # the offsets', value's and mask's conversions, now unused
            if not isinstance(v.owner, ir.Block) and v.owner.operation.name == "tile.convert_layout" \
                    and not list(v.uses):
                v.owner.operation.erase()
