"""`tile-trans-loads`: a transposed load that only a dot in a pipelined loop reads becomes
a load of the transposed offsets, so that the transpose costs nothing: the offsets, mask and `other` are index values (any
thread recomputes them at any coordinate), and the loaded data lands where it is read.

    # before
    %k = "tile.load"(%K, %offs, %mask, %other) : (..., tensor<64x128xi32>, ...) -> tensor<64x128xf16>
    %kt = "tile.trans"(%k) {permutation = array<i32: 1, 0>} : (tensor<64x128xf16>) -> tensor<128x64xf16>
    # after
    %offs_t = "tile.trans"(%offs) {permutation = array<i32: 1, 0>} : (tensor<64x128xi32>) -> tensor<128x64xi32>
    (%mask_t, %other_t likewise)
    %kt = "tile.load"(%K, %offs_t, %mask_t, %other_t) : (...) -> tensor<128x64xf16>

Attention's `dot(q, k.T)` with K stored row-major is then the load of K^T through its
strides that the tensor-core pipeline copies into a transposed shared-memory slot
(`transposed_copies.py`), instead of a register tile sent through shared memory to
be transposed, then written to shared memory again for the dot. Our own pass: the
transpose is a `tile` op, which no upstream pattern knows.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..dialects import tile_ops
from .index_values import is_elementwise
from .registry import register_pass
from .walk import collect, in_loop


def _permuted_type(t, perm):
    t = ir.RankedTensorType(t)
    return ir.RankedTensorType.get([t.shape[p] for p in perm], t.element_type)


def transposed(v, perm, memo: dict):
    """v with its dims permuted, rebuilt from its own ops where they are shape ops and
    elementwise ones, so that the offsets keep the form block analysis reads
    (`rm[:, None] + rk[None, :] * s` transposed is `rm[None, :] + rk[:, None] * s`):

        # trans(splat s : RxC) -> splat s : CxR
        # trans(broadcast x : Rx1 -> RxC) -> broadcast trans(x) : 1xR -> CxR
        # trans(reshape v : R -> Rx1) -> reshape v : R -> 1xR
        # trans(addi a, b) -> addi trans(a), trans(b)
        # anything else -> tile.trans
    """
    if v in memo:
        return memo[v]
    op = None if isinstance(v.owner, ir.Block) else v.owner.operation
    shape = [ir.RankedTensorType(v.type).shape[p] for p in perm]
    if op is not None and op.name == "tile.splat":
        out = tile_ops.splat(op.operands[0], shape)
    elif op is not None and op.name == "arith.constant" and ir.DenseElementsAttr(op.attributes["value"]).is_splat:
        attr = ir.DenseElementsAttr(op.attributes["value"])
        out = ir.Operation.create("arith.constant", results=[_permuted_type(v.type, perm)], attributes={
            "value": ir.DenseElementsAttr.get_splat(_permuted_type(v.type, perm), attr.get_splat_value())}).result
    elif op is not None and op.name == "tile.broadcast":
        out = tile_ops.broadcast(transposed(op.operands[0], perm, memo), shape)
    elif op is not None and op.name == "tile.reshape" and sum(d != 1 for d in shape) <= 1:
        out = tile_ops.reshape(op.operands[0], shape)  # (only unit dims move)
    elif op is not None and is_elementwise(op) and all(isinstance(o.type, ir.RankedTensorType) for o in op.operands):
        out = ir.Operation.create(op.name, results=[_permuted_type(v.type, perm)],
                                  operands=[transposed(o, perm, memo) for o in op.operands],
                                  attributes={name: op.attributes[name] for name in op.attributes}).result
    else:
        out = tile_ops.trans(v, perm)
    memo[v] = out
    return out


def load_like(load, offsets, mask, other, loc=None) -> ir.Value:
    """A load of `load`'s tensor through other offsets, mask and `other`, with its cache hints,
    before it (at `loc`, else its own location)."""
    with ir.InsertionPoint(load), loc or load.location:
        loaded = tile_ops.load(load.operands[0], offsets, mask, other)
    for name in load.attributes:
        loaded.owner.attributes[name] = load.attributes[name]
    return loaded


def rewrite(trans) -> None:
    load = trans.operands[0].owner
    perm, memo = tile_ops.permutation_of(trans), {}
    with ir.InsertionPoint(load), trans.location:
        operands = [transposed(v, perm, memo) for v in list(load.operands)[1:]]
    trans.results[0].replace_all_uses_with(load_like(load, *operands, loc=trans.location))
    trans.erase()
    load.erase()


def transposed_load(load, operands) -> ir.Value:
    """trans(load_like(load, *operands)), before `load`: `operands` its transposed offsets, mask, `other`."""
    loaded = load_like(load, *operands)
    with ir.InsertionPoint(load), load.location:
        return tile_ops.trans(loaded, [1, 0])


def load_transposed(load):
    """trans(load of the transposed offsets, mask and `other`): `load` read N x K, K contiguous
    (a K-major B: `tile-fp8-dots`, `tile-k-major-loads`)."""
    memo: dict = {}
    with ir.InsertionPoint(load), load.location:
        operands = [transposed(v, [1, 0], memo) for v in list(load.operands)[1:]]
    back = transposed_load(load, operands)
    if len(list(load.results[0].uses)) == 1:  # (the dot, about to read `back`)
        load.results[0].replace_all_uses_with(back)
        load.erase()
    return back


def applies(trans) -> bool:
    """A transpose of a load read by nothing else, that only a dot in a loop reads: a
    pipelined operand. (Elsewhere the transposed load would go element by element, as
    layouts vectorize the last dim, where the load and the transpose through shared
    memory move 16 bytes at a time.)"""
    src = trans.operands[0]
    if isinstance(src.owner, ir.Block) or src.owner.name != "tile.load" or len(list(src.uses)) != 1:
        return False
    users = [u.owner for u in trans.results[0].uses]
    return bool(users) and all(u.name == "tile.dot" for u in users) and in_loop(trans)


@register_pass("tile-trans-loads")
@dataclass
class TileTransLoads:
    def run(self, module_op):
        for trans in collect(module_op, ("tile.trans",)):
            if applies(trans):
                rewrite(trans)
