"""`tile.scan` and `tile.reduce_region` on the CPU: loops over the tile, the combine region
inlined in the innermost one (one program is one thread here: the combines run in order)."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, scf, tensor

from ...dialects.combine_ops import reduced_shape
from ..common.combine_regions import inline_combine
from ..common.ir_builders import const_index
from ..common.lowerings import lowering


def _loops(extents: list[int], carried: list, body) -> list:
    """scf.for over each extent (outer first), carrying `carried`; `body(ivs, carried)` returns
    the next carried values. The loops' results."""
    if not extents:
        return body([], carried)
    loop = scf.ForOp(const_index(0), const_index(extents[0]), const_index(1), carried)
    with ir.InsertionPoint(loop.body):
        iv = loop.induction_variable
        scf.YieldOp(_loops(extents[1:], list(loop.inner_iter_args), lambda ivs, c: body([iv, *ivs], c)))
    return list(loop.results)


def _along(op):
    inputs = list(op.operands)
    shape = list(ir.RankedTensorType(inputs[0].type).shape)
    axis = ir.IntegerAttr(op.attributes["axis"]).value
    return inputs, shape, axis, [d for i, d in enumerate(shape) if i != axis]


def _at(outer: list, axis: int, i) -> list:
    return [*outer[:axis], i, *outer[axis:]]


@lowering("tile.scan", target="cpu")
def lower_scan(op):
    inputs, shape, axis, rest = _along(op)
    n, reverse = shape[axis], ir.BoolAttr(op.attributes["reverse"]).value
    empties = [tensor.EmptyOp(shape, ir.RankedTensorType(v.type).element_type).result for v in inputs]

    def row(outer, outs):
        first = const_index(n - 1 if reverse else 0)
        accs = [tensor.ExtractOp(v, _at(outer, axis, first)).result for v in inputs]
        outs = [tensor.InsertOp(a, o, _at(outer, axis, first)).result for a, o in zip(accs, outs)]

        def step(ivs, carried):
            k = arith.addi(ivs[0], const_index(1))
            i = arith.subi(const_index(n - 2), ivs[0]) if reverse else k
            at = _at(outer, axis, i)
            accs = inline_combine(op, carried[len(inputs):], [tensor.ExtractOp(v, at).result for v in inputs])
            return [tensor.InsertOp(a, o, at).result for a, o in zip(accs, carried)] + accs

        return _loops([n - 1], outs + accs, step)[: len(inputs)]

    results = _loops(rest, empties, row)
    for old, new in zip(op.results, results):
        old.replace_all_uses_with(new)


@lowering("tile.reduce_region", target="cpu")
def lower_reduce_region(op):
    inputs, shape, axis, _ = _along(op)
    n, rest = shape[axis], reduced_shape(op)

    def row(outer):
        accs = [tensor.ExtractOp(v, _at(outer, axis, const_index(0))).result for v in inputs]

        def step(ivs, carried):
            at = _at(outer, axis, arith.addi(ivs[0], const_index(1)))
            return inline_combine(op, carried, [tensor.ExtractOp(v, at).result for v in inputs])

        return _loops([n - 1], accs, step)

    if not rest:
        results = row([])
    else:
        empties = [tensor.EmptyOp(rest, ir.RankedTensorType(v.type).element_type).result for v in inputs]
        results = _loops(rest, empties, lambda outer, outs: [
            tensor.InsertOp(a, o, outer).result for a, o in zip(row(outer), outs)])
    for old, new in zip(op.results, results):
        old.replace_all_uses_with(new)
