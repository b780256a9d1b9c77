"""cp.async copies of a column-major block for `tile-pipeline` (no TMA: sm_80, sm_90,
or a stride a tensor map cannot take).

A load of a column-major block (`block_access.py`: `a + rm[:, None] + rk[None, :] * s`,
the A of `x.T @ y` or the B of `x @ W.T`) is contiguous down its columns, so the
copy of its R x C tile, made in the load's row-major layout, has no two
neighbouring elements of a thread adjacent in memory: it went element by
element. Its ring slot holds the transpose instead (C x R, as a TMA copy of the
block leaves it; the `tile.local_load` is `transposed`), and the copy is made in
that shape, over offsets and a mask built for it:

    # before: offsets rm[:, None] + rk[None, :] * s, R x C, in the load's layout
    # after:  offsets rm[None, :] + rk[:, None] * s, C x R, in a blocked layout
    #         along R: 16-byte runs (`cp.async`) where the stride allows
    ro = r0 + arange(R) ; co = c0 + arange(C)
    offsets = broadcast(reshape(ro, 1 x R)) + broadcast(reshape(co, C x 1)) * s
    mask    = (ro < rows) & (co < cols) & live       (each broadcast to C x R; unsigned for a descriptor's)

The scalars the offsets add (`Block.bases`: a head's start, a pointer's advance) are
added again, in the offsets' own width (i64 where the user's are); a dim the mask does
not bound (its bound None) is not tested. A bound or stride the body computes (mamba's
`offs_k < chunk_size_limit - k`, inside a fusion group) is computed again at the issued
iteration, as the starts are.
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith

from ..dialects import tile_ops
from ..dialects.pipeline_ops import PREFETCH_GUARD
from ..dialects.layout import Blocked, element_bits, encoding_of, with_encoding
from .block_access import Block, _outside_groups, start_value


def _laid_out(v, num_warps: int, bits: int = 32):
    v.set_type(with_encoding(v.type, Blocked.default(list(ir.RankedTensorType(v.type).shape), bits, num_warps)))
    return v


def transposed_copy(load, b: Block, mapping, live) -> tuple[ir.Value, ir.Value]:
    """(offsets, mask) of `load`'s block `b` (transposed) as a C x R tile, at the iteration
    whose loop values `mapping` holds; `live` (i1) is false for an iteration past the end."""
    rows, cols = ir.RankedTensorType(load.results[0].type).shape
    layout = encoding_of(load.results[0].type)
    num_warps = math.prod(layout.warps_per_cta) if isinstance(layout, Blocked) else 4
    bits = element_bits(ir.RankedTensorType(load.results[0].type).element_type)

    def along(start, n: int, shape: list[int], bound):
        vec = _laid_out(arith.addi(_laid_out(tile_ops.arange(0, n), num_warps),
                                   _laid_out(tile_ops.splat(start_value(start, mapping), [n]), num_warps)), num_warps)
        grid = _laid_out(tile_ops.broadcast(_laid_out(tile_ops.reshape(vec, shape), num_warps), [cols, rows]), num_warps, bits)
        if bound is None:  # a whole tile along this dim: no bound to test
            return grid, None
        below = arith.CmpIPredicate.ult if b.unsigned else arith.CmpIPredicate.slt
        inside = arith.cmpi(below, grid, _laid_out(tile_ops.splat(_outside_groups(bound, mapping), [cols, rows]), num_warps, bits))
        return grid, inside

    def splat(scalar):
        return _laid_out(tile_ops.splat(_outside_groups(scalar, mapping), [cols, rows]), num_warps, bits)

    wide = ir.RankedTensorType(load.operands[1].type).element_type  # (the load's offsets: i32 or i64)

    def widened(v):  # (as the load's own offsets widen: each term, its product in its stride's type)
        if ir.RankedTensorType(v.type).element_type == wide:
            return v
        return _laid_out(arith.extsi(ir.RankedTensorType.get([cols, rows], wide), v), num_warps, bits)

    r, r_in = along(b.row, rows, [1, rows], b.rows)
    c, c_in = along(b.col, cols, [cols, 1], b.cols)
    stride = _outside_groups(b.stride, mapping)
    offsets = arith.addi(widened(r), widened(arith.muli(widened(c) if stride.type == wide else c, splat(stride))))
    for base in b.bases:  # (a loop-invariant one hoisted before the loop; a pointer's advance cloned here)
        base = start_value((base, 0), mapping)
        if base.type != wide:
            base = arith.extsi(wide, base)
        offsets = arith.addi(splat(base), offsets)
    bounds = [inside for inside in (r_in, c_in) if inside is not None]
    mask = arith.andi(*bounds) if len(bounds) == 2 else bounds[0] if bounds else None
    if mask is None:
        mask = splat(arith.ConstantOp(ir.IntegerType.get_signless(1), 1).result)
    guarded = arith.andi(mask, splat(live))
    guarded.owner.attributes[PREFETCH_GUARD] = ir.UnitAttr.get()  # (as tile-pipeline's other copies)
    return offsets, guarded
