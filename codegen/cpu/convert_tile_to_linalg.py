"""`convert-tile-to-linalg`: tile ops on tiles -> linalg/tensor/scf on tensors.

Our own pass: upstream has no lowering for a dialect it does not know. It
rewrites only tile ops; the elementwise `arith`/`math` ops on tensors are left
for upstream `convert-elementwise-to-linalg`, and `tile.program_id` /
`tile.num_programs` for the target's launch pass (grid loops on the CPU,
block ids on a GPU). Layout encodings are dropped: from here on the IR is
target-neutral tensors and buffers.

Each op's lowering is registered by its name (`@lowering("tile.load", target="cpu")`,
`common/lowerings.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, bufferization, linalg, memref, tensor

from ...dialects.tile_ops import is_tf32, permutation_of
from ...passes.fp8_dots import is_fp8_dot, widen_to_f16
from ...passes.registry import register_pass
from ...passes.walk import collect, walk
from .float_sums import halve_float_sum
from ..common.lowerings import lowering, lowerings
from ..common.ir_builders import combine, const_index, flat_view, if_else, parallel_loop, to_index
from ..common.tf32_rounding import round_to_tf32


def _identity(rank):
    return ir.AffineMap.get_identity(rank)


def generic(result_types, inputs, outputs, maps, iterators, body):
    """Build a linalg.generic whose payload is `body(*block_args) -> yielded values`."""
    op = linalg.GenericOp(
        result_types, inputs, outputs,
        ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
        ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{it}>") for it in iterators]),
    )
    types = [ir.ShapedType(v.type).element_type for v in [*inputs, *outputs]]
    block = op.regions[0].blocks.append(*types)
    with ir.InsertionPoint(block):
        linalg.YieldOp(list(body(*block.arguments)))
    return op


def empty(shape, elem):
    return tensor.EmptyOp(shape, elem).result


# ---- one lowering per tile op (more in other files: grep an op's name) -------------------

@lowering("tile.arange", target="cpu")
def lower_arange(op):
    start = ir.IntegerAttr(op.attributes["start"]).value
    ty = ir.RankedTensorType(op.result.type)

    def body(_out):
        i = arith.index_cast(ty.element_type, linalg.IndexOp(0).result)
        return [arith.addi(i, arith.ConstantOp(ty.element_type, start).result)]

    return generic([ty], [], [empty([ty.shape[0]], ty.element_type)], [_identity(1)], ["parallel"], body).result


@lowering("tile.splat", target="cpu")
def lower_splat(op):
    ty = ir.RankedTensorType(op.result.type)
    return linalg.fill(op.operands[0], outs=[empty(list(ty.shape), ty.element_type)])


@lowering("tile.broadcast", target="cpu")
def lower_broadcast(op):
    src, ty = op.operands[0], ir.RankedTensorType(op.result.type)
    src_shape = list(ir.RankedTensorType(src.type).shape)
    rank = len(ty.shape)
    exprs = [ir.AffineConstantExpr.get(0) if s == 1 and d != 1 else ir.AffineDimExpr.get(i)
             for i, (s, d) in enumerate(zip(src_shape, ty.shape))]
    src_map = ir.AffineMap.get(rank, 0, exprs)
    out = empty(list(ty.shape), ty.element_type)
    return generic([ty], [src], [out], [src_map, _identity(rank)], ["parallel"] * rank, lambda x, _o: [x]).result


@lowering("tile.trans", target="cpu")
def lower_trans(op):
    src, ty = op.operands[0], ir.RankedTensorType(op.result.type)
    perm, rank = permutation_of(op), len(ty.shape)
    # out[i_0, ..., i_r] = src[j] with j[perm[k]] = i_k
    exprs = [None] * rank
    for k, p in enumerate(perm):
        exprs[p] = ir.AffineDimExpr.get(k)
    out = empty(list(ty.shape), ty.element_type)
    return generic([ty], [src], [out], [ir.AffineMap.get(rank, 0, exprs), _identity(rank)], ["parallel"] * rank,
                   lambda x, _o: [x]).result


@lowering("tile.reshape", target="cpu")
def lower_reshape(op):
    src, ty = op.operands[0], ir.RankedTensorType(op.result.type)
    src_ty = ir.RankedTensorType(src.type)
    if list(src_ty.shape) == list(ty.shape):
        return src
    n = 1
    for d in ty.shape:
        n *= d
    flat = src
    if src_ty.rank != 1:
        flat = tensor.CollapseShapeOp(ir.RankedTensorType.get([n], ty.element_type), src, [list(range(src_ty.rank))]).result
    if ty.rank == 1:
        return flat
    return tensor.ExpandShapeOp(ty, flat, [list(range(ty.rank))], [], list(ty.shape)).result


def _reduce_identity(kind, elem):
    if isinstance(elem, ir.IntegerType):
        w = elem.width
        v = {"sum": 0, "max": -(1 << (w - 1)), "min": (1 << (w - 1)) - 1}[kind]
        return arith.ConstantOp(elem, v).result
    v = {"sum": 0.0, "max": float("-inf"), "min": float("inf")}[kind]
    return arith.ConstantOp(elem, ir.FloatAttr.get(elem, v)).result


@lowering("tile.reduce", target="cpu")
def lower_reduce(op):
    src = op.operands[0]
    axis = ir.IntegerAttr(op.attributes["axis"]).value
    kind = ir.StringAttr(op.attributes["kind"]).value
    if kind == "sum" and isinstance(ir.RankedTensorType(src.type).element_type, ir.FloatType):
        src = halve_float_sum(src, axis)
    src_ty = ir.RankedTensorType(src.type)
    elem, rank = src_ty.element_type, src_ty.rank
    out_shape = [d for i, d in enumerate(src_ty.shape) if i != axis]
    init = linalg.fill(_reduce_identity(kind, elem), outs=[empty(out_shape, elem)])
    out_map = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(i) for i in range(rank) if i != axis])
    iters = ["reduction" if i == axis else "parallel" for i in range(rank)]
    res = generic([init.type], [src], [init], [_identity(rank), out_map], iters,
                  lambda x, acc: [combine(kind, elem, acc, x)]).result
    return res if out_shape else tensor.ExtractOp(res, []).result


@lowering("tile.load", target="cpu")
def lower_load(op):
    base, offsets, mask, other = op.operands
    flat = flat_view(base)
    elem = ir.MemRefType(base.type).element_type

    def read(off, m, oth):
        return if_else(m, elem, lambda: memref.LoadOp(flat, [to_index(off)]).result, lambda: oth)

    if not isinstance(offsets.type, ir.RankedTensorType):
        return read(offsets, mask, other)
    ty = ir.RankedTensorType(op.result.type)
    rank = ty.rank
    maps = [_identity(rank)] * 4
    return generic([ty], [offsets, mask, other], [empty(list(ty.shape), elem)], maps, ["parallel"] * rank,
                   lambda off, m, oth, _o: [read(off, m, oth)]).result


@lowering("tile.store", target="cpu")
def lower_store(op):
    base, offsets, value, mask = op.operands
    flat = flat_view(base)

    def write(off, v, m):
        if_else(m, None, lambda: memref.StoreOp(v, flat, [to_index(off)]), None)

    if not isinstance(offsets.type, ir.RankedTensorType):
        write(offsets, value, mask)
        return None

    # The mask goes to memory as i8: the LLVM lowering of memref cannot store i1.
    shape = list(ir.RankedTensorType(offsets.type).shape)
    i8 = ir.IntegerType.get_signless(8)
    mask8 = arith.extui(ir.RankedTensorType.get(shape, i8), mask)
    zero8 = arith.ConstantOp(i8, 0).result

    def body(ivs):
        pick = lambda t: tensor.ExtractOp(t, ivs).result  # noqa: E731
        write(pick(offsets), pick(value), arith.cmpi(arith.CmpIPredicate.ne, pick(mask8), zero8))

    parallel_loop(shape, body)
    return None


def _tile_coords(base, indices, shape, ivs):
    """Global coordinates of a tile element, and whether they are inside `base`."""
    coords, inside = [], None
    for d, (ti, b, iv) in enumerate(zip(indices, shape, ivs)):
        c = arith.addi(arith.muli(to_index(ti), const_index(b)), iv)
        ok = arith.cmpi(arith.CmpIPredicate.ult, c, memref.DimOp(base, const_index(d)).result)
        coords.append(c)
        inside = ok if inside is None else arith.andi(inside, ok)
    return coords, inside


@lowering("tile.load_tile", target="cpu")
def lower_load_tile(op):
    base, *indices = op.operands
    ty = ir.RankedTensorType(op.result.type)
    pad = arith.ConstantOp(ty.element_type, op.attributes["padding"]).result
    rank = ty.rank

    def body(_out):
        ivs = [linalg.IndexOp(d).result for d in range(rank)]
        coords, inside = _tile_coords(base, indices, list(ty.shape), ivs)
        return [if_else(inside, ty.element_type, lambda: memref.LoadOp(base, coords).result, lambda: pad)]

    return generic([ty], [], [empty(list(ty.shape), ty.element_type)], [_identity(rank)], ["parallel"] * rank, body).result


@lowering("tile.store_tile", target="cpu")
def lower_store_tile(op):
    base, value, *indices = op.operands
    shape = list(ir.RankedTensorType(value.type).shape)

    def body(ivs):
        coords, inside = _tile_coords(base, indices, shape, ivs)
        if_else(inside, None, lambda: memref.StoreOp(tensor.ExtractOp(value, ivs).result, base, coords), None)

    parallel_loop(shape, body)
    return None


@lowering("tile.dot", target="cpu")
def lower_dot(op):
    a, b, acc = op.operands
    if is_tf32(op):
        a, b = round_to_tf32(a), round_to_tf32(b)
    if is_fp8_dot(op):  # (as tile-fp8-dots does where no float8 wgmma takes it: exactly)
        a, b = widen_to_f16(a), widen_to_f16(b)
    return linalg.matmul(a, b, outs=[acc])


@lowering("tile.gather", target="cpu")
def lower_gather(op):
    # result[..., i, ...] = src[..., index[..., i, ...], ...]: a generic over the index tile
    # whose payload extracts from the source. Indices are taken modulo the source's extent,
    # as on a GPU: an index outside the tile reads some element of it, never other memory.
    src, index = op.operands
    ty = ir.RankedTensorType(op.result.type)
    axis = ir.IntegerAttr(op.attributes["axis"]).value

    extent = ir.RankedTensorType(src.type).shape[axis]

    def body(i, _out):
        i = arith.remui(i, arith.ConstantOp(i.type, extent).result)  # in the tile whatever the index
        at = [to_index(i) if d == axis else linalg.IndexOp(d).result for d in range(ty.rank)]
        return [tensor.ExtractOp(src, at).result]

    maps = [_identity(ty.rank)] * 2
    return generic([ty], [index], [empty(list(ty.shape), ty.element_type)], maps, ["parallel"] * ty.rank, body).result


@lowering("tile.convert_layout", target="cpu")
def lower_convert_layout(op):
    return op.operands[0]


def inline_fused(op):
    """A fusion group { ops; scf.yield %v } -> ops, with the group's results replaced by %v."""
    block = op.regions[0].blocks[0]
    ops = list(block.operations)
    for inner in ops[:-1]:
        inner.move_before(op)
    for res, v in zip(op.results, ops[-1].operands):
        res.replace_all_uses_with(v)
    op.erase()


def _carried_through(v, arg) -> bool:
    """v is an inner loop's result whose iter_arg starts as `arg`: that loop already yields
    into arg's buffer (a second copy there is a conflict bufferization cannot resolve)."""
    if not isinstance(v, ir.OpResult) or v.owner.name != "scf.for":
        return False
    return list(v.owner.operands)[3 + v.result_number] == arg


def carry_in_place(loop):
    """Yield each loop-carried tile into its own iter_arg's buffer.

    Bufferization needs a yielded tensor to be equivalent to its iter_arg; a
    fresh one would need a new buffer per iteration, whose ownership-based
    deallocation lowers to i1 memrefs that the LLVM lowering cannot store.
    """
    body = loop.regions[0 if loop.name == "scf.for" else 1].blocks[0]  # (a while's: its after region)
    yield_op = body.operations[-1]
    args = list(body.arguments)[1 if loop.name == "scf.for" else 0:]
    moves = [(i, v, arg) for i, (v, arg) in enumerate(zip(list(yield_op.operands), args))
             if isinstance(v.type, ir.RankedTensorType) and v != arg and not _carried_through(v, arg)]
    with ir.InsertionPoint(yield_op), yield_op.location:
        sources = []
        for _, v, _ in moves:  # `a, b = b, a`: copy b out before any iter_arg's buffer is overwritten
            ty = ir.RankedTensorType(v.type)
            sources.append(linalg.copy(v, outs=[empty(list(ty.shape), ty.element_type)]) if v in args else v)
        for (i, v, arg), src in zip(moves, sources):
            yield_op.operands[i] = bufferization.materialize_in_destination(v.type, src, arg)


def strip_encodings(module_op):
    def visit(op):
        values = list(op.results)
        for region in op.regions:
            for block in region.blocks:
                values += list(block.arguments)
        for v in values:
            t = v.type
            if isinstance(t, ir.RankedTensorType) and t.encoding is not None:
                v.set_type(ir.RankedTensorType.get(list(t.shape), t.element_type))
        return ir.WalkResult.ADVANCE

    walk(module_op, visit, ir.WalkOrder.PRE_ORDER)


@register_pass("convert-tile-to-linalg")
@dataclass
class ConvertTileToLinalg:
    def run(self, module_op):
        for op in collect(module_op, {"scf.execute_region"}):
            if "tile.fusion_group" in op.attributes:
                inline_fused(op)
        strip_encodings(module_op)
        table = lowerings("cpu")
        for op in collect(module_op, set(table)):
            with ir.InsertionPoint(op), op.location:
                new = table[op.name](op.opview if hasattr(op, "opview") else op)
            if new is not None:
                op.results[0].replace_all_uses_with(new)
            op.erase()
        for loop in collect(module_op, {"scf.for", "scf.while"}):
            carry_in_place(loop)
