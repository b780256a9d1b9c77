"""`tile.dot` on tensor cores with `mma.sync.m16n8k16` (a method of the GPU `Translator`);
an accumulator in the `#tile.wgmma` layout goes to `distributed_wgmma.py` instead.
int8 operands take `mma.sync.m16n8k32.row.col.s32.s8.s8.s32` into an i32 accumulator
(`_mma`), read the same way with twice the K per step: A's fragment of 16 rows by 32
bytes is the 16-bit one's by bytes, and B's is read from a slot that holds its N x K
transpose (`passes/fp8_dots.py`: `ldmatrix.trans` moves 16-bit elements only).

The accumulator lives in the `#tile.mma` layout (`MmaDistribution`): warp
(wm, wn) owns a block of 16 x 8 fragments. Both operands are read from shared
memory with `nvgpu.ldmatrix` (A: x4 per 16 x 16 fragment; B, row-major K x N:
`.trans` x4 for two 16 x 8 fragments; from a slot that holds the operand's
transpose, `tile-pipeline`'s for a column-major block, the same with `.trans`
the other way round), then one `nvgpu.mma.sync` per fragment
pair and 16-wide step of K (bf16: the `nvvm.mma.sync` op itself, since
nvgpu's cannot lower bf16).

An operand that `tile-pipeline` left in a shared ring (`tile.local_load`) is
read in place; one held in registers is first stored into a swizzled scratch
tile (`distributed_convert.stage`: vector stores along rows), fenced by barriers.

f32 operands of a tf32 dot take `mma.sync.m16n8k8` instead (`_tf32_dot`).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, nvgpu, vector

from ...dialects.layout import MAX_SHARED
from ...dialects.layout import element_bits as bits
from ...dialects.tile_ops import is_tf32
from ...frontend.errors import TileError
from ..common.ir_builders import to_index
from .distributed_async_copy import SharedTile, shared_writes_done
from .distributed_convert import chunks_of, stage, stage_transposed
from .distributed_layout import MmaDistribution, WgmmaDistribution
from .distributed_wgmma import registers_a, wgmma_dot
from .distributed_wgmma import supported as wgmma_supported
from .register_vectors import elements, from_elements, i32
from ..common.tf32_rounding import round_to_tf32
from ..common.lowerings import lowering


def k_step(dot) -> int | None:
    """The K of one mma.sync for this dot's operands (16 for f16/bf16, 8 for f32 as tf32,
    32 for int8; 32 for float8, which only wgmma takes: `passes/fp8_dots.py`), or None where
    the tensor cores cannot multiply them (exact f32)."""
    elem = str(ir.RankedTensorType(dot.operands[0].type).element_type)
    if is_tf32(dot):
        return 8
    return {"f16": 16, "bf16": 16, "f8E4M3FN": 32, "f8E5M2": 32, "i8": 32}.get(elem)


def _pack(frag, rows: int):
    """Each row of a fragment (two 16-bit values) as one i32, low half first, as PTX wants."""
    one = ir.VectorType.get([1], ir.IntegerType.get_signless(32))
    return [vector.extract(vector.BitCastOp(one, vector.extract(frag, [], [r])).result, [], [0]) for r in range(rows)]


def _mma(a_frag, b_frag, acc: list, elem) -> list:
    """One m16n8k16 step (m16n8k32 for int8): four f32 (i32) accumulators in, four out."""
    f32 = ir.F32Type.get()
    if str(elem) == "f16":
        c = vector.FromElementsOp(ir.VectorType.get([2, 2], f32), acc).result
        d = nvgpu.MmaSyncOp(c.type, a_frag, b_frag, c, [16, 8, 16]).result
        return [vector.extract(d, [], [i // 2, i % 2]) for i in range(4)]
    # bf16: nvgpu.mma.sync cannot lower it, so emit the nvvm op (operands packed in i32); int8
    # too, whose sums wrap (nvgpu's would saturate), as the CPU's and torch's int32 sums do.
    int8 = str(elem) == "i8"
    out = ir.IntegerType.get_signless(32) if int8 else f32
    struct = ir.Type.parse(f"!llvm.struct<({out}, {out}, {out}, {out})>")
    ptx_type = "s8" if int8 else "bf16"
    attrs = {
        "layoutA": ir.Attribute.parse("#nvvm.mma_layout<row>"), "layoutB": ir.Attribute.parse("#nvvm.mma_layout<col>"),
        "multiplicandAPtxType": ir.Attribute.parse(f"#nvvm.mma_type<{ptx_type}>"),
        "multiplicandBPtxType": ir.Attribute.parse(f"#nvvm.mma_type<{ptx_type}>"),
        "shape": ir.Attribute.parse(f"#nvvm.shape<m = 16, n = 8, k = {32 if int8 else 16}>"),
        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([4, 2, 4]),
    }
    if int8:
        attrs["intOverflowBehavior"] = ir.Attribute.parse("#nvvm.mma_int_overflow<wrapped>")
    operands = _pack(a_frag, 4) + _pack(b_frag, 2) + acc
    d = ir.Operation.create("nvvm.mma.sync", results=[struct], operands=operands, attributes=attrs).result
    return [llvm.ExtractValueOp(out, d, [i]).result for i in range(4)]


def _ldmatrix(tile: SharedTile, row, col, tiles: int, trans: bool, phase):
    ty = ir.VectorType.get([tiles, 32 // bits(tile.elem)], tile.elem)  # (a 32-bit register a matrix)
    return nvgpu.LdMatrixOp(ty, tile.buf, [to_index(tile.offset(row, col, phase))], trans, tiles).result


@lowering("tile.dot", target="gpu")
def op_tile_dot(self, op):
    a, b, acc = op.operands
    (M, K), (_, N) = ir.RankedTensorType(a.type).shape, ir.RankedTensorType(b.type).shape
    elem = ir.RankedTensorType(a.type).element_type
    int8 = str(elem) == "i8"
    f32 = ir.IntegerType.get_signless(32) if int8 else ir.F32Type.get()  # (the accumulator's type)
    cd = self.dist(op.results[0])
    tf32 = is_tf32(op)
    step = k_step(op)
    if step is None or step == 32 and not int8 and not isinstance(cd, WgmmaDistribution):
        raise TileError(f"dot on tensor cores takes f16, bf16 or int8 operands (or f32 as tf32; float8 on wgmma), "
                        f"not {elem}")
    if not isinstance(cd, MmaDistribution) or K % step or ir.RankedTensorType(acc.type).element_type != f32:
        raise TileError(f"dot of {M}x{K} by {K}x{N} needs an {f32} accumulator in the mma layout and K a multiple of {step}")
    ta, tb = (self.map.get(v) for v in (a, b))
    ta, tb = (t if isinstance(t, SharedTile) else None for t in (ta, tb))
    a_in_registers = isinstance(cd, WgmmaDistribution) and registers_a(self, op)
    if a_in_registers and tb is None and step == 16:
        return _chunked_b(self, op, b, K, N)
    if (ta is None and not a_in_registers) or tb is None:  # stage the register operands in a swizzled scratch tile
        need = (0 if ta or a_in_registers else M * K) + (0 if tb else K * N)
        buf = self.scratch(elem, need, align=1024)  # the 128-byte swizzle's period
        gpu.barrier()
        if ta is None and not a_in_registers:
            ta = SharedTile(buf, i32(0), M, K, elem)
            stage(self, a, ta)
        if tb is None:
            elem_b = ir.RankedTensorType(b.type).element_type
            buf_b = buf if elem_b == elem else self.scratch(elem_b, need, align=1024)  # (float8 e4m3 by e5m2)
            base = i32(0 if ta is None or ta.buf != buf else M * K)
            if step == 32:  # 8-bit operands are read K-major only: B stored transposed (`passes/fp8_dots.py`)
                tb = SharedTile(buf_b, base, N, K, elem_b, transposed=True)
                source = None if isinstance(b.owner, ir.Block) else b.owner.operation
                if source is not None and source.name == "tile.trans" and self.map.get(b) is None:
                    stage(self, source.operands[0], tb)  # B's transpose, in registers as loaded (fp8_operands.py)
                else:
                    stage_transposed(self, b, tb)
            else:
                tb = SharedTile(buf_b, base, K, N, elem_b)
                stage(self, b, tb)
        shared_writes_done(self)
    if isinstance(cd, WgmmaDistribution):
        why = wgmma_supported(ta, tb)
        if why:
            raise TileError(f"dot of {M}x{K} by {K}x{N} on wgmma: {why}")
        return wgmma_dot(self, op, ta, tb)

    (_, wn), (tm, tn), (reps_m, reps_n) = cd.layout.warps, cd.warp_tile, cd.reps
    warp_m, warp_n = arith.divui(self.warp, i32(wn)), arith.remui(self.warp, i32(wn))
    if tf32:
        return _tf32_dot(self, op, ta, tb, arith.muli(warp_m, i32(tm)), arith.muli(warp_n, i32(tn)))
    # ldmatrix x4: lanes 8j .. 8j+7 give the rows of matrix j; row r_l of the 16-row block,
    # column c_l (A: matrices (rows 0-7, k 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15);
    # B transposed: (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15)).
    # A slot that holds the transpose (`transposed`: K x M for A, N x K for B) gives the same
    # matrices with rows and columns swapped: lane rows r_t = lane % 8 + 8 (lane / 16), columns
    # c_t = lane & 8, and the `.trans` flag the other way round. For int8 each k above is a
    # byte pair (`w` = 2 elements: 16 bytes a matrix row), so columns and K steps double.
    w = 16 // bits(elem)
    if w > 1 and (ta.transposed or not tb.transposed):
        raise TileError("internal: an int8 mma.sync operand is not K-major in shared memory")
    r_l = arith.addi(arith.andi(self.lane, i32(7)), arith.andi(self.lane, i32(8)))
    c_l = arith.muli(arith.shrui(self.lane, i32(4)), i32(8 * w))
    r_t = arith.addi(arith.andi(self.lane, i32(7)), arith.muli(arith.shrui(self.lane, i32(4)), i32(8)))
    c_t = arith.muli(arith.andi(self.lane, i32(8)), i32(w))
    # Every row offset added to r_l (r_t) is a multiple of 8, so each thread's swizzle phase is fixed.
    pa, pb = ta.phase(r_t if ta.transposed else r_l), tb.phase(r_t if tb.transposed else r_l)
    a_row0 = arith.addi(arith.muli(warp_m, i32(tm)), c_t if ta.transposed else r_l)
    b_col0 = arith.muli(warp_n, i32(tn))
    regs = elements(self.value(acc), cd.num_registers)
    two = ir.VectorType.get([2, 2 * w], elem)
    for ks in range(K // step):
        if ta.transposed:
            a_frags = [_ldmatrix(ta, arith.addi(r_t, i32(ks * 16)), arith.addi(a_row0, i32(rm * 16)), 4, True, pa)
                       for rm in range(reps_m)]
        else:
            a_frags = [_ldmatrix(ta, arith.addi(a_row0, i32(rm * 16)), arith.addi(c_l, i32(ks * step)), 4, False, pa)
                       for rm in range(reps_m)]
        k_row = arith.addi(r_l, i32(ks * 16))
        for rn in range(0, reps_n, 2):
            pair = rn + 1 < reps_n
            if tb.transposed:
                frag = _ldmatrix(tb, arith.addi(b_col0, arith.addi(r_t, i32(rn * 8))), arith.addi(c_t, i32(ks * step)),
                                 4 if pair else 2, False, pb)
            else:
                col = arith.addi(b_col0, arith.addi(c_l, i32(rn * 8)) if pair else i32(rn * 8))
                frag = _ldmatrix(tb, k_row, col, 4 if pair else 2, True, pb)
            for j in range(2 if pair else 1):
                b_frag = frag if not pair else vector.FromElementsOp(
                    two, [vector.extract(frag, [], [2 * j + r, c]) for r in (0, 1) for c in range(2 * w)]).result
                for rm in range(reps_m):
                    idx = [cd.register(rm, rn + j, i) for i in range(4)]
                    out = _mma(a_frags[rm], b_frag, [regs[i] for i in idx], elem)
                    for i, r in enumerate(idx):
                        regs[r] = out[i]
    self.map[op.results[0]] = from_elements(regs, f32)


def _chunked_b(self, op, b, K: int, N: int):
    """A wgmma dot with A in registers (`dot_scaled`'s) and B held in registers: B staged
    in as few chunks as fit in the shared memory left (tutorial 10's scaled 128 x 256 bf16
    B, 64 KB, beside 192 KB of float8 rings: two), one after another through one buffer,
    each multiplied as it lands (every warp's wgmmas on a chunk waited for before the
    barrier that lets the next one overwrite it). A B that is the transpose of an N x K
    tile (`b.T`, left unmade: `fp8_operands.py`) is staged as that tile lies, read K-major,
    in chunks of N (each an `m64nNk16` on its columns of the accumulator); another, in
    chunks of K."""
    elem = ir.RankedTensorType(b.type).element_type
    source = None if isinstance(b.owner, ir.Block) else b.owner.operation
    k_major = source is not None and source.name == "tile.trans" and self.map.get(b) is None
    staged, extent, row_bytes = (source.operands[0], N, K * bits(elem) // 8) if k_major else (b, K, N * bits(elem) // 8)
    free = MAX_SHARED - -(-self.scratch_base // 1024) * 1024
    chunks = chunks_of(self, (self.dist(staged),), extent, free // row_bytes, contiguous=True)
    rows = extent // chunks.count if chunks else 0
    if chunks is None or rows % 16:
        raise TileError(f"tile too large: the dot's {K}x{N} B needs more shared memory than the {free} bytes left, "
                        "in chunks of 16 rows or more: use smaller tiles or fewer stages")
    buf = self.scratch(elem, rows * row_bytes * 8 // bits(elem), align=1024)
    tb = SharedTile(buf, i32(0), rows, K, elem, transposed=True) if k_major else SharedTile(buf, i32(0), rows, N, elem)
    regs = None
    for c in range(chunks.count):
        gpu.barrier()
        stage(self, staged, tb, (chunks, c))
        shared_writes_done(self)
        if k_major:  # (8 columns of N a group)
            regs = wgmma_dot(self, op, None, tb, groups=range(c * rows // 8, (c + 1) * rows // 8), regs=regs)
        else:  # (16 rows of K a step)
            regs = wgmma_dot(self, op, None, tb, steps=range(c * rows // 16, (c + 1) * rows // 16), regs=regs)


def _tf32_dot(self, op, ta: SharedTile, tb: SharedTile, row0, col0):
    """The f32 dot as `mma.sync.m16n8k8` on tf32: fragments read element by element
    (ldmatrix moves 16-bit halves, which a transposed B would split), each rounded
    to tf32 (`tf32_rounding.py`, as the loop lowering does) before the mma.

    Lane = 4 * g + t holds A (16 x 8) at rows g, g + 8 and columns t, t + 4 (registers
    a0..a3: (g, t), (g+8, t), (g, t+4), (g+8, t+4)) and B (8 x 8) at rows t, t + 4 of
    column g; the accumulator is the m16n8 one of the 16-bit mma."""
    cd = self.dist(op.results[0])
    (reps_m, reps_n), K = cd.reps, (ta.rows if ta.transposed else ta.cols)
    f32 = ir.F32Type.get()
    g, t = arith.shrui(self.lane, i32(2)), arith.andi(self.lane, i32(3))
    t4 = arith.addi(t, i32(4))
    # Rows 8 apart share a swizzle phase: A's rows differ by multiples of 8, B's by 4 too.
    pa, pb = ta.phase(g), [tb.phase(t), tb.phase(t4)]
    a_row, b_col = arith.addi(row0, g), arith.addi(col0, g)

    def fragment(tile, coords, shape):
        # (r, c) of the operand: in a slot that holds its transpose, (c, r) of the slot.
        at = [(c, r, None) if tile.transposed else (r, c, p) for r, c, p in coords]
        vals = [round_to_tf32(memref.LoadOp(tile.buf, [to_index(tile.offset(r, c, p))]).result) for r, c, p in at]
        return vector.FromElementsOp(ir.VectorType.get(shape, f32), vals).result

    regs = elements(self.value(op.operands[2]), cd.num_registers)
    for ks in range(K // 8):
        k0, k4 = i32(ks * 8), i32(ks * 8 + 4)
        a_frags = []
        for rm in range(reps_m):
            r0 = arith.addi(a_row, i32(rm * 16))
            r8 = arith.addi(r0, i32(8))
            c0, c4 = arith.addi(t, k0), arith.addi(t, k4)
            a_frags.append(fragment(ta, [(r0, c0, pa), (r8, c0, pa), (r0, c4, pa), (r8, c4, pa)], [4, 1]))
        for rn in range(reps_n):
            col = arith.addi(b_col, i32(rn * 8))
            b_frag = fragment(tb, [(arith.addi(t, k0), col, pb[0]), (arith.addi(t4, k0), col, pb[1])], [2, 1])
            for rm in range(reps_m):
                idx = [cd.register(rm, rn, i) for i in range(4)]
                c = vector.FromElementsOp(ir.VectorType.get([2, 2], f32), [regs[i] for i in idx]).result
                d = nvgpu.MmaSyncOp(c.type, a_frags[rm], b_frag, c, [16, 8, 8], tf32Enabled=True).result
                for i, r in enumerate(idx):
                    regs[r] = vector.extract(d, [], [i // 2, i % 2])
    self.map[op.results[0]] = from_elements(regs, f32)
