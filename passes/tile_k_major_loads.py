"""`tile-k-major-loads`: a 16-bit dot's B (K x N) that a pipelined loop reads through offsets
stepping by one element along K, but not as a block `tile-pipeline` can copy transposed,
becomes the transpose of a load of its N x K transpose, K contiguous:

    # before: W is N x K row-major (an nn.Linear weight, a MoE expert's), read as B = W.T
    %offs = offs_k[:, None] + ((pid_n * BN + arange(BN)) % N)[None, :] * stride_bn   (+ splat(k * BK))
    %b = "tile.load"(%W, %offs, %mask, %zero) : (...) -> tensor<64x128xf16>
    %c = "tile.dot"(%a, %b, %acc)
    # after
    %bt = "tile.load"(%W, %offs_t, %mask_t, %zero_t) : (...) -> tensor<128x64xf16>
    %b2 = "tile.trans"(%bt) {permutation = array<i32: 1, 0>} : (...) -> tensor<64x128xf16>
    %c = "tile.dot"(%a, %b2, %acc) {k_major_b}

Why: a column-major block (`W.T` with block offsets) is copied transposed by `tile-pipeline`
(`transposed_copies.py`), but Triton's own spelling of B = W.T, with the columns wrapped
(`offs_bn % N`, tutorial 03 and vLLM's fused MoE) or gathered, or advanced by pointer
increments, is no such block: it went element by element (scalar `ld.global.b16`, not
pipelined, and spilling at 128x128x64). Its transpose is a row-major tile, K contiguous,
which the pipeline copies with 16-byte cp.async into a ring slot; the dot reads the slot in
place as its transposed B (`codegen/gpu/fp8_operands.py`), as it reads a transposed copy's.
The offsets are index values, rebuilt transposed by `tile-trans-loads`' `transposed`.
Float8 dots do the same in `tile-fp8-dots` ("transposed_load"). Our own pass: upstream has no
tile loads.

A B written as the transpose of a row-major load that something else also reads (attention's
backward: `dot(k, trans(q))` beside `dot(ds_t, q)`, q loaded once a step), which
`tile-trans-loads` cannot turn into a load of its own, is marked alike, as it stands:

    # before
    %q = "tile.load"(%Q, %offs, %mask, %zero) : (...) -> tensor<32x128xbf16>   (D contiguous)
    %qt = "tile.trans"(%q) {permutation = array<i32: 1, 0>} : (...) -> tensor<128x32xbf16>
    %st = "tile.dot"(%k, %qt, %acc)
    # after
    %st = "tile.dot"(%k, %qt, %acc) {k_major_b}

so that wgmma reads q's ring slot K-major in place, where the transpose went through shared
memory element by element (64 scalar 16-bit stores and loads a step, and three barriers).
So too where the load is of a column-major block (Triton's tutorial 06: qT loaded with its
head dim contiguous down the rows, `dot(k, qT)` beside `dot(ds_t, trans(qT))`): its slot
holds the transpose, which the second dot reads in place as its B, N contiguous.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..dialects.layout import element_bits
from .fp8_dots import column_major_load, is_fp8_dot, k_major_load
from .registry import register_pass
from .tile_fuse import K_MAJOR_B
from .tile_trans_loads import load_transposed
from .walk import collect, in_loop


def _sixteen_bit_b(dot):
    """The dot's B, read by it alone, where the dot is a 16-bit one in a loop; else None."""
    b = dot.operands[1]
    if is_fp8_dot(dot) or element_bits(ir.RankedTensorType(b.type).element_type) != 16 or not in_loop(dot):
        return None
    return b if len(list(b.uses)) == 1 else None


def applies(dot) -> bool:
    """A 16-bit dot in a loop whose B is a K-major load (read by nothing else) that
    `tile-pipeline` would not copy transposed."""
    b = _sixteen_bit_b(dot)
    return b is not None and k_major_load(b) and not column_major_load(b)


def transposed_row_major_load(dot) -> bool:
    """A 16-bit dot in a loop whose B (read by it alone) is `tile.trans` of a 2-D load whose
    last dim steps by one element (B's K contiguous, as its ring slot holds it), or of a
    column-major block, which `tile-pipeline` copies transposed (B's N contiguous)."""
    b = _sixteen_bit_b(dot)
    if b is None or isinstance(b.owner, ir.Block) or b.owner.operation.name != "tile.trans":
        return False
    x = b.owner.operation.operands[0]
    return k_major_load(x, axis=1) or column_major_load(x)


@register_pass("tile-k-major-loads")
@dataclass
class TileKMajorLoads:
    def run(self, module_op):
        for dot in collect(module_op, ("tile.dot",)):
            if applies(dot):
                dot.operands[1] = load_transposed(dot.operands[1].owner.operation)
                dot.attributes[K_MAJOR_B] = ir.UnitAttr.get()
            elif transposed_row_major_load(dot):
                dot.attributes[K_MAJOR_B] = ir.UnitAttr.get()
