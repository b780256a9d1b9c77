"""`tile.dot` on tensor cores with `mma.sync.m16n8k16` (a method of the GPU `Translator`).

The accumulator lives in the `#tile.mma` layout (`MmaDistribution`): each
warp owns a block of 16 x 8 fragments. The operand tiles are staged in shared
memory, row-major; each thread then reads its A fragments (16 x 16, 8 values)
and B fragments (16 x 8, 4 values) from there and issues one `nvgpu.mma.sync`
per fragment pair and 16-wide step of K (bf16: the `nvvm.mma.sync` op
itself, since nvgpu's cannot lower bf16). First version: operands reach shared
memory through registers, with no `ldmatrix`, swizzling or `cp.async` yet.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, nvgpu, vector

from ..frontend.errors import TileError
from .convert_tile_to_linalg import to_index
from .distributed_layout import MmaDistribution
from .register_vectors import elements, from_elements, i32


def _stage(self, value, buf, base: int, row_stride: int):
    """Every register of a tile into shared memory at base + row * row_stride + col."""
    dist = self.dist(value)
    rows, cols = (elements(c, dist.num_registers) for c in self.coords(dist))
    for v, r, c in zip(elements(self.value(value), dist.num_registers), rows, cols):
        memref.StoreOp(v, buf, [to_index(arith.addi(arith.muli(r, i32(row_stride)), arith.addi(c, i32(base))))])


def _pack(frag, rows: int):
    """Each row of a fragment (two 16-bit values) as one i32, low half first, as PTX wants."""
    one = ir.VectorType.get([1], ir.IntegerType.get_signless(32))
    return [vector.extract(vector.BitCastOp(one, vector.extract(frag, [], [r])).result, [], [0]) for r in range(rows)]


def _mma(a_frag, b_frag, acc: list, elem) -> list:
    """One m16n8k16 step: four f32 accumulators in, four out."""
    f32 = ir.F32Type.get()
    if str(elem) == "f16":
        c = vector.FromElementsOp(ir.VectorType.get([2, 2], f32), acc).result
        d = nvgpu.MmaSyncOp(c.type, a_frag, b_frag, c, [16, 8, 16]).result
        return [vector.extract(d, [], [i // 2, i % 2]) for i in range(4)]
    # bf16: nvgpu.mma.sync cannot lower it, so emit the nvvm op (operands packed in i32).
    struct = ir.Type.parse("!llvm.struct<(f32, f32, f32, f32)>")
    attrs = {
        "layoutA": ir.Attribute.parse("#nvvm.mma_layout<row>"), "layoutB": ir.Attribute.parse("#nvvm.mma_layout<col>"),
        "multiplicandAPtxType": ir.Attribute.parse("#nvvm.mma_type<bf16>"),
        "multiplicandBPtxType": ir.Attribute.parse("#nvvm.mma_type<bf16>"),
        "shape": ir.Attribute.parse("#nvvm.shape<m = 16, n = 8, k = 16>"),
        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([4, 2, 4]),
    }
    operands = _pack(a_frag, 4) + _pack(b_frag, 2) + acc
    d = ir.Operation.create("nvvm.mma.sync", results=[struct], operands=operands, attributes=attrs).result
    return [llvm.ExtractValueOp(f32, d, [i]).result for i in range(4)]


def op_tile_dot(self, op):
    a, b, acc = op.operands
    (M, K), (_, N) = ir.RankedTensorType(a.type).shape, ir.RankedTensorType(b.type).shape
    elem = ir.RankedTensorType(a.type).element_type
    f32 = ir.F32Type.get()
    cd = self.dist(op.results[0])
    if not isinstance(cd, MmaDistribution) or K % 16 or ir.RankedTensorType(acc.type).element_type != f32:
        raise TileError(f"dot of {M}x{K} by {K}x{N} needs an f32 accumulator in the mma layout and K a multiple of 16")
    if str(elem) not in ("f16", "bf16"):
        raise TileError(f"dot on tensor cores takes f16 or bf16 operands, not {elem}")
    buf = self.scratch(elem, M * K + K * N)
    gpu.barrier()
    _stage(self, a, buf, 0, K)
    _stage(self, b, buf, M * K, N)
    gpu.barrier()

    (_, wn), (tm, tn), (reps_m, reps_n) = cd.layout.warps, cd.warp_tile, cd.reps
    group, t = arith.shrui(self.lane, i32(2)), arith.andi(self.lane, i32(3))
    warp_m, warp_n = arith.divui(self.warp, i32(wn)), arith.remui(self.warp, i32(wn))
    row0 = arith.addi(arith.muli(warp_m, i32(tm)), group)  # this thread's first A row
    col0 = arith.addi(arith.muli(warp_n, i32(tn)), group)  # this thread's first B column
    t2 = arith.muli(t, i32(2))
    load = lambda lin: memref.LoadOp(buf, [to_index(lin)]).result  # noqa: E731
    a_ty, b_ty = ir.VectorType.get([4, 2], elem), ir.VectorType.get([2, 2], elem)
    regs = elements(self.value(acc), cd.num_registers)
    for ks in range(K // 16):
        a_frags = []
        for rm in range(reps_m):
            row = arith.addi(row0, i32(rm * 16))
            vals = []
            for i in range(8):  # a_i: row + 8 * ((i >> 1) & 1), column 2t + (i & 1) + 8 * (i >> 2)
                r = arith.addi(row, i32(8 * ((i >> 1) & 1)))
                c = arith.addi(t2, i32(ks * 16 + (i & 1) + 8 * (i >> 2)))
                vals.append(load(arith.addi(arith.muli(r, i32(K)), c)))
            a_frags.append(vector.FromElementsOp(a_ty, vals).result)
        for rn in range(reps_n):
            col = arith.addi(col0, i32(rn * 8))
            vals = []
            for i in range(4):  # b_i: row (k) 2t + (i & 1) + 8 * (i >> 1), column `group`
                k = arith.addi(t2, i32(ks * 16 + (i & 1) + 8 * (i >> 1)))
                vals.append(load(arith.addi(arith.addi(arith.muli(k, i32(N)), col), i32(M * K))))
            b_frag = vector.FromElementsOp(b_ty, vals).result
            for rm in range(reps_m):
                idx = [cd.register(rm, rn, i) for i in range(4)]
                out = _mma(a_frags[rm], b_frag, [regs[j] for j in idx], elem)
                for i, j in enumerate(idx):
                    regs[j] = out[i]
    self.map[op.results[0]] = from_elements(regs, f32)
