"""Moving a tile between layouts through a swizzled shared tile (methods of the
GPU `Translator`): `stage` writes every register of a tile into a `SharedTile`,
with vector stores along its rows where the layout gives a thread consecutive
elements; `op_tile_convert_layout` stages a tile that cannot be recomputed in
its new layout, then reads it back in that layout, again with vector loads.

The case it is for is the epilogue of a matmul: in the tensor-core layouts a
thread holds pairs of consecutive columns, so a bf16 accumulator goes to global
memory as 4-byte stores, a warp writing 16 bytes of each of 8 rows per
instruction. Converted to a `#tile.blocked` layout of 16 bytes per thread
(`tile-assign-layouts` asks for it), each warp writes whole rows:

    bar.sync                                  ; earlier readers of the scratch are done
    st.shared.b32   [swizzled (row, 2t)], pair         (per register pair)
    bar.sync
    ld.shared.v4.b32 {...}, [swizzled (row, 8c)]       (per 16-byte run)

The swizzle (16-byte units XOR-ed by the row, `SharedTile`) keeps both sides
free of bank conflicts. Where shared memory is short (a persistent matmul's
ring stays live through the epilogue, `passes/next_tile_copies.py`), the tile
goes through in row chunks, one after another through one buffer: chunks by
bits of the row number that every register of both layouts fixes, so that
which registers make a chunk is known at compile time (`Chunks`, `chunks_of`). Without a dot the same path serves any 2-D tile of 16-
or 32-bit elements; other conversions go element by element (`Translator.exchange`).

`op_tile_local_load` reads a ring slot into registers the same way, where ops
other than dots read it; `op_tile_local_store` stages registers into one.

`op_tile_gather` (`tile.gather`, a permutation or selection inside a tile) goes
through shared memory too: every thread writes its source registers at their
linear positions, a barrier, then each reads the elements its index registers
name, one at a time. The buffer has 4 bytes of padding after every 128 and 4 more
after every 4096, so that a warp reading down a column of rows (patch gather) hits
32 different banks whatever the rows' power-of-two length: rows of 128 bytes fall
one bank apart, rows of 512 four apart with a fifth bank every 8 rows, and so on
(unpadded, every row of a column is on one bank: 32-way conflicts). The stores
are 4 bytes wide, which the padding keeps aligned; a warp storing along its rows
still covers all 32 banks.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, gpu, memref

from ...dialects.layout import element_bits as bits
from ...dialects.layout import encoding_of
from ...frontend.errors import TileError
from ..common.ir_builders import to_index
from ..common.lowerings import lowering
from ...dialects.layout import MAX_SHARED
from .distributed_async_copy import SharedTile, shared_writes_done, slot_coords
from .distributed_layout import MmaDistribution, row_major_strides
from .distributed_mma_reduce import only_reduced_in_place
from ...passes.tile_fuse import read_in_place
from .first_copies import guarded, guards, linear
from .held_registers import defer, held_at
from .register_vectors import elements, from_elements, i32, linear_index, load_run, splat, store_run
from .static_registers import constant_offset_groups, static_values, thread_coords


def _run(dist, unit: int) -> int:
    """Registers per vector access along the last dim: consecutive elements a thread
    holds in consecutive registers, at most a 16-byte unit, a power of two."""
    if isinstance(dist, MmaDistribution):
        w = dist.vector_width
    elif dist.layout.order[0] == dist.rank - 1:
        w = 1 << (max(min(dist.vector_width, unit), 1).bit_length() - 1)
        while w > 1 and dist.layout.size_per_thread[-1] % w:
            w //= 2
    else:
        w = 1
    return min(w, unit)


def _accesses(self, dist, tile: SharedTile, chunk=None):
    """(first register, width, element index in the tile's buffer) of each access; with
    `chunk` ((`Chunks`, number)), of the registers in that chunk, at their place in it."""
    n = dist.num_registers
    coords = list(self.coords(dist))
    w = _run(dist, tile.unit)
    picked = range(0, n, w)
    if chunk is not None and chunk[0].count > 1:
        split, number = chunk
        held = thread_coords(dist, self.threads)[split.axis][0]
        picked = [r for r in picked if split.of(int(held[r])) == number]
        coords[split.axis] = split.within(coords[split.axis])
    rows, cols = slot_coords([elements(c, n) for c in coords], n)
    return [(r, w, to_index(tile.offset(rows[r], cols[r]))) for r in picked]


def stage(self, value, tile: SharedTile, chunk=None):
    """Every register of a 2-D tile into the shared tile (swizzled); vector stores along rows
    where possible. With `chunk` (a `Chunks` and a chunk number), only that chunk's."""
    dist = self.dist(value)
    vals = elements(self.value(value), dist.num_registers)
    runs = _accesses(self, dist, tile, chunk)
    for (r, w, at), f in zip(runs, _first_copies(self, dist, [r for r, _, _ in runs])):
        guarded(f, lambda r=r, w=w, at=at: store_run(tile.buf, vals, r, w, at, tile.elem))


def _first_copies(self, dist, registers: list[int]) -> list:
    """Per register listed, the guard that lets one copy of its element write (`first_copies.py`)."""
    return guards(self, linear(thread_coords(dist, self.threads), dist.shape)[:, registers])


def stage_transposed(self, value, tile: SharedTile):
    """Every register of a 2-D R x C tile into the C x R shared tile `tile` (swizzled) at its
    transposed place, one element at a time (a float8 wgmma's N-major B, read K-major)."""
    dist = self.dist(value)
    n = dist.num_registers
    vals = elements(self.value(value), n)
    rows, cols = slot_coords([elements(c, n) for c in self.coords(dist)], n)
    for r, f in zip(range(n), _first_copies(self, dist, list(range(n)))):
        guarded(f, lambda r=r: memref.StoreOp(vals[r], tile.buf, [to_index(tile.offset(cols[r], rows[r]))]))


def unstage(self, out: list, dist, tile: SharedTile, chunk=None):
    """The inverse of `stage`: a 2-D tile's registers in layout `dist` (with `chunk`, that
    chunk's) read from the shared tile into `out`, with vector loads along rows where possible."""
    for r, w, at in _accesses(self, dist, tile, chunk):
        out[r : r + w] = load_run(tile.buf, w, at, tile.elem)


@lowering("tile.local_load", target="gpu")
def op_tile_local_load(self, op):
    """A ring slot (`tile-pipeline`). Where only dots read it: no code, the slot itself, which
    `dot` reads with `ldmatrix` or wgmma descriptors. Where other ops read it (a quantized
    weight to decode): the tile in registers, in its layout, read here with vector loads
    along its rows (`ld.shared`); the slot holds it in the tile's own orientation."""
    tile = self.map[op.operands[0]].slot(self.value(op.operands[1]))
    tile = dataclasses.replace(tile, transposed="transposed" in op.attributes)
    if all(u.owner.name == "tile.dot" or u.owner.name == "tile.trans" and read_in_place(u.owner.results[0])
           for u in op.results[0].uses):  # (read by dots in place; a float8 B through its transpose: fp8_operands.py)
        self.map[op.results[0]] = tile
        return
    if tile.transposed:
        raise TileError("internal: a transposed ring slot read into registers")
    dist = self.dist(op.results[0])
    out = [None] * dist.num_registers
    unstage(self, out, dist, tile)
    self.map[op.results[0]] = from_elements(out, tile.elem)


@lowering("tile.local_store", target="gpu")
def op_tile_local_store(self, op):
    """A tile in registers into a ring slot (`tile-pipeline`'s staging of a decoded dot
    operand), then a barrier (after the async-proxy fence, for wgmma) before the dot reads
    it. No barrier before: the dots that last read this slot were waited for before the
    barrier at the top of this iteration (two slots) or after the previous iteration's
    stores (three; `tile-pipeline`'s `_staging_slots`)."""
    value, ring, slot = op.operands
    stage(self, value, self.map[ring].slot(self.value(slot)))
    shared_writes_done(self)


def _fits(t: ir.RankedTensorType) -> bool:
    return t.rank == 2 and bits(t.element_type) in (16, 32) and t.shape[1] * bits(t.element_type) >= 128


@dataclass(frozen=True)
class Chunks:
    """A tile in `count` chunks along `axis` (rows: 0) by `log2(count)` bits of the coordinate
    from `bit` up, chosen so that in each layout every register holds elements of one chunk
    in every thread: a chunk is then a compile-time set of registers, staged (and read back)
    on its own. `within` maps a coordinate to its place in the chunk's buffer (those bits
    taken out)."""

    count: int
    bit: int
    axis: int = 0

    def of(self, coord: int) -> int:
        return (coord >> self.bit) % self.count

    def within(self, coord):
        n = ir.VectorType(coord.type).shape[0]
        low = arith.andi(coord, splat(i32((1 << self.bit) - 1), n))
        high = arith.shrui(coord, splat(i32(self.bit + self.count.bit_length() - 1), n))
        return arith.ori(low, arith.shli(high, splat(i32(self.bit), n)))


def chunks_of(self, dists, extent: int, fit: int, axis: int = 0, contiguous: bool = False) -> Chunks | None:
    """The fewest chunks along `axis` of at most `fit` rows (or columns) that split the
    layouts' registers (see `Chunks`), or None if no bits of the coordinate do;
    `contiguous`: chunks of consecutive rows (or columns), by the top bits."""
    count = 1
    while extent // count > fit:
        count *= 2
    if count > extent:
        return None
    held = [thread_coords(d, self.threads)[axis] for d in dists]
    top = extent.bit_length() - count.bit_length()
    for bit in [top] if contiguous else range(top + 1):
        if all(((c >> bit) % count == (c[:1] >> bit) % count).all() for c in held):
            return Chunks(count, bit, axis)
    return None


def _slot_read(self, op):
    """A layout change of a ring slot's tile (`tile.local_load`) in the same block: the slot
    read again, in the new layout (a float8 operand that wgmma takes from registers), instead
    of the registers through more shared memory; else None."""
    src = op.operands[0]
    load = None if isinstance(src.owner, ir.Block) else src.owner
    if (load is None or load.name != "tile.local_load" or "transposed" in load.attributes
            or load.operation.block != op.operation.block):
        return None
    tile = self.map[load.operands[0]].slot(self.value(load.operands[1]))
    dist = self.dist(op.results[0])
    out = [None] * dist.num_registers
    unstage(self, out, dist, tile)
    return from_elements(out, tile.elem)


@lowering("tile.convert_layout", target="gpu")
def op_tile_convert_layout(self, op):
    src = op.operands[0]
    read = _slot_read(self, op)
    if read is not None:
        self.map[op.results[0]] = read
        return
    if self.rematerializable(src) or not _fits(ir.RankedTensorType(src.type)):
        return self.remat_own(op)
    if only_reduced_in_place(self, op):  # (made only if something else asks for it)
        return defer(self, op.results[0], lambda: _through_shared(self, op))
    self.map[op.results[0]] = _through_shared(self, op)


def _through_shared(self, op):
    """The converted tile's registers, through a swizzled shared tile."""
    src = op.operands[0]
    t = ir.RankedTensorType(src.type)
    rows, cols = t.shape
    src_dist, dst_dist = self.dist(src), self.dist(op.results[0])
    # Shared memory above the buffers that stay live (a ring the next tile's copies fill):
    # the tile in as few row chunks as fit, one after another through the same buffer.
    free = MAX_SHARED - -(-self.scratch_base // 1024) * 1024
    chunks = chunks_of(self, (src_dist, dst_dist), rows, free // (cols * bits(t.element_type) // 8))
    if chunks is None:
        raise TileError(f"tile too large: converting a {rows}x{cols} tile between layouts needs more shared memory "
                        f"than the {free} bytes left: use smaller tiles or fewer stages")
    tile = SharedTile(self.scratch(t.element_type, rows // chunks.count * cols, align=1024), i32(0),
                      rows // chunks.count, cols, t.element_type)
    out = [None] * dst_dist.num_registers
    for c in range(chunks.count):
        gpu.barrier()
        stage(self, src, tile, (chunks, c))
        gpu.barrier()
        unstage(self, out, dst_dist, tile, (chunks, c))
    return from_elements(out, t.element_type)


def _padding(elem) -> tuple[int, int]:
    """(log2 of the elements per 128 bytes, elements per 4 bytes, at least one): the gather
    buffer's period and pad. Linear element i sits at
        i + ((i >> shift) + (i >> (shift + 5))) * pad
    a bank's 4 bytes of padding after every 128 bytes and after every 4096 (module doc);
    `_padded` emits that, `_address_groups` evaluates it at compile time."""
    return (1024 // bits(elem)).bit_length() - 1, max(32 // bits(elem), 1)


def _padded(i, elem):
    """The padded position of linear element i (an i32 value), as `_padding` gives it."""
    shift, pad = _padding(elem)
    rows = arith.addi(arith.shrui(i, i32(shift)), arith.shrui(i, i32(shift + 5)))
    return arith.addi(i, arith.muli(rows, i32(pad)))


def _padded_size(size: int, elem) -> int:
    shift, pad = _padding(elem)
    return size + ((size >> shift) + (size >> (shift + 5))) * pad


def _picked_coords(self, op, dist, sdist, axis: int) -> list:
    """Per dim, the source coordinates of the elements the result registers pick: the
    index (i32, modulo the source's extent, so that an index outside the tile reads some
    element of it, as on the CPU, never other shared memory) along `axis`, the register's
    own coordinate along the others."""
    n = dist.num_registers
    picked = self.value(op.operands[1])
    i32_vec = ir.VectorType.get([n], ir.IntegerType.get_signless(32))
    if ir.VectorType(picked.type).element_type != i32_vec.element_type:
        picked = arith.trunci(i32_vec, picked)
    picked = arith.remui(picked, splat(i32(sdist.shape[axis]), n))
    return [picked if d == axis else c for d, c in enumerate(self.coords(dist))]


def _gathered_positions(self, op, dist, sdist, axis: int):
    """Per result register, the linear position in the source of the element it picks."""
    return linear_index(_picked_coords(self, op, dist, sdist, axis), row_major_strides(sdist.shape), dist.num_registers)


def _held_gather(self, op, dist, sdist, axis: int):
    """The gather's result from registers each thread already holds of the source (a column
    slice of an accumulator in its own tensor-core layout: `passes/column_halves.py`),
    where the index is known at compile time and every thread holds what it picks in the
    same register; else None."""
    want = thread_coords(dist, self.threads)
    picked = static_values(op.operands[1], want)
    if picked is None:
        return None
    want[axis] = picked % (1 << 32) % sdist.shape[axis]  # as _picked_coords' remui
    return held_at(self, op.operands[0], _picked_coords(self, op, dist, sdist, axis), dist.num_registers, want)


@lowering("tile.gather", target="gpu")
def op_tile_gather(self, op):
    src, index = op.operands
    axis = ir.IntegerAttr(op.attributes["axis"]).value
    elem = ir.RankedTensorType(src.type).element_type
    if encoding_of(index.type) != encoding_of(op.results[0].type):  # tile-assign-layouts makes them one
        raise TileError("gather's index and result must share a layout: a thread reads what its index registers name")
    dist, sdist = self.dist(op.results[0]), self.dist(src)
    held = _held_gather(self, op, dist, sdist, axis)
    if held is not None:
        self.map[op.results[0]] = held
        return
    n, sn = dist.num_registers, sdist.num_registers
    if bits(elem) not in (8, 16, 32, 64) or isinstance(elem, ir.IntegerType) and elem.width == 1:
        targets = _gathered_positions(self, op, dist, sdist, axis)
        self.map[op.results[0]] = self.exchange(self.value(src), sdist, self.coords(sdist), elem, targets, n)
        return
    _, pad = _padding(elem)
    buf = self.scratch(elem, _padded_size(math.prod(sdist.shape), elem), align=16)
    # Every source register at its (padded) linear position, runs along rows as 4-byte stores.
    lin = elements(linear_index(self.coords(sdist), row_major_strides(sdist.shape), sn), sn)
    vals = elements(self.value(src), sn)
    # A run of up to 16 bytes lies in one 128-byte row: one padded address, 4-byte stores from it.
    w = _run(sdist, 128 // bits(elem)) if not isinstance(sdist, MmaDistribution) else 1
    first = _first_copies(self, sdist, list(range(0, sn, w)))
    gpu.barrier()
    for r, f in zip(range(0, sn, w), first):
        at = _padded(lin[r], elem)
        for j in range(0, w, pad):
            guarded(f, lambda r=r, j=j, at=at: store_run(buf, vals, r + j, min(w, pad),
                                                         to_index(arith.addi(at, i32(j)) if j else at), elem))
    gpu.barrier()
    targets = elements(_gathered_positions(self, op, dist, sdist, axis), n)
    at = [None] * n
    for r, (b, offset) in enumerate(_address_groups(self, index, dist, sdist, axis, elem)):
        at[r] = _padded(targets[r], elem) if b == r else arith.addi(at[b], i32(offset))
    self.map[op.results[0]] = from_elements([memref.LoadOp(buf, [to_index(a)]).result for a in at], elem)


def _address_groups(self, index, dist, sdist, axis: int, elem) -> list[tuple[int, int]]:
    """Per result register, (b, offset): its padded position in the gather buffer is register
    b's plus `offset` in every thread, where the index is known at compile time
    (static_registers); otherwise (r, 0), each computed on its own."""
    # (Tensor-core layouts place registers by their own rules, which thread_coords does not model.)
    coords = thread_coords(dist, self.threads) if not isinstance(dist, MmaDistribution) else None
    picked = coords and static_values(index, coords)
    if picked is None:
        return [(r, 0) for r in range(dist.num_registers)]
    coords[axis] = picked % (1 << 32) % sdist.shape[axis]  # as _gathered_positions' remui
    lin = sum(c * s for c, s in zip(coords, row_major_strides(sdist.shape)))
    shift, pad = _padding(elem)
    return constant_offset_groups(lin + ((lin >> shift) + (lin >> (shift + 5))) * pad)
