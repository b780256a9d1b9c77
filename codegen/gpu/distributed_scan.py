"""`tile.scan` and `tile.reduce_region` of a distributed tile (methods of the GPU
`Translator`): Triton's `associative_scan` and `reduce` by a combine region, whose ops the
translator emits on scalars wherever two groups of values combine (`_combine`).

Along the axis, a thread holds runs ("chunks") of `size_per_thread` consecutive elements,
one per repeat of the layout over the tile; the lanes and then the warps along the axis
hold the runs that follow. A scan, as Triton's, in the order of the elements (the reverse
order with `reverse`):

1. each thread scans its chunks in its registers;
2. the chunks' totals are scanned across the lanes along the axis (`shfl.up`, `shfl.down`
   reversed: a Hillis-Steele scan over log2(lanes) steps), each lane then takes the total of
   the lanes before it (one more shuffle), and the warp's total (`shfl.idx` from its last lane);
3. warps along the axis meet in shared memory: each writes its total, each reads those of the
   warps before it;
4. a chunk's elements combine with what precedes the chunk: the earlier repeats, the
   earlier warps, the earlier lanes (each absent where nothing precedes: a combine
   function has no identity, so its result is selected where it applies).

A reduction combines a thread's registers along the axis, then the lanes by a `shfl.xor`
butterfly, and the warps through shared memory, read back in the result's layout (as
`tile.reduce`, `distributed_reduce.py`). Values narrower than 32 bits are shuffled as i32,
64-bit ones as two; an i1 goes to shared memory as a byte.
"""

from __future__ import annotations

import math

import numpy as np
from mlir import ir
from mlir.dialects import arith, gpu, memref

from ...dialects.combine_ops import combine_block
from ...dialects.layout import Blocked
from ...frontend.errors import TileError
from ...dialects.layout import element_bits as _bits
from ..common.ir_builders import const_index, to_index
from ..common.lowerings import lowering
from .distributed_layout import Distribution, row_major_strides
from .distributed_reduce import _effective
from .first_copies import guarded, guards, linear
from .register_vectors import elements, from_elements, i32
from .static_registers import thread_coords


def _int(bits: int) -> ir.IntegerType:
    return ir.IntegerType.get_signless(bits)


def _combine(self, op, accs: list, xs: list) -> list:
    """The combine region on these scalars: its ops emitted by the translator."""
    block = combine_block(op)
    for a, v in zip(block.arguments, [*accs, *xs]):
        self.map[a] = v
    ops = list(block.operations)
    for inner in ops[:-1]:
        self.op(inner.operation)
    return [self.value(v) for v in ops[-1].operands]


def _join(self, op, a, b):
    """a's values then b's, each (values, present): present is True, False or an i1."""
    (va, fa), (vb, fb) = a, b
    if fa is False:
        return b
    if fb is False:
        return a
    vals = _combine(self, op, va, vb)
    if fa is not True:  # where a is absent: b alone
        vals = [arith.select(fa, x, y) for x, y in zip(vals, vb)]
    if fb is not True:  # where b is absent: a alone
        vals = [arith.select(fb, x, y) for x, y in zip(vals, va)]
    return vals, True if True in (fa, fb) else arith.ori(fa, fb)


def _shuffle(v, offset, mode):
    """gpu.shuffle of any scalar: 32-bit as it is, narrower widened to i32, 64-bit in halves."""
    ty = v.type
    is_int = isinstance(ty, ir.IntegerType)
    bits = ir.IntegerType(ty).width if is_int else ir.FloatType(ty).width
    shuffle = lambda x: gpu.ShuffleOp(x, offset, i32(32), mode).results[0]  # noqa: E731
    if bits == 32:
        return shuffle(v)
    x = v if is_int else arith.bitcast(_int(bits), v)
    if bits == 64:
        i64, thirty_two = _int(64), arith.ConstantOp(_int(64), 32).result
        lo = shuffle(arith.trunci(_int(32), x))
        hi = shuffle(arith.trunci(_int(32), arith.shrui(x, thirty_two)))
        x = arith.ori(arith.extui(i64, lo), arith.shli(arith.extui(i64, hi), thirty_two))
    else:
        x = arith.trunci(_int(bits), shuffle(arith.extui(_int(32), x)))
    return x if is_int else arith.bitcast(ty, x)


def _stored_type(elem):
    return _int(8) if isinstance(elem, ir.IntegerType) and elem.width == 1 else elem


def _store(v, buf, at):
    if isinstance(v.type, ir.IntegerType) and v.type.width == 1:  # (the LLVM lowering of memref cannot store i1)
        v = arith.extui(_int(8), v)
    memref.StoreOp(v, buf, [to_index(at)])


def _load(buf, at, elem):
    v = memref.LoadOp(buf, [to_index(at)]).result
    return arith.trunci(elem, v) if v.type != elem else v


def _distribution(self, values, what: str) -> Distribution:
    """The one blocked distribution of the values (the layout pass gives them one)."""
    dists = [self.dist(v) for v in values]
    if type(dists[0]) is not Distribution or not isinstance(dists[0].layout, Blocked) or any(d != dists[0] for d in dists):
        raise TileError(f"{what} of tiles in other than one blocked layout is not supported by the GPU codegen yet")
    return dists[0]


def _position(self, dist, axis: int, n: int, reverse: bool, of_lane: bool):
    """This thread's place among the n lanes (or warps) along the axis holding distinct elements,
    in the scan's order (i32): copies of a lane (or warp) take its place."""
    L = dist.layout
    shift, count = (dist.lane_shift(axis), L.threads_per_warp[axis]) if of_lane else (dist.warp_shift(axis), L.warps_per_cta[axis])
    with self.entry:
        v = arith.remui(arith.remui(arith.divui(self.lane if of_lane else self.warp, i32(shift)), i32(count)), i32(n))
        return arith.subi(i32(n - 1), v) if reverse else v


def _static_position(self, dist, axis: int, n: int, reverse: bool) -> np.ndarray:
    """`_position` of the warps, per thread, at compile time."""
    warp = np.arange(self.threads) // 32
    v = warp // dist.warp_shift(axis) % dist.layout.warps_per_cta[axis] % n
    return n - 1 - v if reverse else v


def _rows(dist, axis: int):
    """Registers by row (their index off the axis) and chunk along it: row -> chunk -> [(element, register)]."""
    spt = dist.layout.size_per_thread[axis]
    rows: dict = {}
    for r, j in enumerate(dist.register_indices):
        key = tuple(x for d, x in enumerate(j) if d != axis)
        rows.setdefault(key, {}).setdefault(j[axis] // spt, []).append((j[axis] % spt, r))
    return rows


def _row_index(self, dist, axis: int, r: int):
    """The row-major number of register r's row among the tile's rows: at run time and per thread."""
    kept = [d for d in range(dist.rank) if d != axis]
    shape = [dist.shape[d] for d in kept]
    coords = self.coords(dist)
    lin = i32(0)
    for d, s in zip(kept, row_major_strides(shape)):
        lin = arith.addi(lin, arith.muli(elements(coords[d], dist.num_registers)[r], i32(s)))
    held = thread_coords(dist, self.threads)
    lin_static = linear([held[d][:, r] for d in kept], shape) if kept else np.zeros(self.threads, dtype=int)
    return lin, lin_static, math.prod(shape)


def _buffers(self, elems: list, count: int) -> list:
    """One shared buffer of `count` elements per element type, all in one scratch view."""
    sizes = [-(-count * max(1, _bits(_stored_type(e))) // 8 // 8) * 8 for e in elems]
    raw = self.scratch(_int(8), sum(sizes), align=8)
    space = ir.Attribute.parse("#gpu.address_space<workgroup>")
    return [memref.ViewOp(ir.MemRefType.get([count], _stored_type(e), memory_space=space), raw, const_index(sum(sizes[:i])),
                          []).result for i, e in enumerate(elems)]


def _exchange(self, values: dict, slots: dict, static: dict, count: int, reads):
    """Each value list (by key) written at its slot (one copy writes), then `reads(load)` run with
    `load(at)`: the value lists written at `at`."""
    keys = list(values)
    flags = guards(self, np.stack([static[k] for k in keys], axis=1))
    elems = [v.type for v in values[keys[0]]]
    bufs = _buffers(self, elems, count)
    gpu.barrier()
    for k, f in zip(keys, flags):
        guarded(f, lambda k=k: [_store(v, buf, slots[k]) for v, buf in zip(values[k], bufs)])
    gpu.barrier()
    return reads(lambda at: [_load(buf, at, e) for buf, e in zip(bufs, elems)])


@lowering("tile.scan", target="gpu")
def op_tile_scan(self, op):
    inputs = list(op.operands)
    axis, reverse = ir.IntegerAttr(op.attributes["axis"]).value, ir.BoolAttr(op.attributes["reverse"]).value
    dist = _distribution(self, [*inputs, *op.results], "a scan")
    regs = [elements(self.value(v), dist.num_registers) for v in inputs]
    lanes, warps = _effective(dist, axis)
    rows = _rows(dist, axis)

    # 1. each chunk in the thread
    scanned, totals = {}, {}
    for key, chunks in rows.items():
        for k, held in chunks.items():
            acc, seq = None, []
            for _, r in sorted(held, reverse=reverse):
                x = [reg[r] for reg in regs]
                acc = x if acc is None else _combine(self, op, acc, x)
                seq.append((r, acc))
            scanned[key, k], totals[key, k] = seq, acc

    # 2. across the lanes: what the earlier lanes hold, and the warp's total
    before_lane = {ck: ([], False) for ck in totals}
    warp_total = dict(totals)
    if lanes > 1:
        stride, mode = dist.lane_shift(axis), gpu.ShuffleMode.DOWN if reverse else gpu.ShuffleMode.UP
        p = _position(self, dist, axis, lanes, reverse, of_lane=True)
        with self.entry:
            delta = arith.muli(arith.subi(i32(lanes - 1), p), i32(stride))
            last = (arith.subi if reverse else arith.addi)(self.lane, delta)  # the warp's last lane in scan order
            later = [arith.cmpi(arith.CmpIPredicate.uge, p, i32(s)) for s in range(1, lanes)]
        for ck, x in totals.items():
            step = 1
            while step < lanes:
                earlier = [_shuffle(v, i32(step * stride), mode) for v in x]
                x = [arith.select(later[step - 1], c, v) for c, v in zip(_combine(self, op, earlier, x), x)]
                step *= 2
            before_lane[ck] = ([_shuffle(v, i32(stride), mode) for v in x], later[0])
            warp_total[ck] = [_shuffle(v, last, gpu.ShuffleMode.IDX) for v in x]

    # 3. across the warps, through shared memory: what the earlier warps hold, and the chunk's total
    before_warp = {ck: ([], False) for ck in totals}
    chunk_total = warp_total
    if warps > 1:
        q = _position(self, dist, axis, warps, reverse, of_lane=False)
        q_static = _static_position(self, dist, axis, warps, reverse)
        chunks = max(k for key, k in totals) + 1
        slots, static, firsts = {}, {}, {}
        for key, k in totals:
            r = rows[key][k][0][1]
            lin, lin_static, count = _row_index(self, dist, axis, r)
            firsts[key, k] = arith.muli(arith.addi(i32(k * count), lin), i32(warps))
            slots[key, k] = arith.addi(firsts[key, k], q)
            static[key, k] = (k * count + lin_static) * warps + q_static
        got = _exchange(self, warp_total, slots, static, chunks * count * warps, lambda load: {
            ck: [load(arith.addi(first, i32(u))) for u in range(warps)] for ck, first in firsts.items()})
        chunk_total = {}
        for ck in totals:
            acc = [got[ck][0]]
            for u in range(1, warps):
                acc.append(_combine(self, op, acc[-1], got[ck][u]))
            chunk_total[ck] = acc[-1]
            picked = acc[0]
            for u in range(1, warps - 1):
                is_u = arith.cmpi(arith.CmpIPredicate.eq, q, i32(u + 1))
                picked = [arith.select(is_u, a, b) for a, b in zip(acc[u], picked)]
            before_warp[ck] = (picked, arith.cmpi(arith.CmpIPredicate.uge, q, i32(1)))

    # 4. each element after what precedes its chunk
    out = [[None] * dist.num_registers for _ in inputs]
    for key, chunks in rows.items():
        carried = ([], False)  # the earlier repeats' total
        for k in sorted(chunks, reverse=reverse):
            before = _join(self, op, _join(self, op, carried, before_warp[key, k]), before_lane[key, k])
            for r, vals in scanned[key, k]:
                for i, v in enumerate(_join(self, op, before, (vals, True))[0]):
                    out[i][r] = v
            if k != (min(chunks) if reverse else max(chunks)):  # (a later chunk follows)
                carried = _join(self, op, carried, (chunk_total[key, k], True))
    for i, result in enumerate(op.results):
        self.map[result] = from_elements(out[i], ir.RankedTensorType(result.type).element_type)


@lowering("tile.reduce_region", target="gpu")
def op_tile_reduce_region(self, op):
    inputs = list(op.operands)
    axis = ir.IntegerAttr(op.attributes["axis"]).value
    dist = _distribution(self, inputs, "a reduction")
    regs = [elements(self.value(v), dist.num_registers) for v in inputs]
    lanes, warps = _effective(dist, axis)

    # within the thread, then across the lanes (afterwards every lane along the axis holds it)
    partials = {}
    for key, chunks in _rows(dist, axis).items():
        held = sorted((k, e, r) for k, run in chunks.items() for e, r in run)
        acc = [reg[held[0][2]] for reg in regs]
        for _, _, r in held[1:]:
            acc = _combine(self, op, acc, [reg[r] for reg in regs])
        step, stride = 1, dist.lane_shift(axis)
        while step < lanes:
            acc = _combine(self, op, acc, [_shuffle(v, i32(step * stride), gpu.ShuffleMode.XOR) for v in acc])
            step *= 2
        partials[key] = (acc, held[0][2])

    results = list(op.results)
    scalar = not isinstance(results[0].type, ir.RankedTensorType)
    if scalar and warps == 1:
        for result, v in zip(results, next(iter(partials.values()))[0]):
            self.map[result] = v
        return

    # across the warps, and into the result's layout, through shared memory
    q = _position(self, dist, axis, warps, False, of_lane=False)
    q_static = _static_position(self, dist, axis, warps, False)
    values, slots, static = {}, {}, {}
    for key, (acc, r) in partials.items():
        lin, lin_static, count = _row_index(self, dist, axis, r)
        values[key], slots[key], static[key] = acc, arith.addi(arith.muli(lin, i32(warps)), q), lin_static * warps + q_static
    if scalar:
        targets = [i32(0)]
    else:
        rdist = self.dist(results[0])  # (any layout: its registers are read back by their coordinates)
        if any(self.dist(r) != rdist for r in results):
            raise TileError("a reduction of tiles whose results take different layouts is not supported by the GPU codegen yet")
        out_shape = list(rdist.shape)
        coords = [elements(c, rdist.num_registers) for c in self.coords(rdist)]
        targets = [i32(0)] * rdist.num_registers
        for d, s in enumerate(row_major_strides(out_shape)):
            targets = [arith.addi(t, arith.muli(c, i32(s * warps))) for t, c in zip(targets, coords[d])]
    got = _exchange(self, values, slots, static, count * warps, lambda load: [
        [load(arith.addi(t, i32(u))) for u in range(warps)] for t in targets])
    out = []
    for totals in got:
        acc = totals[0]
        for u in range(1, warps):
            acc = _combine(self, op, acc, totals[u])
        out.append(acc)
    for i, result in enumerate(results):
        self.map[result] = out[0][i] if scalar else from_elements([o[i] for o in out], ir.RankedTensorType(result.type).element_type)


__all__ = ["op_tile_scan", "op_tile_reduce_region"]
