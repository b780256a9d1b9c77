"""TMA copies for `tile-pipeline` (sm_90a): which pipelined loads can be TMA copies
(`block_access.py` says which block each reads; the specialization must promise
the alignment a tensor map needs), the tensor-map argument each one adds to the
kernel (described in its `tile.tma` attribute for the host), and the
`tile.tma_load` ops that issue one iteration's copies.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from ..dialects import pipeline_ops
from ..dialects.layout import Wgmma, element_bits, encoding_of, shared_panel
from .axis_info import divisible_indices
from .block_access import match_block, start_value
from .loop_slice import body_slice, clone_slice, guard_index_loads


def slot_shape(load, b) -> list[int]:
    """The shape of the ring slot that holds `load`'s tile: the tile, or its transpose for a
    transposed block `b` (a TMA copy keeps the tensor's contiguous dim innermost); b is None
    for a load that is not a TMA copy."""
    shape = list(ir.RankedTensorType(_tile_type(load)).shape)
    if len(shape) == 1:  # a row
        return [1] + shape
    return shape[::-1] if b is not None and b.transposed else shape


def _tile_type(access):
    """The tile a `tile.load` reads or a `tile.store` writes."""
    return access.operands[2].type if access.operation.name == "tile.store" else access.results[0].type


def _wgmma_operand(load) -> bool:
    """Whether every user of `load` reads it as an operand of a wgmma dot, which takes A
    and B either way round (a transposed slot: A M-major, B K-major); mma.sync's ldmatrix
    path does not."""
    return all(u.owner.name == "tile.dot" and isinstance(encoding_of(u.owner.results[0].type), Wgmma)
               for u in load.results[0].uses)


def tma_blocks(found, divisible_args: str) -> list | None:
    """The block (`block_access.py`) each load reads, if every one can be TMA copies
    (`tensor_map_ready`; a transposed block only as an operand of a wgmma dot)."""
    divisible = divisible_indices(divisible_args)
    blocks = []
    for load, _ in found:
        b = match_block(load)
        if (b is None or b.transposed and not _wgmma_operand(load)
                or not tensor_map_ready(b, load.operands[0], slot_shape(load, b), load.results[0].type, divisible)):
            return None
        blocks.append(b)
    return blocks


def tensor_map_ready(b, tensor, shape: list[int], tile_type, divisible: set) -> bool:
    """Whether a tensor map can describe block `b` of kernel tensor `tensor`, moved through
    a shared tile of `shape`: the tensor known 16-byte aligned, bounds and a row stride that
    are kernel arguments or constants, the stride a known multiple of 16 bytes (what a
    tensor map requires), at most 256 rows in panels of 32, 64 or 128 bytes (swizzled, or
    where the rows are not a multiple of 8 not: `shared_panel`), each copy's destination on
    128 bytes (as TMA requires: a 1-row tile of 64 bytes would put its ring's second slot off)."""
    elem = ir.RankedTensorType(tile_type).element_type
    panel, _ = shared_panel(*shape, element_bits(elem))
    if (shape[0] > 256 or shared_panel(8, shape[1], element_bits(elem))[1] == 0
            or shape[0] * panel * element_bits(elem) // 8 % 128
            or _kernel_argument(tensor) not in divisible or any(_reference(v) is None for v in (b.rows, b.cols, b.stride))):
        return False
    kind, value = _reference(b.stride)
    return value in divisible if kind == "arg" else value * element_bits(elem) % 128 == 0


def add_descriptor(access, b) -> ir.Value:
    """A new kernel argument: the pointer to the tensor map of the tensor that `access` (a
    `tile.load`, or a `tile.store`) reads or writes as block `b`, which the host encodes from
    the arguments the function's `tile.tma` entry names; its box: the tile's rows x one
    128-byte panel."""
    fn = access.parent
    while fn.operation.name != "func.func":
        fn = fn.parent
    t = ir.RankedTensorType(_tile_type(access))
    shape = slot_shape(access, b)
    panel, swizzle = shared_panel(*shape, element_bits(t.element_type))
    ptr = ir.Type.parse("!llvm.ptr")
    arg = fn.regions[0].blocks[0].add_argument(ptr, fn.location)
    ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get([*ftype.inputs, ptr], ftype.results))
    i64 = ir.IntegerType.get_signless(64)
    # The tensor as the copy sees it: rows x cols, row-major (a transposed block's tensor is cols x rows).
    rows, cols = (b.cols, b.rows) if b.transposed else (b.rows, b.cols)
    entry = ir.DictAttr.get({
        "tensor": ir.IntegerAttr.get(i64, _kernel_argument(access.operands[0])),
        **{k: ir.StringAttr.get("{}:{}".format(*_reference(v)))
           for k, v in (("rows", rows), ("cols", cols), ("stride", b.stride))},
        "box": ir.ArrayAttr.get([ir.IntegerAttr.get(i64, n) for n in (shape[0], panel)]),
        "swizzle": ir.IntegerAttr.get(i64, swizzle)})
    old = list(ir.ArrayAttr(fn.attributes["tile.tma"])) if "tile.tma" in fn.attributes else []
    fn.attributes["tile.tma"] = ir.ArrayAttr.get(old + [entry])
    return arg


def start_slice(found, blocks) -> list:
    """The ops of the K loop's body that compute the blocks' starts."""
    loop = found[0][0].parent
    body = loop.regions[0].blocks[0]
    starts = [x for b in blocks for x, _ in (b.row, b.col) if x is not None]
    return body_slice(starts, body, loop, body.arguments[0]) or []


def issue_tma(found, blocks, rings, bars, descs, slot, it, ub, ip, outer=None, also=None):
    """The TMA copies of iteration `it` into `slot`: one `tile.tma_load` per load, at the
    block's start evaluated at `it` (a bound of 0 or less moves it out of bounds: zeros).
    `outer` maps values of an enclosing loop's body to their clones at another of its
    iterations (`next_tile_copies.py`), whose copies are live only where `also` holds."""
    body = found[0][0].parent.regions[0].blocks[0]
    mapping = {**(outer or {}), body.arguments[0]: it}

    def liveness():
        ok = arith.cmpi(arith.CmpIPredicate.slt, it, ub)
        return ok if also is None else arith.andi(ok, also)

    cloned = start_slice(found, blocks)
    clone_slice(cloned, mapping, ip)
    guard_index_loads(cloned, mapping, liveness)
    with ip:
        live = liveness()
        for (load, _), b, ring, desc in zip(found, blocks, rings, descs):
            t, shape = ir.RankedTensorType(load.results[0].type), slot_shape(load, b)
            row, col = (_coordinate(start, bound, mapping) for start, bound in ((b.row, b.rows), (b.col, b.cols)))
            if b.transposed:
                row, col = col, row
            panel, swizzle = shared_panel(*shape, element_bits(t.element_type))
            pipeline_ops.tma_load(ring, slot, bars, desc, row, col, live, [shape[0], panel], swizzle)


def _kernel_argument(v) -> int | None:
    """The argument number of v if it is an argument of the kernel function."""
    if isinstance(v.owner, ir.Block) and v.owner.owner is not None and v.owner.owner.operation.name == "func.func":
        return v.arg_number
    return None


def _reference(v) -> tuple[str, int] | None:
    """How the host finds a scalar's value: ("arg", N) (kernel argument N) or ("const", V)."""
    n = _kernel_argument(v)
    if n is not None:
        return "arg", n
    if not isinstance(v.owner, ir.Block) and v.owner.operation.name == "arith.constant":
        return "const", ir.IntegerAttr(v.owner.attributes["value"]).value
    return None


def _coordinate(start, bound, mapping):
    """start = (value or None, constant) at the issued iteration, as an i32; pushed far out of
    bounds when `bound` (not a positive constant) is 0 or less, since a tensor map's dims are >= 1."""
    i32 = ir.IntegerType.get_signless(32)
    v = start_value(start, mapping)
    ref = _reference(bound)
    if ref is not None and ref[0] == "const" and ref[1] > 0:
        return v
    positive = arith.cmpi(arith.CmpIPredicate.sgt, bound, arith.ConstantOp(i32, 0).result)
    return arith.select(positive, v, arith.ConstantOp(i32, 1 << 30).result)
