"""`tile-assign-layouts`: give every tile value a layout encoding (blocked, mma, wgmma or rows).

Our own pass (upstream has no distributed-layout notion). All tiles of one
shape in a function share one blocked layout, chosen from that shape,
`num_warps` and the widest element type that memory ops of that shape move
(16 bytes per thread along the fastest dim, lanes next, warps on the slowest
dims); a `dot`'s accumulator chain (`_accumulator_values`: its results and
accumulators, what elementwise ops and control flow connect to them) takes
`#tile.mma`, or with `wgmma=1` (the sm_90a pipeline sets it) `#tile.wgmma`
where the tile is whole 64-row warpgroup instructions and its operands fit
swizzled shared panels; other tiles of that shape stay blocked.
Elementwise chains, masks and offsets therefore agree with the
loads and stores they feed. Where an op's operand still disagrees with the
layout of its result, a `tile.convert_layout` is inserted.

A tile in a tensor-core layout stored to contiguous rows (a matmul's
epilogue) is converted to the blocked layout first, through shared memory: a
thread holds two consecutive elements of a row in `#tile.mma`/`#tile.wgmma`,
but 16 bytes in the blocked layout, so the stores become whole rows per warp
(its offsets and mask follow, recomputed in the new layout):

    # before
    "tile.store"(%c, %offs, %acc, %m) : (..., tensor<128x256xbf16, #tile.wgmma<[2, 1]>>, ...)
    # after
    %r = "tile.convert_layout"(%acc) : (...) -> tensor<128x256xbf16, #tile.blocked<[1, 8], [1, 32], [8, 1], [1, 0]>>
    "tile.store"(%c, %offs2, %r, %m2) : (..., tensor<128x256xbf16, #tile.blocked<...>>, ...)

Reductions run on blocked layouts: a tensor-core tile reduced (the row maxima
and sums of attention scores) is converted to its shape's blocked layout first
(the codegen reduces rows in the tensor-core registers where warps hold whole
rows, and never makes that conversion). The 1-D shape of such row statistics
takes `#tile.rows<parent>` where the parent's warps hold whole rows
(`_row_shapes`): a thread then holds the rows it holds of the parent, so the
running maximum and sum of attention, and their broadcasts back over the
scores and the accumulator, stay in registers:

    # before: the row maxima in a blocked layout, exchanged through shared memory twice a step
    %m = "tile.reduce"(%c) {axis = 1 : i32, kind = "max"} : (...) -> tensor<128xf32, #tile.blocked<[1], [32], [8], [0]>>
    # after
    %m = "tile.reduce"(%c) {axis = 1 : i32, kind = "max"} : (...) -> tensor<128xf32, #tile.rows<#tile.wgmma<[2, 1]>>>

A shape broadcast into a blocked 2-D tile (R x 1 or 1 x C: a row's statistics, a
column vector) takes that tile's layout, and the 1-D shape of R (or C) its slice:
the layout of that dim alone, whose other lanes and warps hold copies, as
Triton's slice layouts (`_sliced_shapes`; broadcasts of data decide before those of
index values, which any thread recomputes; in a kernel with dots only data decides:
a quantized weight's scale row, read where its weights are decoded, not exchanged
through shared memory twice a step). A reduction along a row then leaves
each row where the broadcast back reads it, and the codegen picks the registers
instead of going through shared memory (`codegen/gpu/held_registers.py`). Where the
default layout spreads a row over part of a warp (128 16-bit columns: 16 lanes of
8), whose rows a 1-D layout cannot name, the shape takes a row a warp instead
(`_row_broadcast_shapes`), trading 16-byte vectors for 8-byte ones.

A `tile.gather`'s index takes the layout of its result (a thread reads the
elements its index registers name); its source keeps its own.

A 1-D gather (a `tile.load` whose offsets axis analysis cannot prove
consecutive, so it cannot be one 16-byte vector per thread) loads in a layout of
one element per thread, consecutive elements on consecutive lanes: a warp's
load then touches a few neighbouring sectors instead of one per lane. Its
result is converted to the shape's layout for its users, through shared memory.

    # before
    %v = "tile.load"(%p, %gathered, ...) : (...) -> tensor<2048xf16>
    # after
    %g = "tile.load"(%p, %gathered, ...) : (...) -> tensor<2048xf16, #tile.blocked<[1], [32], [4], [0]>>
    %v = "tile.convert_layout"(%g) : (...) -> tensor<2048xf16, #tile.blocked<[8], [32], [4], [0]>>

    # before
    %s = arith.addf %x, %y : tensor<1024xf32>
    # after
    %s = arith.addf %x, %y : tensor<1024xf32, #tile.blocked<[4], [32], [4], [0]>>
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from mlir import ir

from ..dialects import tile_ops
from ..dialects.layout import Blocked, Mma, Rows, Wgmma, element_bits, encoding_of, with_encoding
from .axis_info import AxisInfo
from .index_values import index_only
from .tile_fuse import through_groups
from .registry import register_pass
from .walk import all_ops, enclosing_loop

_MEMORY_OPS = {"tile.load", "tile.store", "tile.load_tile", "tile.store_tile", "tile.atomic_rmw", "tile.atomic_cas"}
# Ops whose tile operands must share the result's layout (elementwise in effect).
_ELEMENTWISE = ("arith.", "math.")


def _tiles(op) -> list:
    values = list(op.results) + [a for r in op.regions for b in r.blocks for a in b.arguments]
    return [v for v in values if isinstance(v.type, ir.RankedTensorType)]


@register_pass("tile-assign-layouts")
@dataclass
class TileAssignLayouts:
    num_warps: int = 4
    wgmma: bool = False  # sm_90a: dot accumulators take #tile.wgmma where it fits

    def layouts_by_shape(self, ops) -> dict:
        bits: dict[tuple, int] = {}
        for op in ops:
            if op.name in _MEMORY_OPS:
                # The data moved decides the vector width, not the offsets or masks beside it.
                data = op.results if op.results else [op.operands[2 if op.name == "tile.store" else 1]]
                for v in data:
                    if isinstance(v.type, ir.RankedTensorType) and element_bits(ir.ShapedType(v.type).element_type) > 8:
                        shape = tuple(ir.RankedTensorType(v.type).shape)
                        bits[shape] = max(bits.get(shape, 0), element_bits(ir.ShapedType(v.type).element_type))
        return bits

    def run(self, module_op):
        for fn in [op for op in all_ops(module_op) if op.name == "func.func"]:
            self.assign(fn)

    def assign(self, fn):
        ops = all_ops(fn)
        bits = self.layouts_by_shape(ops)
        # The tensor-core layout of each accumulator shape (for the tiles of its chain).
        dots = [op for op in ops if op.name == "tile.dot"]
        mma = {tuple(ir.RankedTensorType(op.results[0].type).shape): self.accumulator_layout(op) for op in reversed(dots)}

        slices = column_slice_layouts(ops, mma, AxisInfo())
        for gather, layout in slices.items():
            mma.setdefault(tuple(ir.RankedTensorType(gather.type).shape), layout)
        registers_a = self.registers_a_layouts(dots, mma)
        rows_a_warp = _row_broadcast_shapes(ops, bits, self.num_warps) if not dots else {}

        def by_shape(shape):
            shape = tuple(shape)
            return rows_a_warp.get(shape) or mma.get(shape) or Blocked.default(list(shape), bits.get(shape, 32), self.num_warps)

        # (In tensor-core kernels, whose tiles meet mma layouts at their broadcasts, only data
        # broadcast into a blocked tile: the rows of a tensor-core tile go by `_row_shapes`.)
        sliced = _sliced_shapes(ops, by_shape) if not dots else {
            **_sliced_shapes(ops, by_shape, data_only=True), **_row_shapes(ops, by_shape)}
        accumulated = _accumulator_values(ops, slices, registers_a)
        for op in ops:
            for v in _tiles(op):
                if encoding_of(v.type) is None:
                    shape = tuple(ir.RankedTensorType(v.type).shape)
                    layout = sliced.get(shape) or by_shape(shape)
                    if isinstance(layout, (Mma, Wgmma)) and not accumulated(v):
                        layout = Blocked.default(list(shape), bits.get(shape, 32), self.num_warps)
                    v.set_type(with_encoding(v.type, layout))
        # Keep the signature in step with the entry block's arguments.
        entry = fn.regions[0].blocks[0]
        ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        results = ftype.results
        for op in ops:
            if op.name == "func.return":
                results = [v.type for v in op.operands]
        fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get([a.type for a in entry.arguments], results))
        for load in {op for v in registers_a for op in _loads_computing(v)}:
            self.load_blocked(load, bits)
        axis = AxisInfo()
        for op in ops:
            if op.name == "tile.load" and _gathers(op, axis):
                self.load_per_lane(op)
            if op.name == "tile.store" and _stores_by_pairs(op, axis):
                self.to_blocked(op, 2, bits)
            if op.name in ("tile.reduce", "tile.scan", "tile.reduce_region"):
                for i, v in enumerate(op.operands):
                    if isinstance(encoding_of(v.type), (Mma, Wgmma)):
                        self.to_blocked(op, i, bits)
        for op in ops:
            anchor = _layout_anchor(op)
            want = encoding_of(anchor.type) if anchor is not None else None
            for i, v in enumerate(op.operands):
                if op.name == "tile.gather" and i == 0:
                    continue  # the source is read through shared memory in whatever layout it has
                have = encoding_of(v.type)
                if want and have and have != want:
                    with ir.InsertionPoint(op), op.location:
                        op.operands[i] = tile_ops.convert_layout(v, with_encoding(v.type, want))

    def accumulator_layout(self, dot):
        """`#tile.wgmma` for a dot that wgmma can do from swizzled shared tiles (16-bit
        operands, K of 16, 32 or a multiple of 64; float8, twice those), else `#tile.mma`."""
        shape = list(ir.RankedTensorType(dot.results[0].type).shape)
        a = ir.RankedTensorType(dot.operands[0].type)
        if self.wgmma and Wgmma.takes_k(a.shape[1], element_bits(a.element_type)):
            layout = Wgmma.for_shape(shape, self.num_warps)
            if layout:
                return layout
        return Mma.for_shape(shape, self.num_warps)

    def registers_a_layouts(self, dots, mma: dict) -> list:
        """The A operands of dots marked `tile.registers_a` (`dot_scaled`'s upcast A) whose
        accumulator is `#tile.wgmma` with its warpgroups along M: their shape takes that grid
        (in `mma`, where no accumulator has it), and they and what computes them elementwise
        (from the float8 tile's ring slot on) take it (`_accumulator_values`), so that wgmma
        reads A from registers (`distributed_wgmma.registers_a`)."""
        out = []
        for dot in dots:
            a = ir.RankedTensorType(dot.operands[0].type)
            acc = self.accumulator_layout(dot)
            if (tile_ops.REGISTERS_A not in dot.attributes or not isinstance(acc, Wgmma) or acc.warpgroups[1] != 1
                    or element_bits(a.element_type) != 16):
                continue
            layout = Wgmma(acc.warpgroups)
            if mma.setdefault(tuple(a.shape), layout) == layout:
                out.append(dot.operands[0])
        return out

    def load_blocked(self, load, bits: dict):
        """A load that a register operand's chain starts from keeps its shape's blocked layout
        (`tile-pipeline` then rings it, and the codegen reads the slot in the operand's layout
        where a `tile.convert_layout` of it asks: `op_tile_convert_layout`)."""
        result = load.results[0]
        want = result.type
        shape = list(ir.RankedTensorType(want).shape)
        result.set_type(with_encoding(want, Blocked.default(shape, bits.get(tuple(shape), 32), self.num_warps)))
        with ir.InsertionPoint.after(load), load.location:
            back = tile_ops.convert_layout(result, want)
        result.replace_all_uses_except(back, back.owner.operation)

    def load_per_lane(self, load):
        # %v = load -> %g = load (one element per lane); %v = convert_layout %g
        result = load.results[0]
        shaped = with_encoding(result.type, None)
        shape = list(ir.RankedTensorType(shaped).shape)
        want = result.type
        result.set_type(with_encoding(shaped, Blocked.default(shape, 128, self.num_warps)))
        with ir.InsertionPoint.after(load), load.location:
            back = tile_ops.convert_layout(result, want)
        result.replace_all_uses_except(back, back.owner.operation)

    def to_blocked(self, op, operand: int, bits: dict):
        """Give the op's tensor-core operand its shape's blocked layout, through a convert_layout.

        store %acc (#tile.mma / #tile.wgmma) -> store (convert_layout %acc : #tile.blocked)
        reduce %s (#tile.mma / #tile.wgmma) -> reduce (convert_layout %s : #tile.blocked)"""
        value = op.operands[operand]
        shape = list(ir.RankedTensorType(value.type).shape)
        blocked = Blocked.default(shape, bits.get(tuple(shape), 32), self.num_warps)
        with ir.InsertionPoint(op), op.location:
            op.operands[operand] = tile_ops.convert_layout(value, with_encoding(value.type, blocked))


def _sliced_shapes(ops, by_shape, data_only: bool = False) -> dict:
    """Layouts for the shapes broadcast into a blocked 2-D tile (a row's statistics, a
    column vector), so that a thread holds the elements it broadcasts, as Triton's slice
    layouts do: an R x 1 (or 1 x C) shape takes the 2-D tile's layout, and the 1-D shape of
    R (or C) its slice, the layout of that dim alone. Where broadcasts of data (not index
    values, which a thread recomputes in any layout: `index_values.py`) agree, they decide;
    else all the shape's broadcasts, if they agree; else the shape keeps its default.
    `data_only`: only broadcasts of data decide (a tensor-core kernel's: a quantized
    weight's scale row read where the decoded weights are, not through shared memory).

        # before: rows reduced, then read back along each row (through shared memory)
        %m = "tile.reduce"(%x) {axis = 1} : (tensor<16x256xf32, #tile.blocked<[1, 4], [1, 32], [4, 1], [1, 0]>>)
               -> tensor<16xf32, #tile.blocked<[1], [32], [4], [0]>>
        # after: each warp's rows, in every lane (held where the reduction leaves them)
               -> tensor<16xf32, #tile.blocked<[1], [1], [4], [0]>>
    """
    found: dict = {}  # shape -> (layouts from data, layouts from all)
    for op in ops:
        if op.name != "tile.broadcast":
            continue
        src, dst = (tuple(ir.RankedTensorType(v.type).shape) for v in (op.operands[0], op.results[0]))
        parent = by_shape(dst)
        if len(dst) != 2 or not isinstance(parent, Blocked) or src.count(1) != 1:
            continue
        keep = 0 if src[1] == 1 else 1
        data = not index_only(op.operands[0])
        for shape, layout in ((src, parent), ((dst[keep],), parent.slice(keep))):
            if layout is not None:
                from_data, from_all = found.setdefault(shape, (set(), set()))
                from_all.add(layout)
                if data:
                    from_data.add(layout)
    out = {}
    for shape, (from_data, from_all) in found.items():
        chosen = from_data if from_data or data_only else from_all
        if len(chosen) == 1:
            out[shape] = next(iter(chosen))
    return out


def _row_broadcast_shapes(ops, bits: dict, num_warps: int) -> dict:
    """The 2-D shapes R x C that an R x 1 tile is broadcast into (a row's statistics read
    back along it) whose default layout spreads a row over part of a warp's lanes only
    (C of 128 16-bit elements: 16 lanes of 8), so that its rows have no 1-D slice and each
    broadcast goes through shared memory. These take a row a warp (C / 32 elements a
    thread: 8-byte vectors there), where the rows' slice lies in registers, if that leaves
    at least 8-byte vectors. (Paged attention's 128 x 128 bf16 steps at 8 warps: 90% -> 100%
    of copy on the H100, 2026-12-05 12:21; at 64 x 128 on 4 warps 97% -> 91%.)

        # before: a row over 16 lanes, 2 rows a warp; the row statistics through shared memory
        tensor<64x128xf32, #tile.blocked<[1, 8], [2, 16], [8, 1], [1, 0]>>
        # after
        tensor<64x128xf32, #tile.blocked<[1, 4], [1, 32], [8, 1], [1, 0]>>
    """
    found = {}
    # Index values (a mask's `offs_m[:, None] < M`, row offsets) any layout recomputes: their
    # broadcasts need no slice in registers, and counting them gave a transpose's tiles, a
    # column-major load's or store's, 8 bytes a thread where 16 fit (64 x 64 f32, int8: 2).
    # But for the shapes a scan reads, which keep a row a warp (test_scans' recurrence
    # spilled without it).
    scanned = {tuple(ir.RankedTensorType(v.type).shape) for op in ops if op.name == "tile.scan"
               for v in op.operands if isinstance(v.type, ir.RankedTensorType)}
    for op in ops:
        if op.name != "tile.broadcast":
            continue
        src, dst = (tuple(ir.RankedTensorType(v.type).shape) for v in (op.operands[0], op.results[0]))
        if len(dst) != 2 or src != (dst[0], 1) or dst[1] % 32:
            continue
        if dst not in scanned and index_only(op.operands[0]):
            continue
        width = bits.get(dst, 32)
        # (not below 8-byte vectors: 64 16-bit columns, 2 a lane, keep their 16-byte loads)
        if Blocked.default(list(dst), width, num_warps).slice(0) is None and dst[1] // 32 * width >= 64:
            # C / 32 elements a thread: Blocked.default's 16 bytes a thread of elements that wide
            found[dst] = Blocked.default(list(dst), 128 * 32 // dst[1], num_warps)
    return found


def _accumulator_values(ops, slices=(), operands=()):
    """Which tiles of a dot's accumulator shape take its layout: the dots' results and
    accumulators and what elementwise ops and control flow (loop carries, fusion groups,
    branches) connect to them, with the offsets and masks of their loads and stores; and
    so for the column slices of an accumulator (`slices`, results of gathers: each with
    its index), for dot operands held in registers (`operands`) and what connects to them. A tile
    that only shares their shape (attention's Q of 128 x 128 beside a 128 x 128 accumulator,
    an FP8 matmul's 64 x 64 weights beside its 64 x 64 one) keeps its blocked layout, where
    its load is 16-byte vectors: in the accumulator's it went two elements at a time or one.
    Returns v -> bool."""
    parent: dict = {}

    def find(v):
        parent.setdefault(v, v)
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    def union(*vs):
        tiles = [v for v in vs if isinstance(v.type, ir.RankedTensorType)]
        for v in tiles[1:]:
            parent[find(v)] = find(tiles[0])

    for op in ops:
        if op.name == "tile.dot":
            union(op.results[0], op.operands[2])
        elif op.name == "tile.load":  # offsets and mask go with the data
            union(op.results[0], op.operands[1], op.operands[2])
        elif op.name == "tile.store":
            union(op.operands[2], op.operands[1], op.operands[3])
        elif op.name == "tile.gather" and op.results[0] in slices:
            union(op.results[0], op.operands[1])
        elif op.name.startswith(_ELEMENTWISE) and not op.regions and op.results:
            shape = ir.RankedTensorType(op.results[0].type).shape if isinstance(op.results[0].type, ir.RankedTensorType) else None
            union(op.results[0], *[o for o in op.operands if isinstance(o.type, ir.RankedTensorType)
                                   and ir.RankedTensorType(o.type).shape == shape])
        elif op.name == "scf.for":
            body = op.regions[0].blocks[0]
            yielded = body.operations[-1].operands
            for i, result in enumerate(op.results):
                union(result, op.operands[3 + i], body.arguments[1 + i], yielded[i])
        elif op.name == "scf.while":  # inits, both regions' arguments, condition and yield, results
            test, step = op.regions[0].blocks[0], op.regions[1].blocks[0]
            forwarded = list(test.operations[-1].operands)[1:]
            yielded = step.operations[-1].operands
            for i, result in enumerate(op.results):
                union(result, op.operands[i], test.arguments[i], step.arguments[i], forwarded[i], yielded[i])
        elif op.name in ("scf.execute_region", "scf.if"):
            for region in op.regions:
                for block in region.blocks:
                    for result, v in zip(op.results, block.operations[-1].operands):
                        union(result, v)
    roots = {find(op.results[0]) for op in ops if op.name == "tile.dot"}
    roots |= {find(g) for g in slices if find(g.owner.operands[0]) in roots}
    roots |= {find(v) for v in operands}
    return lambda v: find(v) in roots


def _loads_computing(v) -> list:
    """The loads of v's shape that v is computed from elementwise (through fusion groups)."""
    shape, out, seen, todo = ir.RankedTensorType(v.type).shape, [], set(), [v]
    while todo:
        v = through_groups(todo.pop())
        if v in seen or isinstance(v.owner, ir.Block):
            continue
        seen.add(v)
        op = v.owner
        if op.name in ("tile.load", "tile.load_tile"):
            out.append(op)
        elif op.name.startswith(_ELEMENTWISE):
            todo.extend(o for o in op.operands if isinstance(o.type, ir.RankedTensorType)
                        and ir.RankedTensorType(o.type).shape == shape)
    return out


def column_slice_layouts(ops, mma: dict, axis) -> dict:
    """Gathers that pick whole 8-column groups of a tensor-core accumulator shape whose
    warps (or warpgroups) are all along M, by an index the same in every row (a broadcast
    row: `passes/column_halves.py` makes them of Triton's subtiled epilogue): result ->
    the accumulator's warp grid on the result's shape. In it each thread holds the
    columns it picks, in registers it holds of the accumulator (the codegen checks that
    and picks them; `op_tile_gather`). Only where the source is in an accumulator's
    chain do they take it (`_accumulator_values`)."""
    found = {}
    for op in ops:
        if op.name != "tile.gather" or ir.IntegerAttr(op.attributes["axis"]).value != 1:
            continue
        src, index = (ir.RankedTensorType(v.type) for v in op.operands)
        layout = mma.get(tuple(src.shape))
        row = through_groups(op.operands[1]).owner
        info = axis(op.operands[1])
        if (layout is None or dataclasses.astuple(layout)[0][1] != 1
                or isinstance(row, ir.Block) or row.name != "tile.broadcast"
                or ir.RankedTensorType(row.operands[0].type).shape[0] != 1 or index.shape[1] % 8
                or info.contiguity % 8 or info.divisibility % 8):
            continue
        found[op.results[0]] = type(layout)(dataclasses.astuple(layout)[0])
    return found


_ROW_OPS = ("tile.splat", "tile.arange", "tile.reshape", "tile.broadcast", "tile.reduce", "scf.", "tile.load", "tile.store")


def _broadcast_rows(op, by_shape) -> tuple | None:
    """((R,), layout) for a broadcast of data R x 1 -> R x C: the rows layout of a
    tensor-core R x C (attention backward's log-sum-exp and delta read over the scores'
    rows: each thread loads the rows it holds, no exchange through shared memory); for
    1 x R -> C x R its columns layout (`#tile.cols`: the same read over the columns of the
    transposed scores, `m[None, :]`, tutorial 06's dK and dV), where the vector is made in
    the innermost loop that reads it, each step (a thread holds C / 4 columns: a matmul's
    bias row held so across its K loop took the kernel from 168 to 255 registers); layout
    None into a blocked tile. None for any other broadcast."""
    src, dst = (list(ir.RankedTensorType(v.type).shape) for v in (op.operands[0], op.results[0]))
    if len(src) != 2 or len(dst) != 2 or not (src[0] == 1) ^ (src[1] == 1):
        return None
    axis = 0 if src[1] == 1 else 1
    if dst[1 - axis] == 1:
        return None
    if axis:
        source = _vector_source(op.operands[0])
        loop = enclosing_loop(source) if source is not None else None
        if loop is None or loop != enclosing_loop(op) or any(o.name == "scf.for" for o in all_ops(loop)[1:]):
            return (src[axis],), None  # (kept in registers across a loop, C / 4 of them a thread: a matmul's bias)
    layout = by_shape(dst)
    return (src[axis],), Rows.of(layout, axis) if isinstance(layout, (Mma, Wgmma)) else None


def _vector_source(v):
    """The op that makes the 1-D vector a 1 x R (or R x 1) tile reshapes (through groups)."""
    v = through_groups(v)
    op = None if isinstance(v.owner, ir.Block) else v.owner.operation
    if op is not None and op.name == "tile.reshape":
        v = through_groups(op.operands[0])
        op = None if isinstance(v.owner, ir.Block) else v.owner.operation
    return op


def _row_shapes(ops, by_shape) -> dict:
    """`#tile.rows<parent>` for the 1-D shape (R,) of rows reduced from (or data broadcast
    over the rows of: `_broadcast_rows`) an R x C tile in a
    tensor-core layout whose warps hold whole rows (`Rows.of`), where every op that touches
    that shape computes on it elementwise, makes it (splat, arange, a row reduction), reshapes
    or broadcasts it, carries it through control flow, or loads or stores it (each thread its
    rows, one element at a time: attention's log-sum-exp, stored after the loop, had kept
    the running statistics blocked, exchanged through shared memory twice a reduction,
    4 barriers a step of tutorial 06's forward). No dot or atomic reads a tile in that
    layout. A shape that would get two is left to its default."""
    found: dict = {}
    for op in ops:
        if op.name == "tile.reduce" and ir.IntegerAttr(op.attributes["axis"]).value == 1:
            src = ir.RankedTensorType(op.operands[0].type)
            found.setdefault((src.shape[0],), set()).add(Rows.of(by_shape(src.shape)) if src.rank == 2 else None)
        elif op.name == "tile.broadcast" and not index_only(op.operands[0]) and (got := _broadcast_rows(op, by_shape)):
            found.setdefault(got[0], set()).add(got[1])
    rows = {shape: next(iter(layouts)) for shape, layouts in found.items() if len(layouts) == 1 and None not in layouts}
    for op in ops:
        tiles = [v for v in list(op.operands) + _tiles(op) if isinstance(v.type, ir.RankedTensorType)]
        touched = {tuple(ir.RankedTensorType(v.type).shape) for v in tiles} & rows.keys()
        full_reduce = op.name == "tile.reduce" and ir.RankedTensorType(op.operands[0].type).rank == 1
        if touched and (full_reduce or not op.name.startswith(_ELEMENTWISE + _ROW_OPS)):
            for shape in touched:
                rows.pop(shape)
    return rows


def _stores_by_pairs(store, axis) -> bool:
    """A store of a tensor-core tile (two consecutive elements per thread) to rows that
    axis analysis proves contiguous for 16 bytes or more."""
    t = store.operands[2].type
    if not isinstance(t, ir.RankedTensorType) or not isinstance(encoding_of(t), (Mma, Wgmma)):
        return False
    width = element_bits(ir.RankedTensorType(t).element_type)
    return width in (16, 32) and axis(store.operands[1]).contiguity * width >= 128


# The most bytes a gather's conversion may stage through shared memory: past it the tile
# stays in its shape's layout (a GroupNorm row of 65536 f32 with its weights gathered per
# channel needed 256 KiB and was refused, where Triton compiles it).
_GATHER_STAGING_BYTES = 48 * 1024


def _gathers(load, axis) -> bool:
    """A 1-D load whose offsets are not provably consecutive, in a layout of several per
    thread; not where a thread's elements share an address (constant runs, a weight per
    channel: the lanes of a warp then read a few addresses already), nor where the
    conversion would stage more than `_GATHER_STAGING_BYTES`."""
    result = load.results[0]
    layout = encoding_of(result.type)
    offsets = load.operands[1]
    if not (isinstance(layout, Blocked) and ir.RankedTensorType(result.type).rank == 1
            and layout.size_per_thread[0] > 1 and isinstance(offsets.type, ir.RankedTensorType)):
        return False
    t = ir.RankedTensorType(result.type)
    info = axis(offsets)
    return (info.contiguity == 1 and info.constancy < layout.size_per_thread[0]
            and t.shape[0] * max(element_bits(t.element_type), 8) // 8 <= _GATHER_STAGING_BYTES)


def _layout_anchor(op):
    """The value whose layout an op's tile operands must share, if any."""
    if op.name.startswith(_ELEMENTWISE) and op.results:
        return op.results[0]
    if op.name in ("tile.load", "tile.atomic_rmw", "tile.atomic_cas"):  # (an atomic's old values are its data's layout)
        return op.results[0]
    if op.name == "tile.inline_asm" and op.results:  # (elementwise: an instance takes registers of each operand)
        return op.results[0]
    if op.name == "tile.store":
        return op.operands[2]  # the stored value
    if op.name == "tile.gather":
        return op.results[0]  # for its index: a thread reads what its index registers name
    if op.name == "tile.scan":  # (its operands, results and each thread's part of them, all in one layout)
        return op.results[0]
    if op.name == "tile.reduce_region":
        return op.operands[0]
    return None
