"""TMA copies completing on mbarriers (methods of the GPU `Translator`), the sm_90a
lowering of what `tile-pipeline` makes with `tma`: `tile.mbarrier_alloc`,
`tile.tma_load`, `tile.mbarrier_wait`. Upstream nvgpu ops throughout:

- `tile.mbarrier_alloc`: `nvgpu.mbarrier.create` (a group in static shared
  memory), each barrier `nvgpu.mbarrier.init` by thread 0 and a `fence.proxy.async`
  (the TMA unit updates them through the async proxy), then a barrier so that
  every thread sees them initialized.
- `tile.tma_load`: if the copy is live, one `nvgpu.tma.async.load`
  (`cp.async.bulk.tensor.2d`) per 128-byte panel of the slot, each from lane 0
  of the next warp in turn; the first also announces the slot's bytes with
  `nvgpu.mbarrier.arrive.expect_tx`. The tensor map is a kernel argument
  (`!llvm.ptr`, encoded by the host, `runtime/tensor_maps.py`); its box and
  swizzle are those of the ring's slots (`SharedTile`), so the copies land in
  the layout wgmma reads.
- `tile.mbarrier_wait`: every thread `nvgpu.mbarrier.try_wait.parity`.
- `tile.mbarrier_dealloc`: a barrier (every thread is past its last wait), then
  thread 0 `nvvm.mbarrier.inval` on each (PTX wants an mbarrier invalidated before
  its memory is initialized again).
- `tile.tma_store`: every thread writes its registers of the tile into shared
  memory laid out as the tensor map's boxes (`stage`, the 128-byte swizzle the
  map names), `fence.proxy.async` (the TMA unit reads through the async proxy), a
  barrier, then thread 0 issues one `nvgpu.tma.async.store` per box and commits
  them as one bulk group; nobody waits for the writes. Where shared memory above
  the live buffers is short, the tile goes a few panels of columns at a time.
  Shared memory the stores read must not be written again before they have read
  it: in a kernel with TMA stores every later use of the scratch memory (and the
  kernel's end) first has thread 0 wait for that (`cp.async.bulk.wait_group.read 0`,
  `bulk_reads_done`), then a barrier. With a staging ring (`tile-tma-stores` found
  ring slots free during the store), the tile goes into those slots all at once,
  and every `tile.mbarrier_wait` (before the K loop's copies refill a slot) has
  thread 0 wait for the stores' reads ahead of the barrier that follows it.

    # before (tile-opt stage)
    "tile.tma_load"(%ring, %slot, %bars, %desc, %row, %col, %live) {box = [128, 32], swizzle = 64}
    # after (gpu stage)
    scf.if %warp_is_k {
      nvgpu.mbarrier.arrive.expect_tx %bars[%slot], %c8192, predicate = %lane0_and_live
      nvgpu.tma.async.load %d[%col, %row], %bars[%slot] to %view, predicate = %lane0_and_live
    }
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, builtin, gpu, llvm, memref, nvgpu, nvvm, scf

from ...dialects.layout import element_bits as bits
from ...frontend.errors import TileError
from ..common.ir_builders import const_index, to_index
from ..common.lowerings import lowering
from ...dialects.layout import MAX_SHARED
from .distributed_async_copy import SharedTile
from .distributed_convert import chunks_of, stage
from .register_vectors import i32

_SPACE = "#gpu.address_space<workgroup>"
_SWIZZLE = {0: "none", 32: "swizzle_32b", 64: "swizzle_64b", 128: "swizzle_128b"}
_SUSPEND_HINT_NS = 0x989680  # how long a waiting thread may sleep between checks (as upstream's examples)


def _first_thread(self):
    return arith.cmpi(arith.CmpIPredicate.eq, arith.ori(self.lane, self.warp), i32(0))


@lowering("tile.mbarrier_alloc", target="gpu")
def op_tile_mbarrier_alloc(self, op):
    count = ir.MemRefType(op.results[0].type).shape[0]
    group = ir.Type.parse(f"!nvgpu.mbarrier.group<memorySpace = {_SPACE}, num_barriers = {count}>")
    bars = nvgpu.MBarrierCreateOp(group).result
    first = _first_thread(self)
    arrivals = const_index(ir.IntegerAttr(op.attributes["arrivals"]).value)
    for s in range(count):
        nvgpu.MBarrierInitOp(bars, arrivals, const_index(s), predicate=first)
    # The initialized mbarriers made visible to the async proxy (the TMA copies' complete_tx),
    # as the CUDA guide's TMA example and CUTLASS's pipelines do after an init.
    branch = scf.IfOp(first)
    with ir.InsertionPoint(branch.then_block):
        nvvm.FenceProxyOp(nvvm.ProxyKind.async_shared, space=nvvm.SharedSpace.shared_cta)
        scf.YieldOp([])
    gpu.barrier()
    self.map[op.results[0]] = bars


@lowering("tile.tma_load", target="gpu")
def op_tile_tma_load(self, op):
    ring_v, slot_v, bars_v, desc_v, row, col, live = op.operands
    ring = self.map[ring_v]
    rows, panel = (ir.IntegerAttr(a).value for a in ir.ArrayAttr(op.attributes["box"]))
    swizzle = ir.IntegerAttr(op.attributes["swizzle"]).value
    elem = ring.elem
    box = ir.MemRefType.get([rows, panel], elem, memory_space=ir.Attribute.parse(_SPACE))
    desc = _descriptor(self, desc_v, [rows, panel], elem, swizzle)
    bars, slot = self.map[bars_v], self.value(slot_v)
    lane0 = arith.andi(arith.cmpi(arith.CmpIPredicate.eq, self.lane, i32(0)), self.value(live))
    bar_id = to_index(slot)
    slot_base = arith.addi(const_index(ring.byte_base), arith.muli(bar_id, const_index(ring.slot_bytes)))
    r, c = to_index(self.value(row)), to_index(self.value(col))
    panel_bytes = rows * panel * bits(elem) // 8
    for p in range(ring.cols // panel):
        # Each copy in the next warp in turn (a branch the other warps skip), so that no one warp,
        # which the others then wait for at the next barrier, issues them all.
        if "warp" in op.attributes:  # a warp-specialized producer's: its one issuing warp
            warp = ir.IntegerAttr(op.attributes["warp"]).value
        else:
            warp = self.tma_issuer % self.num_warps
            self.tma_issuer += 1
        mine = scf.IfOp(arith.cmpi(arith.CmpIPredicate.eq, self.warp, i32(warp)))
        with ir.InsertionPoint(mine.then_block):
            if p == 0:  # the arrival with the slot's bytes; a copy may land before it (tx-count goes negative)
                nvgpu.MBarrierArriveExpectTxOp(bars, const_index(ring.slot_bytes), bar_id, predicate=lane0)
            dst = memref.ViewOp(box, self._scratch, arith.addi(slot_base, const_index(p * panel_bytes)), []).result
            cp = arith.addi(c, const_index(p * panel)) if p else c
            nvgpu.TmaAsyncLoadOp(dst, bars, desc, [cp, r], bar_id, predicate=lane0)
            scf.YieldOp([])


@lowering("tile.mbarrier_wait", target="gpu")
def op_tile_mbarrier_wait(self, op):
    bars_v, slot, phase = op.operands
    if self.has_tma_store:  # a TMA store may still read the slot this iteration's copies fill (the barrier after)
        bulk_reads_done(self, barrier=False)
    parity = arith.trunci(ir.IntegerType.get_signless(1), self.value(phase))
    nvgpu.MBarrierTryWaitParityOp(self.map[bars_v], parity, const_index(_SUSPEND_HINT_NS), to_index(self.value(slot)))


@lowering("tile.mbarrier_dealloc", target="gpu")
def op_tile_mbarrier_dealloc(self, op):
    bars = self.map[op.operands[0]]
    count = ir.MemRefType(op.operands[0].type).shape[0]
    gpu.barrier()
    branch = scf.IfOp(_first_thread(self))
    with ir.InsertionPoint(branch.then_block):
        i32_type, shared = ir.IntegerType.get_signless(32), ir.Type.parse("!llvm.ptr<3>")
        for s in range(count):
            address = nvgpu.MBarrierGetOp(i32_type, bars, const_index(s)).result
            nvvm.MBarrierInvalOp(llvm.IntToPtrOp(shared, address).result)
        scf.YieldOp([])


def _descriptor(self, desc_v, box: list[int], elem, swizzle: int):
    """The tensor-map argument as the nvgpu descriptor type of its box."""
    shape = ir.MemRefType.get(box, elem, memory_space=ir.Attribute.parse(_SPACE))
    desc_t = ir.Type.parse(f"!nvgpu.tensormap.descriptor<tensor = {shape}, swizzle = {_SWIZZLE[swizzle]}, "
                           "l2promo = none, oob = zero, interleave = none>")
    return builtin.UnrealizedConversionCastOp([desc_t], [self.value(desc_v)]).result


@lowering("tile.tma_store", target="gpu")
def op_tile_tma_store(self, op):
    desc_v, row_v, col_v, value, free_v, *staging = op.operands
    t = ir.RankedTensorType(value.type)
    rows, cols = t.shape
    box = [ir.IntegerAttr(a).value for a in ir.ArrayAttr(op.attributes["box"])]
    swizzle = ir.IntegerAttr(op.attributes["swizzle"]).value
    elem, panel = t.element_type, box[1]
    box_bytes = rows * panel * bits(elem) // 8
    if staging:  # free slots of a live ring, all chunks at once
        ring = self.map[staging[0]]
        fit = ring.slot_bytes // box_bytes * panel
    else:  # above the buffers that stay live, one chunk after another
        base = -(-self.scratch_base // 1024) * 1024
        fit = (MAX_SHARED - base) // box_bytes * panel
    chunks = chunks_of(self, (self.dist(value),), cols, fit, axis=1, contiguous=True) if fit else None
    if chunks is None or cols // chunks.count % panel:
        raise TileError(f"tile too large: storing a {rows}x{cols} tile through shared memory needs {box_bytes} bytes "
                        f"or more at a time, more than there is room for: use smaller tiles or fewer stages")
    width = cols // chunks.count
    view_t = ir.MemRefType.get([rows * width], elem, memory_space=ir.Attribute.parse(_SPACE))
    box_t = ir.MemRefType.get(box, elem, memory_space=ir.Attribute.parse(_SPACE))
    desc = _descriptor(self, desc_v, box, elem, swizzle)
    row, col = to_index(self.value(row_v)), to_index(self.value(col_v))

    def issue(staged):
        """After the staging writes: the proxy fence, a barrier, then thread 0 issues one TMA
        store per box of the staged chunks ((chunk, its first byte in shared memory)) and
        commits them as one bulk group."""
        nvvm.FenceProxyOp(nvvm.ProxyKind.async_shared, space=nvvm.SharedSpace.shared_cta)
        gpu.barrier()
        first_thread = scf.IfOp(_first_thread(self))
        with ir.InsertionPoint(first_thread.then_block):
            for c, at in staged:
                for p in range(width // panel):
                    src = memref.ViewOp(box_t, self._scratch, arith.addi(at, const_index(p * box_bytes)), []).result
                    nvgpu.TmaAsyncStoreOp(src, desc, [arith.addi(col, const_index(c * width + p * panel)), row])
            nvvm.CpAsyncBulkCommitGroupOp()
            scf.YieldOp([])

    if staging:
        bulk_reads_done(self)  # earlier tiles' stores have read their slots; every warpgroup's dots are done
        first = self.value(free_v)
        starts = [arith.addi(const_index(ring.byte_base), arith.muli(to_index(arith.remui(
            arith.addi(first, i32(c)), i32(ring.stages))), const_index(ring.slot_bytes))) for c in range(chunks.count)]
        for c, at in enumerate(starts):
            stage(self, value, SharedTile(memref.ViewOp(view_t, self._scratch, at, []).result, i32(0), rows, width, elem),
                  (chunks, c))
        issue(enumerate(starts))
        return
    buf = self.scratch(elem, rows * width, align=1024)  # after bulk_reads_done: earlier readers are done
    tile = SharedTile(buf, i32(0), rows, width, elem)
    for c in range(chunks.count):
        if c:
            bulk_reads_done(self)  # the previous chunk's stores have read the buffer
        stage(self, value, tile, (chunks, c))
        issue([(c, const_index(base))])


def bulk_reads_done(self, barrier: bool = True):
    """Thread 0 waits until its TMA stores have read their shared memory; then (`barrier`)
    every thread waits for thread 0, so that the memory may be written again."""
    first = scf.IfOp(_first_thread(self))
    with ir.InsertionPoint(first.then_block):
        nvvm.CpAsyncBulkWaitGroupOp(0, read=True)
        scf.YieldOp([])
    if barrier:
        gpu.barrier()
