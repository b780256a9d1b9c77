"""The ops `tile-pipeline` makes (GPU only): shared-memory rings filled by
asynchronous copies, `cp.async` on sm_80 and TMA (`cp.async.bulk.tensor`)
completing on mbarriers on sm_90a, and the wait for a `dot` left in flight;
and the TMA store `tile-tma-stores` makes of an accumulator's store.
"""

from __future__ import annotations

from mlir import ir

from .op_definition import create, define
from .tile_ops import _elem, _i32, _int_attr, _shape

def _verify_local_alloc(op):
    t = ir.MemRefType(op.result.type)
    if t.rank != 3 or str(t.memory_space) != "#gpu.address_space<workgroup>":
        return "local_alloc makes a memref<stages x rows x cols x T, #gpu.address_space<workgroup>>"


@define("local_alloc", results=[("buffer", "memref")], verify=_verify_local_alloc)
def local_alloc(stages: int, shape: list[int], elem, *, loc=None, ip=None) -> ir.Value:
    """A ring of `stages` row-major tiles in shared memory (the codegen swizzles it).

    %buf = "tile.local_alloc"() : () -> memref<3x128x32xbf16, #gpu.address_space<workgroup>>
    """
    space = ir.Attribute.parse("#gpu.address_space<workgroup>")
    return create("local_alloc", [ir.MemRefType.get([stages, *shape], elem, memory_space=space)], [], loc=loc, ip=ip).result


@define("local_dealloc", operands=[("buffer", "memref")])
def local_dealloc(buffer, *, loc=None, ip=None) -> ir.Operation:
    """The end of a ring's life: once every thread is past it, its shared memory is free
    for later scratch (the epilogue's layout conversion reuses the K loop's rings).

    "tile.local_dealloc"(%buf) : (memref<3x128x32xbf16, #gpu.address_space<workgroup>>) -> ()
    """
    return create("local_dealloc", [], [buffer], loc=loc, ip=ip)


def _verify_ring_access(op, tile_type, check_elem=True, buffer=0):
    buf = ir.MemRefType(op.operands[buffer].type)
    slot = list(buf.shape[1:])  # (a 1-D tile sits in slots of one row)
    if slot not in (_shape(tile_type), [1] + _shape(tile_type)) or (check_elem and buf.element_type != _elem(tile_type)):
        return f"tile {_shape(tile_type)} x {_elem(tile_type)} does not match the ring's slots {list(buf.shape[1:])} x {buf.element_type}"


def _verify_async_copy(op):
    _, _, base, offsets, mask = op.operands
    if ir.MemRefType(base.type).element_type != ir.MemRefType(op.operands[0].type).element_type:
        return "the ring and the tensor have different element types"
    if _shape(offsets) != _shape(mask) or _elem(mask) != ir.IntegerType.get_signless(1):
        return "offsets and mask must have the same shape, the mask i1"
    return _verify_ring_access(op, offsets.type, check_elem=False) if _shape(offsets) else "offsets must be a tile"


# On the `arith.andi` that tile-pipeline makes of a prefetch's mask and its iteration's `live`
# (false past the loop's end): the GPU lowering then issues no copy where `live` is false
# instead of zero-filling the slot, which no iteration reads.
PREFETCH_GUARD = "tile.prefetch_guard"


@define("async_copy", operands=[("buffer", "memref"), ("slot", "i32"), ("base", "memref"), ("offsets", "tensor"),
                                ("mask", "tensor")], verify=_verify_async_copy)
def async_copy(buffer, slot, base, offsets, mask, *, loc=None, ip=None) -> ir.Operation:
    """Start copying `base.flat[offsets]` (0 where `mask` is false) into slot `slot` of a ring,
    asynchronously (`cp.async`); the copy belongs to the next `async_commit` group.

    "tile.async_copy"(%buf, %slot, %a, %offs, %mask) : (memref<3x128x32xbf16, #gpu.address_space<workgroup>>, i32,
        memref<?x?xbf16, strided<[?, ?], offset: ?>>, tensor<128x32xi32>, tensor<128x32xi1>) -> ()
    """
    return create("async_copy", [], [buffer, slot, base, offsets, mask], loc=loc, ip=ip)


@define("async_commit")
def async_commit(*, loc=None, ip=None) -> ir.Operation:
    """Close the group of async copies started since the last commit.

    "tile.async_commit"() : () -> ()
    """
    return create("async_commit", [], [], loc=loc, ip=ip)


def _verify_async_wait(op):
    if _int_attr(op, "pending") < 0:
        return "pending must be >= 0"


@define("async_wait", attributes=["pending"], verify=_verify_async_wait)
def async_wait(pending: int, *, loc=None, ip=None) -> ir.Operation:
    """Wait until at most `pending` commit groups are in flight, then synchronize the
    program's threads, so that every finished copy is visible to all of them.

    "tile.async_wait"() {pending = 1 : i32} : () -> ()
    """
    return create("async_wait", [], [], {"pending": _i32(pending)}, loc=loc, ip=ip)


def _verify_dot_wait(op):
    if _int_attr(op, "pending") < 0:
        return "pending must be >= 0"
    if op.operands[0].type != op.result.type:
        return "dot_wait returns its accumulator's type"


@define("dot_wait", operands=[("acc", "tensor")], results=[("result", "tensor")], attributes=["pending"],
        verify=_verify_dot_wait)
def dot_wait(acc, pending: int, *, loc=None, ip=None) -> ir.Value:
    """Wait until at most `pending` asynchronous dots (a `dot` with `in_flight`, i.e. wgmma
    groups) are still running; `result` is the accumulator `acc` they were writing.

    %r = "tile.dot_wait"(%acc) {pending = 0 : i32} : (tensor<128x128xf32, #tile.wgmma<[2, 1]>>) -> tensor<128x128xf32, #tile.wgmma<[2, 1]>>
    """
    return create("dot_wait", [acc.type], [acc], {"pending": _i32(pending)}, loc=loc, ip=ip).result


def _verify_local_load(op):
    if "transposed" in op.attributes:
        buf, shape = ir.MemRefType(op.operands[0].type), _shape(op.result.type)
        if list(buf.shape[1:]) != shape[::-1] or buf.element_type != _elem(op.result.type):
            return f"a transposed tile {shape} x {_elem(op.result.type)} does not match the ring's slots {list(buf.shape[1:])}"
        return None
    return _verify_ring_access(op, op.result)


@define("local_load", operands=[("buffer", "memref"), ("slot", "i32")], results=[("result", "tensor")],
        verify=_verify_local_load)
def local_load(buffer, slot, result_type, *, transposed: bool = False, loc=None, ip=None) -> ir.Value:
    """The tile in slot `slot` of a ring (read by `dot` straight from shared memory); with
    `transposed`, the slot holds the tile's transpose (a K x N operand stored N x K, K
    contiguous, as TMA copies a column-major B).

    %t = "tile.local_load"(%buf, %slot) : (memref<3x128x32xbf16, #gpu.address_space<workgroup>>, i32) -> tensor<128x32xbf16>
    %b = "tile.local_load"(%buf, %slot) {transposed} : (memref<3x256x64xbf16, #gpu.address_space<workgroup>>, i32) -> tensor<64x256xbf16>
    """
    attrs = {"transposed": ir.UnitAttr.get()} if transposed else {}
    return create("local_load", [result_type], [buffer, slot], attrs, loc=loc, ip=ip).result


def _verify_local_store(op):
    return _verify_ring_access(op, op.operands[0].type, buffer=1)


@define("local_store", operands=[("value", "tensor"), ("buffer", "memref"), ("slot", "i32")], verify=_verify_local_store)
def local_store(value, buffer, slot, *, loc=None, ip=None) -> ir.Operation:
    """Write a tile held in registers into slot `slot` of a ring, for the dots that then read
    it there (`tile.local_load`): a weight decoded in registers, staged in two slots so that
    the wgmma reading one may run on while the next iteration fills the other.

    "tile.local_store"(%w, %buf, %slot) : (tensor<64x128xbf16>, memref<2x64x128xbf16, #gpu.address_space<workgroup>>, i32) -> ()
    """
    return create("local_store", [], [value, buffer, slot], loc=loc, ip=ip)


def _verify_mbarrier_alloc(op):
    t = ir.MemRefType(op.result.type)
    if t.rank != 1 or str(t.element_type) != "i64" or str(t.memory_space) != "#gpu.address_space<workgroup>":
        return "mbarrier_alloc makes a memref<N x i64, #gpu.address_space<workgroup>>"
    if _int_attr(op, "arrivals") < 1:
        return "arrivals must be >= 1"


@define("mbarrier_alloc", results=[("barriers", "memref")], attributes=["arrivals"], verify=_verify_mbarrier_alloc)
def mbarrier_alloc(count: int, arrivals: int, *, loc=None, ip=None) -> ir.Value:
    """`count` mbarriers in shared memory, one per ring slot, each completing a phase after
    `arrivals` arrivals (one per `tma_load` of an iteration) and the bytes they announced.

    %bars = "tile.mbarrier_alloc"() {arrivals = 2 : i32} : () -> memref<3xi64, #gpu.address_space<workgroup>>
    """
    space = ir.Attribute.parse("#gpu.address_space<workgroup>")
    ty = ir.MemRefType.get([count], ir.IntegerType.get_signless(64), memory_space=space)
    return create("mbarrier_alloc", [ty], [], {"arrivals": _i32(arrivals)}, loc=loc, ip=ip).result


def _verify_tma_load(op):
    ring = ir.MemRefType(op.operands[0].type)
    box = [ir.IntegerAttr(a).value for a in ir.ArrayAttr(op.attributes["box"])]
    if len(box) != 2 or box[0] != ring.shape[1] or ring.shape[2] % box[1]:
        return f"box {box} does not tile the ring's {list(ring.shape[1:])} slots (rows, then whole panels of columns)"
    if str(op.operands[3].type) != "!llvm.ptr":
        return "the descriptor is a !llvm.ptr (to a CUtensorMap)"


@define("tma_load", operands=[("buffer", "memref"), ("slot", "i32"), ("barriers", "memref"), ("descriptor", "any"),
                              ("row", "i32"), ("col", "i32"), ("live", "any")],
        attributes=["box", "swizzle"], verify=_verify_tma_load)
def tma_load(buffer, slot, barriers, descriptor, row, col, live, box: list[int], swizzle: int, *, loc=None, ip=None):
    """If `live`, one thread announces the slot's bytes on mbarrier `slot` and starts the
    TMA copies (`cp.async.bulk.tensor`) of the block at (`row`, `col`) of the tensor that
    `descriptor` (a CUtensorMap) describes into slot `slot` of a ring: one `box` of
    rows x columns per 128-byte panel, out-of-bounds elements read as zeros.

    "tile.tma_load"(%buf, %slot, %bars, %desc, %row, %col, %live) {box = [128 : i32, 32 : i32], swizzle = 64 : i32}
        : (memref<3x128x32xbf16, #gpu.address_space<workgroup>>, i32, memref<3xi64, #gpu.address_space<workgroup>>,
           !llvm.ptr, i32, i32, i1) -> ()
    """
    attrs = {"box": ir.ArrayAttr.get([_i32(b) for b in box]), "swizzle": _i32(swizzle)}
    return create("tma_load", [], [buffer, slot, barriers, descriptor, row, col, live], attrs, loc=loc, ip=ip)


def _verify_tma_store(op):
    box = [ir.IntegerAttr(a).value for a in ir.ArrayAttr(op.attributes["box"])]
    shape = _shape(op.operands[3].type)
    if len(box) != 2 or len(shape) != 2 or shape[0] % box[0] or shape[1] % box[1]:
        return f"box {box} does not tile the {shape} tile (whole boxes of rows and of 128-byte panels)"
    if str(op.operands[0].type) != "!llvm.ptr":
        return "the descriptor is a !llvm.ptr (to a CUtensorMap)"
    if len(op.operands) > 6:
        return "at most one staging ring"


@define("tma_store", operands=[("descriptor", "any"), ("row", "i32"), ("col", "i32"), ("value", "tensor"),
                               ("free_slot", "i32"), ("staging", "*memref")], attributes=["box", "swizzle"],
        verify=_verify_tma_store)
def tma_store(descriptor, row, col, value, box: list[int], swizzle: int, staging=None, *, loc=None, ip=None) -> ir.Operation:
    """Write the tile `value` to the block at (`row`, `col`) of the tensor that `descriptor`
    (a CUtensorMap) describes, through shared memory and TMA stores (`cp.async.bulk.tensor`,
    shared to global): one `box` of rows x columns per 128-byte panel, elements outside the
    tensor's bounds not written. The stores complete asynchronously; shared memory they read
    is not reused before they have read it. With a `staging` ring (`staging` = (ring, its
    first free slot)), the tile goes through that ring's slots from `free_slot` on, a few
    panels a slot; without one (`free_slot` then unused, 0), through scratch memory.

    "tile.tma_store"(%desc, %row, %col, %v, %c0) {box = [64 : i32, 64 : i32], swizzle = 128 : i32}
        : (!llvm.ptr, i32, i32, tensor<128x256xbf16, #tile.wgmma<[2, 1]>>, i32) -> ()
    "tile.tma_store"(%desc, %row, %col, %v, %free, %ring) {box = [128 : i32, 64 : i32], swizzle = 128 : i32}
        : (!llvm.ptr, i32, i32, tensor<128x256xbf16, #tile.wgmma<[2, 1]>>, i32,
           memref<4x64x256xbf16, #gpu.address_space<workgroup>>) -> ()
    """
    attrs = {"box": ir.ArrayAttr.get([_i32(b) for b in box]), "swizzle": _i32(swizzle)}
    if staging:
        ring, free = staging
        operands = [descriptor, row, col, value, free, ring]
    else:
        operands = [descriptor, row, col, value, ir.Operation.create(
            "arith.constant", results=[ir.IntegerType.get_signless(32)],
            attributes={"value": _i32(0)}, loc=loc, ip=ip).result]
    return create("tma_store", [], operands, attrs, loc=loc, ip=ip)


@define("mbarrier_dealloc", operands=[("barriers", "memref")])
def mbarrier_dealloc(barriers, *, loc=None, ip=None) -> ir.Operation:
    """The end of a ring's mbarriers: once every thread is past its last wait on them, they
    are invalidated (`mbarrier.inval`), so that their memory may be initialized again, as
    the next iteration of a loop around the pipelined one does (a persistent kernel's loop
    over output tiles).

    "tile.mbarrier_dealloc"(%bars) : (memref<3xi64, #gpu.address_space<workgroup>>) -> ()
    """
    return create("mbarrier_dealloc", [], [barriers], loc=loc, ip=ip)


@define("mbarrier_wait", operands=[("barriers", "memref"), ("slot", "i32"), ("phase", "i32")])
def mbarrier_wait(barriers, slot, phase, *, loc=None, ip=None) -> ir.Operation:
    """Wait until mbarrier `slot` has completed its phase of parity `phase` (0 or 1): the
    TMA copies into the slot have landed.

    "tile.mbarrier_wait"(%bars, %slot, %phase) : (memref<3xi64, #gpu.address_space<workgroup>>, i32, i32) -> ()
    """
    return create("mbarrier_wait", [], [barriers, slot, phase], loc=loc, ip=ip)
