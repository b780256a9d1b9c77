"""The ops that combine a tile's elements by a function of the kernel's own (Triton's
`tl.associative_scan` and `tl.reduce`, and `cumsum`, `cumprod`, `xor_sum` built on them).

The combine function is the op's region, as in `scf.reduce` and Triton's `tt.scan`: one
block taking two groups of n scalars (the accumulated values, then the next ones) and
yielding n. Its terminator is `gpu.yield`, the upstream terminator that takes any values
under any parent: an IRDL op cannot be one. IRDL gives each variadic operand one type, so
the n operands (and results) of a tuple are n optional slots, each of its own type (at most
`MAX_OPERANDS`), counted by `operandSegmentSizes` / `resultSegmentSizes`.

Neither op is `pure`: `tile-canonicalize` merges ops by operands and attributes, which
would take `cumsum(x)` and `cumprod(x)` for one op (their regions differ).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import gpu

from .op_definition import create, define
from .tile_ops import _elem, _i32, _int_attr, _shape

MAX_OPERANDS = 8


def _slots(prefix: str, kind: str) -> list[tuple[str, str]]:
    return [(f"{prefix}0", kind)] + [(f"{prefix}{i}", "?" + kind) for i in range(1, MAX_OPERANDS)]


def combine_block(op) -> ir.Block:
    """The combine function's block: args (acc_0 .. acc_n-1, x_0 .. x_n-1), ending in gpu.yield."""
    return op.regions[0].blocks[0]


def combine_yield(values, *, loc=None, ip=None):
    """The combine function's terminator."""
    return gpu.YieldOp(list(values), loc=loc, ip=ip)


def _verify_combine(op, result_shape: list[int], result_kind: str) -> str | None:
    inputs, results = list(op.operands), list(op.results)
    shape, axis = _shape(inputs[0]), _int_attr(op, "axis")
    if not 0 <= axis < len(shape):
        return f"axis {axis} is out of range for a rank-{len(shape)} tile"
    if any(_shape(v) != shape for v in inputs):
        return f"the operands must have one shape, got {[_shape(v) for v in inputs]}"
    if len(results) != len(inputs):
        return f"{len(inputs)} operands need {len(inputs)} results, got {len(results)}"
    for v, r in zip(inputs, results):
        if _shape(r) != result_shape or _elem(r) != _elem(v) or (not result_shape and isinstance(r.type, ir.ShapedType)):
            return f"each result must be {result_kind} of its operand's element type"
    if len(op.regions[0].blocks) != 1:
        return "the combine region must have one block"
    block, elems = combine_block(op), [_elem(v) for v in inputs]
    if [a.type for a in block.arguments] != elems * 2:
        return f"the combine block must take ({', '.join(str(t) for t in elems * 2)})"
    last = list(block.operations)[-1]
    if last.name != "gpu.yield" or [v.type for v in last.operands] != elems:
        return f"the combine block must end in gpu.yield of ({', '.join(str(t) for t in elems)})"


def _segments(n: int) -> ir.Attribute:
    return ir.DenseI32ArrayAttr.get([1] * n + [0] * (MAX_OPERANDS - n))


def _create(name: str, result_types, values, attrs, loc, ip) -> ir.Operation:
    n = len(values)
    attrs = {**attrs, "operandSegmentSizes": _segments(n), "resultSegmentSizes": _segments(n)}
    op = create(name, result_types, values, attrs, regions=1, loc=loc, ip=ip)
    op.regions[0].blocks.append(*([_elem(v) for v in values] * 2))
    return op


def _verify_scan(op):
    return _verify_combine(op, _shape(op.operands[0]), "a tile of its operand's shape")


@define("scan", operands=_slots("input", "tensor"), results=_slots("result", "tensor"),
        attributes=["axis", "reverse"], regions=1, verify=_verify_scan)
def scan(values: list, axis: int, reverse: bool, *, loc=None, ip=None) -> ir.Operation:
    """The inclusive scan of n tiles of one shape along `axis` by the combine region
    (Triton's `tt.scan`): result[i] = combine(result[i - 1], x[i]), from the last element
    down with `reverse`. The caller fills the region (`combine_block`).

    %s:2 = "tile.scan"(%a, %b) ({
    ^bb0(%a0: f32, %b0: f32, %a1: f32, %b1: f32):
      %m = arith.mulf %a1, %a0 : f32
      %f = math.fma %a1, %b0, %b1 : f32
      gpu.yield %m, %f : f32, f32
    }) {axis = 0 : i32, reverse = false, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>,
        resultSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<64xf32>, tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>)
    """
    attrs = {"axis": _i32(axis), "reverse": ir.BoolAttr.get(reverse)}
    return _create("scan", [v.type for v in values], values, attrs, loc, ip)


def reduced_shape(op) -> list[int]:
    shape, axis = _shape(op.operands[0]), _int_attr(op, "axis")
    return shape[:axis] + shape[axis + 1:]


def _verify_reduce_region(op):
    return _verify_combine(op, reduced_shape(op), "the operand reduced along the axis (a scalar from a 1-D tile)")


@define("reduce_region", operands=_slots("input", "tensor"), results=_slots("result", "any"),
        attributes=["axis"], regions=1, verify=_verify_reduce_region)
def reduce_region(values: list, axis: int, *, loc=None, ip=None) -> ir.Operation:
    """The reduction of n tiles of one shape along `axis` by the combine region (Triton's
    `tt.reduce`; `tile.reduce` is the one of sum, max and min); a 1-D tile reduces to scalars.
    The region is taken to be associative and commutative: its order is the target's.

    %m:2 = "tile.reduce_region"(%v, %i) ({
    ^bb0(%v0: f32, %i0: i32, %v1: f32, %i1: i32):
      %gt = arith.cmpf ogt, %v1, %v0 : f32
      %v = arith.select %gt, %v1, %v0 : f32
      %i = arith.select %gt, %i1, %i0 : i32
      gpu.yield %v, %i : f32, i32
    }) {axis = 1 : i32, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>,
        resultSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<8x64xf32>, tensor<8x64xi32>) -> (tensor<8xf32>, tensor<8xi32>)
    """
    shape = _shape(values[0])
    rest = shape[:axis] + shape[axis + 1:]
    types = [ir.RankedTensorType.get(rest, _elem(v)) if rest else _elem(v) for v in values]
    return _create("reduce_region", types, values, {"axis": _i32(axis)}, loc, ip)
