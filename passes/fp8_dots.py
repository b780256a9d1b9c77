"""`tile-fp8-dots`: where each `tile.dot` of 8-bit tiles is multiplied (Triton's `tl.dot`
of float8e4nv / float8e5 tiles, and of int8 tiles; `frontend/dots.py` makes them).

With `wgmma=1` (sm_90a) a dot that wgmma can take (`Wgmma.for_shape`, K a multiple of
32 in whole swizzled rows) keeps its 8-bit operands: `wgmma.mma_async.m64nNk32.f32.e4m3.e4m3`
(`.e5m2`, or one of each), `m64nNk32.s32.s8.s8` for int8, reads both from shared memory,
both K-major, which 8-bit wgmma requires (it has no transposed form). With `mma=1` (the
distributed codegen) an int8 dot that wgmma does not take keeps its operands too, for
`mma.sync.m16n8k32.s32.s8.s8.s32`, whose fragments `ldmatrix` reads K-major as well (its
`.trans` moves 16-bit elements only). A is K-major as loaded (M x K, K contiguous). B
(K x N) is K-major only as its transpose, N x K: the pass records how it gets there in the
dot's `fp8_b` attribute (the 8-bit B's, int8 too):

- "transposed_copy": B is a load of a column-major block (`b = W.T`, stride_bk == 1,
  `block_access.py`): `tile-pipeline` copies it into a transposed ring slot (N x K,
  K contiguous; cp.async or TMA), as it does a 16-bit B of `x @ W.T` (`k_major_fp8`).
- "transposed_load": B's memory is K-major (its offsets step by 1 along K) but not a
  block `tile-pipeline` copies transposed (tutorial 03's `offs_bn % N` rows, advanced by
  pointer increments): B is loaded as its transpose, N x K with K contiguous (`tile-trans-loads`'
  rebuilt offsets, mask and `other`), and transposed back for the dot; the loop's ring
  holds the N x K tile, which the dot reads in place as B (`codegen/fp8_operands.py`):

      %bt = "tile.load"(%b, %offs_t, %mask_t, %other_t) : (...) -> tensor<128x64xf8E5M2>
      %b2 = "tile.trans"(%bt) {permutation = array<i32: 1, 0>} : (...) -> tensor<64x128xf8E5M2>
      %c = "tile.dot"(%a, %b2, %acc) {fp8_b = "transposed_load"} : (...)

- "transposed_in_shared": B's memory is N-major (stride_bn == 1) or unknown: B is
  loaded into registers as it is, and the dot stores it into shared memory transposed
  (`distributed_dot.py`), element by element.

Elsewhere (sm_80 and sm_90, whose mma.sync has no e4m3 form before sm_89 here, or a
dot wgmma cannot take; on the CPU `convert-tile-to-linalg` does the same) each float8
operand is widened to f16, exactly (every e4m3
and e5m2 value is an f16; their products and sums in the f32 accumulator are
those of the float8 values):

    # before
    %c = "tile.dot"(%a, %b, %acc) : (tensor<64x64xf8E4M3FN>, tensor<64x32xf8E5M2>, tensor<64x32xf32>) -> tensor<64x32xf32>
    # after (no wgmma)
    %a16 = arith.extf %a : tensor<64x64xf8E4M3FN> to tensor<64x64xf16>
    %b16 = arith.extf %b : tensor<64x32xf8E5M2> to tensor<64x32xf16>
    %c = "tile.dot"(%a16, %b16, %acc) : (...) -> tensor<64x32xf32>

An int8 dot is never widened (an f32 sum of int8 products is exact only below 2^24): on the
CPU and on the linalg codegen a matmul sums them in int32.

It runs before `tile-assign-layouts` (which gives a kept dot the wgmma layout) and after
`tile-trans-loads` (which makes `dot(a, w.T)` a load of w's transposed offsets).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith

from ..dialects.layout import Mma, Wgmma, element_bits, encoding_of
from .block_access import match_block, match_copy_block, unit_stride_axis
from .registry import register_pass
from .tile_trans_loads import load_transposed
from .walk import collect

FLOAT8 = ("f8E4M3FN", "f8E5M2")
B_ATTR = "fp8_b"


def is_fp8_dot(dot) -> bool:
    return any(str(ir.RankedTensorType(dot.operands[i].type).element_type) in FLOAT8 for i in (0, 1))


def is_int8_dot(dot) -> bool:
    return str(ir.RankedTensorType(dot.operands[0].type).element_type) == "i8"


def column_major_load(v) -> bool:
    """Whether `v` is a `tile.load` of a column-major block, which a copy can land transposed."""
    if isinstance(v.owner, ir.Block) or v.owner.operation.name != "tile.load":
        return False
    load = v.owner.operation
    block = match_block(load)
    return match_copy_block(load) is not None and (block is None or block.transposed)


def k_major_fp8(load, users) -> bool:
    """Whether `tile-pipeline` may copy `load`, an 8-bit operand of tensor-core dots (`users`:
    (dot, operand number) pairs: float8 wgmma, int8 wgmma or mma.sync), into ring slots:
    where its slot is K-major, as those read it. An A (M x K) from a row-major block, a B
    (K x N) from a column-major one (its slot holds the transpose, N x K), both with
    cp.async (`match_copy_block`) and with TMA (`match_block`)."""
    t = ir.RankedTensorType(load.results[0].type)
    if element_bits(t.element_type) != 8:
        return False
    copy, block = match_copy_block(load), match_block(load)
    for dot, n in users:
        want = n == 1  # (B transposed)
        layout = encoding_of(dot.results[0].type)
        if not (isinstance(layout, Wgmma) or is_int8_dot(dot) and isinstance(layout, Mma)) or (copy is not None) != want \
                or block is not None and block.transposed != want:
            return False
    return True


def k_major_load(v, axis: int = 0) -> bool:
    """Whether `v` is a 2-D `tile.load` through offsets that step by one element along K (dim 0;
    `axis=1`: along its last dim, a row-major tile)."""
    if isinstance(v.owner, ir.Block) or v.owner.operation.name != "tile.load":
        return False
    return ir.RankedTensorType(v.type).rank == 2 and unit_stride_axis(v.owner.operation.operands[1]) == axis


def widen_to_f16(v):
    """A float8 tile as f16 (exact)."""
    t = ir.RankedTensorType(v.type)
    return arith.extf(ir.RankedTensorType.get(list(t.shape), ir.F16Type.get(), t.encoding), v)


@register_pass("tile-fp8-dots")
@dataclass
class TileFp8Dots:
    wgmma: bool = False  # sm_90a
    mma: bool = False  # the distributed codegen: int8 dots kept for mma.sync where wgmma cannot take them
    num_warps: int = 4

    def run(self, module_op):
        for dot in collect(module_op, ("tile.dot",)):
            int8 = is_int8_dot(dot)
            if not is_fp8_dot(dot) and not int8:
                continue
            a = ir.RankedTensorType(dot.operands[0].type)
            shape = list(ir.RankedTensorType(dot.results[0].type).shape)
            if self.wgmma and Wgmma.takes_k(a.shape[1], element_bits(a.element_type)) \
                    and Wgmma.for_shape(shape, self.num_warps) or int8 and self.mma:
                how = "transposed_copy" if column_major_load(dot.operands[1]) else "transposed_in_shared"
                if how == "transposed_in_shared" and k_major_load(dot.operands[1]):
                    how = "transposed_load"
                    dot.operands[1] = load_transposed(dot.operands[1].owner.operation)
                dot.attributes[B_ATTR] = ir.StringAttr.get(how)
                continue
            if int8:
                continue  # (summed in int32 by the matmul it lowers to)
            with ir.InsertionPoint(dot), dot.location:
                for i in (0, 1):
                    dot.operands[i] = widen_to_f16(dot.operands[i])
