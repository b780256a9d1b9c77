"""Triton's subtiled epilogue, `split(permute(reshape(acc, (M, 2, N // 2)), (0, 2, 1)))`,
as two column slices of the accumulator (a `tile-canonicalize` pattern).

The frontend's `split` picks each half along the new last dim with a `tile.gather`
(`frontend/shape_builtins.py`); through the reshape and permutation that is a gather of
three-dimensional tiles, which no tensor-core layout can name, so a matmul's accumulator
went through shared memory element by element, with the ring of a persistent loop still
live beside it (spills). The same values are the accumulator's columns
h * N/2 .. (h + 1) * N/2 - 1: a gather along its last dim by an index the same in every
row. `tile-assign-layouts` gives such a slice of a tensor-core tile the tensor-core
layout of its own shape (`column_slice_layouts`), in which each thread holds the slice's
elements in registers it already has, and the codegen picks them (`op_tile_gather`):

    %r = "tile.reshape"(%acc) : (tensor<128x128xf32>) -> tensor<128x2x64xf32>
    %t = "tile.trans"(%r) {permutation = array<i32: 0, 2, 1>} : (...) -> tensor<128x64x2xf32>
    %g = "tile.gather"(%t, %one) {axis = 2 : i32} : (..., tensor<128x64x1xi32>) -> tensor<128x64x1xf32>
    %h = "tile.reshape"(%g) : (tensor<128x64x1xf32>) -> tensor<128x64xf32>
    # after: the index is 64 + j in every row
    %i = "tile.broadcast"(%row) : (tensor<1x64xi32>) -> tensor<128x64xi32>
    %h = "tile.gather"(%acc, %i) {axis = 1 : i32} : (tensor<128x128xf32>, tensor<128x64xi32>) -> tensor<128x64xf32>
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from ..dialects import tile_ops
from .int_ranges import constant_int

NO_MATCH = True  # (as tile_canonicalize's patterns)


def _producer(value, name: str):
    op = value.owner
    return op if isinstance(op, ir.OpView) and op.name == name else None


def _halves_source(gather):
    """(the 2-D or wider tile, its half's width) where `gather` picks along the last dim of
    `trans(reshape(x, (..., 2, K)), (..., last, second last))`; else None."""
    trans = _producer(gather.operands[0], "tile.trans")
    reshape = trans and _producer(trans.operands[0], "tile.reshape")
    if reshape is None:
        return None
    x = reshape.operands[0]
    shape, split = list(ir.RankedTensorType(x.type).shape), list(ir.RankedTensorType(reshape.result.type).shape)
    rank = len(split)
    perm = tile_ops.permutation_of(trans)
    if (rank < 2 or split[:-2] != shape[:-1] or split[-2] != 2 or split[-1] * 2 != shape[-1]
            or perm != list(range(rank - 2)) + [rank - 1, rank - 2]
            or ir.IntegerAttr(gather.attributes["axis"]).value != rank - 1):
        return None
    return x, split[-1]


def column_half(op, rewriter):
    # %h = "tile.reshape"(%g : (..., K, 1)) -> (..., K) of %g = gather(trans(reshape(%x)), splat(c), last)
    #   -> %h = "tile.gather"(%x, broadcast(c * K + arange(0, K))) along the last dim
    gather = _producer(op.operands[0], "tile.gather")
    found = gather and _halves_source(gather)
    half = found and constant_int(gather.operands[1])
    if half not in (0, 1) or list(ir.RankedTensorType(op.result.type).shape) != list(
            ir.RankedTensorType(gather.result.type).shape)[:-1]:
        return NO_MATCH
    x, width = found
    shape = list(ir.RankedTensorType(op.result.type).shape)
    with rewriter.ip, op.location:
        index = tile_ops.arange(0, width)
        if half:
            i32 = ir.IntegerType.get_signless(32)
            start = arith.constant(i32, width)
            index = arith.addi(index, tile_ops.splat(start, [width]))
        index = tile_ops.broadcast(tile_ops.reshape(index, [1] * (len(shape) - 1) + [width]), shape)
        picked = tile_ops.gather(x, index, len(shape) - 1)
    rewriter.replace_op(op, [picked])
    return None
