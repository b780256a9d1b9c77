"""Shared-memory rings and async copies (methods of the GPU `Translator`), the
lowering of what `tile-pipeline` makes: `tile.local_alloc`, `tile.async_copy`,
`tile.async_commit`, `tile.async_wait`, `tile.local_load`.

A ring is `stages` row-major tiles in the dynamic shared memory, placed after
everything the kernel used before it and kept for the rest of the kernel
(later exchanges go above it, see `Translator.scratch`). Each tile is
XOR-swizzled in 16-byte units (`SharedTile`), so that the 16-byte `cp.async`
writes of a quarter warp and the eight row reads of each `ldmatrix` 8x8 matrix
hit eight different bank groups.

- `tile.async_copy`: each thread copies its own registers' elements of the tile
  (the offsets' layout): runs of contiguous, aligned elements that axis info
  proves are one `nvgpu.device_async_copy` (`cp.async`, 16 bytes with
  `.cg`: L1 bypassed), its source size 0 where the run's mask is false (the
  hardware fills zeros); anything else is a guarded scalar load and shared
  store, visible after the next wait's barrier.
- `tile.async_commit`: `nvgpu.device_async_create_group` (`cp.async.commit_group`).
- `tile.async_wait`: `cp.async.wait_group N`, in a kernel with wgmma a
  `fence.proxy.async` (its operands are read through the async proxy), then a
  barrier (upstream's
  `nvgpu.device_async_wait` wants a token of the group, which does not
  dominate a wait in the next loop iteration or after the loop).
- `tile.local_load`: see `distributed_convert.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mlir import ir
from mlir.dialects import arith, gpu, memref, nvgpu, nvvm

from ...dialects.layout import element_bits as bits
from ...dialects.layout import shared_panel
from ...dialects.pipeline_ops import PREFETCH_GUARD
from ..common.ir_builders import const_index, flat_view, to_index
from ..common.predicated_access import ByteAddress, Hints, load_one
from ...passes.walk import in_loop
from ..common.lowerings import lowering
from .distributed_memory import _base_aligned, run_width
from .first_copies import guarded, guards, issue_copy, linear
from .register_vectors import elements, from_elements, i32
from .static_registers import thread_coords
from .tail_masked_copies import at_run_starts, tail_copy, tail_mask


@dataclass
class SharedTile:
    """A rows x cols tile at element `base` of the 1-D shared memref `buf`.

    Rows wider than 128 bytes are cut into panels of 128 bytes, stored one
    after the other (all rows of panel 0, then of panel 1, ...), the layout
    wgmma reads. Within a panel the 16-byte units of a row are XOR-swizzled by
    the row: unit' = unit ^ ((row / per_phase) % max_phase), where a 128-byte
    line holds per_phase rows (Triton's scheme, and the hardware's 128-, 64- and
    32-byte swizzles when the tile starts on a 1024-byte boundary)."""

    buf: ir.Value
    base: ir.Value  # i32, in elements
    rows: int
    cols: int
    elem: ir.Type
    transposed: bool = False  # holds the transpose of the tile it stands for (`tile.local_load`)

    @property
    def unit(self) -> int:  # elements per 16 bytes
        return 128 // bits(self.elem)

    @property
    def panel(self) -> int:
        """Columns per panel."""
        return shared_panel(self.rows, self.cols, bits(self.elem))[0]

    @property
    def swizzle_bytes(self) -> int:
        """The hardware swizzle of the panels: 128, 64 or 32 bytes (0: none)."""
        return shared_panel(self.rows, self.cols, bits(self.elem))[1]

    @property
    def swizzled(self) -> bool:
        return self.swizzle_bytes > 0

    @property
    def phases(self) -> tuple[int, int]:
        units = self.panel // self.unit
        return max(1, 8 // units), min(units, 8)  # per_phase, max_phase (their product is 8)

    def phase(self, row, ops=None):
        """The XOR phase of a row (i32); rows 8 apart share it. `ops`: `_Arith` (IR) or `_Numpy`."""
        k = ops or _Arith
        per, most = self.phases
        return k.andi(k.shrui(row, k.const(per.bit_length() - 1)), k.const(most - 1))

    def offset(self, row, col, phase=None, ops=None):
        """Element index in `buf` of (row, col), both i32; `phase` may be given (see `phase`).
        With `ops=_Numpy`, of integer arrays, from 0 (not `base`): `run_offsets`' static twin."""
        k = ops or _Arith
        lin = k.muli(row, k.const(self.panel))
        lin = k.addi(self.base, lin) if k is _Arith else lin
        if self.panel < self.cols:
            shift = self.panel.bit_length() - 1
            lin = k.addi(lin, k.muli(k.shrui(col, k.const(shift)), k.const(self.rows * self.panel)))
            col = k.andi(col, k.const(self.panel - 1))
        if not self.swizzled:
            return k.addi(lin, col)
        shift = self.unit.bit_length() - 1
        unit = k.xori(k.shrui(col, k.const(shift)), self.phase(row, k) if phase is None else phase)
        swz = k.ori(k.shli(unit, k.const(shift)), k.andi(col, k.const(self.unit - 1)))
        return k.addi(lin, swz)

    def run_offsets(self, rows: list, cols: list, static: tuple) -> list:
        """`offset` of each run (rows[i], cols[i]: i32), given its static coordinates (`static`:
        rows and cols, [threads, runs] arrays): where a run lies a constant distance from the
        first in every thread (rows 8 apart keep the swizzle's phase), that constant added to
        the first's. Then the runs of a slot share one address register and go at immediate
        offsets (`[%r187+0x400]`), as Triton's do; each computed on its own cost three integer
        instructions a 16-byte copy a K step, in tutorial 03's loop (ncu: a third more
        instructions than Triton's, and its dispatch stalls)."""
        first = self.offset(rows[0], cols[0])
        at = self.offset(static[0], static[1], ops=_Numpy)
        out = [first]
        for i in range(1, len(rows)):
            delta = at[:, i] - at[:, 0]
            uniform = (delta == delta[0]).all()
            out.append(arith.addi(first, i32(int(delta[0]))) if uniform else self.offset(rows[i], cols[i]))
        return out


class _Arith:
    """The i32 arithmetic of `SharedTile.offset` in the IR."""
    addi, muli, andi, ori, xori, shrui, shli = (arith.addi, arith.muli, arith.andi, arith.ori, arith.xori,
                                                 arith.shrui, arith.shli)
    const = staticmethod(i32)


class _Numpy:
    """The same on integer arrays (static coordinates)."""
    addi, muli, andi, ori, xori = np.add, np.multiply, np.bitwise_and, np.bitwise_or, np.bitwise_xor
    shrui, shli = np.right_shift, np.left_shift
    const = staticmethod(int)


@dataclass
class Ring:
    buf: ir.Value
    stages: int
    rows: int
    cols: int
    elem: ir.Type
    byte_base: int  # where `buf` starts in the dynamic shared memory

    @property
    def slot_bytes(self) -> int:
        return self.rows * self.cols * bits(self.elem) // 8

    def slot(self, s) -> SharedTile:
        return SharedTile(self.buf, arith.muli(s, i32(self.rows * self.cols)), self.rows, self.cols, self.elem)


def shared_buffer(self, elem, count: int, align: int = 1024):
    """`count` elements of shared memory reserved until freed (`tile.local_dealloc`): above
    the buffers still live (a second loop's rings where the first loop's were), after a
    barrier if scratch there was used since (a thread may still be reading it); later
    scratch goes above it. 1024-byte aligned, the period of the 128-byte swizzle (the
    shared memory itself is aligned so, see `align-dynamic-shared`). Returns the view and
    its byte offset."""
    if self.scratch_bytes > self.scratch_base or _in_loop():  # (in a loop: by the iteration before, after this)
        gpu.barrier()
    start = -(-self.scratch_base // align) * align  # where `scratch` puts it
    view = self.scratch(elem, count, align)
    self.scratch_base = self.live_buffers[start] = start + count * bits(elem) // 8
    return view, start


_LOOPS = ("scf.for", "scf.while")


def _in_loop() -> bool:
    """Whether the insertion point is in a loop's body (a persistent matmul's ring, allocated
    per tile: the previous tile's epilogue staged its output where the ring's copies now write)."""
    owner = ir.InsertionPoint.current.block.owner
    return owner.name in _LOOPS or in_loop(owner, _LOOPS)


@lowering("tile.local_alloc", target="gpu")
def op_tile_local_alloc(self, op):
    t = ir.MemRefType(op.results[0].type)
    stages, rows, cols = t.shape
    buf, byte_base = shared_buffer(self, t.element_type, stages * rows * cols)
    self.map[op.results[0]] = Ring(buf, stages, rows, cols, t.element_type, byte_base)


@lowering("tile.local_dealloc", target="gpu")
def op_tile_local_dealloc(self, op):
    """Scratch may use the ring's memory from here on: above the buffers still live."""
    self.live_buffers.pop(self.map[op.operands[0]].byte_base, None)
    gpu.barrier()  # every thread is done with the ring (the dots' reads included)
    self.scratch_base = max(self.live_buffers.values(), default=0)


def chunk_width(self, dist, offsets, mask, elem, aligned: bool) -> int:
    """Elements per copy when the tile's copies are cut into chunks of their own instead of
    following the registers' layout (`_chunked_copy`): `run_width` unbounded by the layout
    (up to 16 bytes and a divisor of the row); 1 if the offsets or mask are not recomputable
    at other coordinates."""
    if not all(self.rematerializable(v) for v in (offsets, mask)):
        return 1
    width = run_width(self, dist, offsets, mask, elem, aligned, limit=dist.shape[-1])
    while dist.shape[-1] % width:
        width //= 2
    return width


def _chunked_copy(self, tile, flat, dist, offsets, mask, elem, v: int) -> None:
    """The tile copied in row-major chunks of v elements, chunk c by thread c mod T (T
    threads), whatever the layout its readers hold it in: a slot is read only after the
    group's wait and barrier, so which thread copies what is free. Where the layout gave
    each thread runs narrower than the chunks: fewer, wider `cp.async` (the INT4 example's
    64 x 128 bytes of weights: 16-byte copies, not 4-byte ones), or any at all (its 1 x 128
    bf16 rows of scales on 256 threads, 2 bytes a thread, had gone through registers: a
    global load the loop waited for every iteration)."""
    chunks = math.prod(dist.shape) // v
    per_row = dist.shape[-1] // v
    for first in range(0, chunks, self.threads):
        c = arith.addi(self.tid, i32(first)) if first else self.tid
        # the last round: threads past the end copy nothing (a copy of a chunk again, the same bytes
        # to the same place, is a write-write race for racecheck)
        inside = arith.cmpi(arith.CmpIPredicate.ult, c, i32(chunks)) if first + self.threads > chunks else None
        row, col = arith.divui(c, i32(per_row)), arith.muli(arith.remui(c, i32(per_row)), i32(v))
        coords = [from_elements([x], ir.IntegerType.get_signless(32)) for x in ([row, col] if dist.rank == 2 else [col])]
        off, ok = (elements(self.eval_at(t, coords, 1), 1)[0] for t in (offsets, mask))
        size = arith.select(ok, const_index(v), const_index(0))
        dst = to_index(tile.offset(row if dist.rank == 2 else i32(0), col))
        copy = lambda dst=dst, off=off, size=size: nvgpu.DeviceAsyncCopyOp(  # noqa: E731
            tile.buf, [dst], flat, [to_index(off)], ir.IntegerAttr.get(ir.IndexType.get(), v), srcElements=size,
            bypassL1=ir.UnitAttr.get() if v * bits(elem) == 128 else None).result
        issue_copy(self, inside, copy)


@lowering("tile.async_copy", target="gpu")
def op_tile_async_copy(self, op):
    ring_v, slot, base, offsets, mask = op.operands
    ring = self.map[ring_v]
    elem = ring.elem
    tile = ring.slot(self.value(slot))
    flat = flat_view(self.value(base))
    dist = self.dist(offsets)
    n = dist.num_registers
    aligned = _base_aligned(self, base)
    w = min(run_width(self, dist, offsets, mask, elem, aligned), tile.unit)
    if w < tile.unit:  # narrower than 16 bytes in the readers' layout: wider chunks of its own, if proven
        v = chunk_width(self, dist, offsets, mask, elem, aligned)  # (16 bytes at most: a slot's unit)
        if v > w and v * bits(elem) >= 32:
            return _chunked_copy(self, tile, flat, dist, offsets, mask, elem, v)
        # (runs no longer than a thread holds: a 16-byte copy from each thread's 2 elements wrote
        # over its neighbours' and past the slot's end, into the next buffer)
        tail = tail_mask(self, min(run_width(self, dist, offsets, None, elem, aligned), tile.unit), mask)
        if tail is not None and tail.width > w and tail.width * bits(elem) >= 32:  # runs cut by a bound
            return tail_copy(self, tile, flat, dist, offsets, tail, slot_coords)
    coords = [elements(c, n) for c in self.coords(dist)]
    rows, cols = slot_coords(coords, n)
    if w * bits(elem) < 32:  # narrower than cp.async's 4 bytes
        return _element_copy(self, tile, flat, dist, offsets, mask, elem, coords)
    starts = list(range(0, n, w))
    own, live = _pipeline_guard(mask) if self.wgmma_dots == 1 else (mask, None)
    offs, masks = at_run_starts(self, dist, starts, coords, [offsets, own])
    # A layout wider than the tile: only one copy of each run writes it (first_copies.py).
    static = thread_coords(dist, self.threads)
    first = guards(self, linear(static, dist.shape)[:, starts])
    if live is not None:  # a prefetch past the loop's end: not issued (nothing reads its slot)
        live = self.value(live)
        first = [live if f is None else arith.andi(f, live) for f in first]
    dsts = tile.run_offsets([rows[r] for r in starts], [cols[r] for r in starts],
                            _slot_static(static, starts))
    for r, f, dst in zip(starts, first, dsts):  # cp.async moves 4, 8 or 16 bytes
        dst = to_index(dst)
        size = arith.select(masks[r], const_index(w), const_index(0))
        issue_copy(self, f, lambda r=r, dst=dst, size=size: nvgpu.DeviceAsyncCopyOp(
            tile.buf, [dst], flat, [to_index(offs[r])], ir.IntegerAttr.get(ir.IndexType.get(), w), srcElements=size,
            bypassL1=ir.UnitAttr.get() if w * bits(elem) == 128 else None).result)


def _pipeline_guard(mask):
    """(the load's own mask, the scalar `live`) of a prefetch's mask `m & splat(live)` that
    tile-pipeline made (marked PREFETCH_GUARD: live is false for an iteration past the loop's
    end), else (mask, None). The copies are then issued under one branch on `live`, each
    zero-filling by its own mask alone: in tutorial 03's K loop (128x256x64, 8 warps) a second
    select of each size and its compare went, 138 -> 113 SASS instructions (Triton 124) and 242
    -> 218 registers; tutorial 09's loops 152 -> 127 and 222 -> 183. Only in a kernel of one
    dot: in the attention backward's (three and four dots) the branch splits the loop's block,
    and its loops grew (dQ 420 -> 458)."""
    op = getattr(mask.owner, "operation", mask.owner)
    if isinstance(op, ir.Operation) and op.name == "arith.andi" and PREFETCH_GUARD in op.attributes:
        return op.operands[0], getattr(op.operands[1].owner, "operation", op.operands[1].owner).operands[0]
    return mask, None


def _element_copy(self, tile, flat, dist, offsets, mask, elem, coords) -> None:
    """The tile copied element by element (strides that axis info cannot prove 4-byte
    aligned: a matmul with an odd K): a predicated `ld.global` and an `st.shared` each,
    straight-line code as Triton's (a branch around each load cut the loop into hundreds
    of blocks, and tutorial 03's kernel spilled); a thread's run of consecutive offsets
    shares one 64-bit address, its other elements at immediate offsets from it."""
    n = dist.num_registers
    rows, cols = slot_coords(coords, n)
    run = min(dist.vector_width, self.axis(offsets).contiguity, tile.unit) if dist.layout.order[0] == dist.rank - 1 else 1
    run = 1 << (max(run, 1).bit_length() - 1)
    (offs,) = at_run_starts(self, dist, list(range(0, n, run)), coords, [offsets])
    same = run if self.axis(mask).constancy % run == 0 else 1  # (a mask along K only: one a run of B's rows)
    (masks,) = at_run_starts(self, dist, list(range(0, n, same)), coords, [mask])
    address = ByteAddress(flat, elem)
    zero = arith.ConstantOp(elem, 0 if isinstance(elem, ir.IntegerType) else 0.0).result
    copies = guards(self, linear(thread_coords(dist, self.threads), dist.shape))  # (a tile smaller than the threads)
    for first in range(0, n, run):  # (a run within a 16-byte unit, which the swizzle keeps whole)
        at, dst = address(offs[first]), tile.offset(rows[first], cols[first])
        for r in range(first, first + run):
            got = load_one(address.shifted(at, r - first) if r > first else at, masks[r - r % same], zero, elem, Hints())
            guarded(copies[r], lambda got=got, r=r, first=first, dst=dst: memref.StoreOp(
                got, tile.buf, [to_index(arith.addi(dst, i32(r - first)) if r > first else dst)]))


def _slot_static(static: list, starts: list) -> tuple:
    """`slot_coords` of static coordinates (`thread_coords`' [threads, registers] arrays), at `starts`."""
    if len(static) == 2:
        return static[0][:, starts], static[1][:, starts]
    return np.zeros_like(static[0][:, starts]), static[0][:, starts]


def slot_coords(coords: list, n: int) -> tuple:
    """(rows, cols) in a ring slot of each of n registers, from a tile's per-dim coordinates
    (elements): a 1-D tile is row 0 of its slot."""
    return (coords[0], coords[1]) if len(coords) == 2 else ([i32(0)] * n, coords[0])


@lowering("tile.async_commit", target="gpu")
def op_tile_async_commit(self, op):
    if self.async_tokens:
        nvgpu.DeviceAsyncCreateGroupOp(self.async_tokens)
    else:
        nvvm.CpAsyncCommitGroupOp()
    self.async_tokens = []


@lowering("tile.async_wait", target="gpu")
def op_tile_async_wait(self, op):
    nvvm.CpAsyncWaitGroupOp(ir.IntegerAttr(op.attributes["pending"]).value)
    shared_writes_done(self)


def shared_writes_done(self):
    """A barrier after this thread's shared-memory writes; first a proxy fence if
    wgmma (the async proxy) is to read them."""
    if self.has_wgmma:
        nvvm.FenceProxyOp(nvvm.ProxyKind.async_shared, space=nvvm.SharedSpace.shared_cta)
    gpu.barrier()
