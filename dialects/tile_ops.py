"""The ops of the `tile` dialect: one definition each, with its MLIR form.

Tiles are builtin ranked tensors with static shapes (optionally carrying a
`#tile.blocked` layout encoding); global tensors are strided memrefs.
Elementwise math, comparisons, casts and `where` are upstream `arith`/`math`
ops applied to tensors, so they need no tile op.
"""

from __future__ import annotations

import math

from mlir import ir

from .op_definition import create, define

# A unit attribute on an elementwise `arith`/`math` op: compute it to full precision on a GPU too
# (a libdevice function, `div_rn`, `sqrt_rn`), not by the fast form `codegen/gpu/fast_math.py` gives it.
ACCURATE = "tile.accurate"
# A unit attribute on a `tile.dot` whose A is computed in registers (`dot_scaled`'s upcast operand): on
# sm_90a it takes the accumulator's wgmma layout and goes to wgmma from registers, not through shared memory.
REGISTERS_A = "tile.registers_a"


def _tensor(v) -> ir.RankedTensorType | None:
    t = v.type if hasattr(v, "type") else v
    return ir.RankedTensorType(t) if isinstance(t, ir.RankedTensorType) else None


def _shape(v) -> list[int]:
    t = _tensor(v)
    return list(t.shape) if t else []


def _elem(v) -> ir.Type:
    t = _tensor(v)
    return t.element_type if t else v.type


def _int_attr(op: ir.Operation, name: str) -> int:
    return ir.IntegerAttr(op.attributes[name]).value


def _verify_program_axis(op):
    if _int_attr(op, "axis") not in (0, 1, 2):
        return "axis must be 0, 1 or 2"


@define("program_id", results=[("pid", "i32")], attributes=["axis"], verify=_verify_program_axis, pure=True)
def program_id(axis: int, *, loc=None, ip=None) -> ir.Value:
    """The index of this program along `axis` of the launch grid.

    %pid = "tile.program_id"() {axis = 0 : i32} : () -> i32
    """
    return create("program_id", [ir.IntegerType.get_signless(32)], [], {"axis": _i32(axis)}, loc=loc, ip=ip).result


@define("num_programs", results=[("n", "i32")], attributes=["axis"], verify=_verify_program_axis, pure=True)
def num_programs(axis: int, *, loc=None, ip=None) -> ir.Value:
    """The number of programs along `axis` of the launch grid.

    %n = "tile.num_programs"() {axis = 0 : i32} : () -> i32
    """
    return create("num_programs", [ir.IntegerType.get_signless(32)], [], {"axis": _i32(axis)}, loc=loc, ip=ip).result


def _verify_arange(op):
    start, end = _int_attr(op, "start"), _int_attr(op, "end")
    n = end - start
    if n <= 0 or n & (n - 1):
        return f"arange length {n} (end - start) must be a positive power of two"
    if _shape(op.result) != [n]:
        return f"result must be tensor<{n}xi32>"


@define("arange", results=[("tile", "tensor")], attributes=["start", "end"], verify=_verify_arange, pure=True)
def arange(start: int, end: int, *, loc=None, ip=None) -> ir.Value:
    """The integers start, ..., end - 1 as a 1-D tile; the length is a power of two.

    %r = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
    """
    ty = ir.RankedTensorType.get([end - start], ir.IntegerType.get_signless(32))
    return create("arange", [ty], [], {"start": _i32(start), "end": _i32(end)}, loc=loc, ip=ip).result


def _verify_splat(op):
    if _tensor(op.operands[0]) is not None:
        return "operand must be a scalar"
    if _elem(op.result) != op.operands[0].type:
        return "result element type must match the scalar's type"


@define("splat", operands=[("value", "any")], results=[("tile", "tensor")], verify=_verify_splat, pure=True)
def splat(value: ir.Value, shape: list[int], *, loc=None, ip=None) -> ir.Value:
    """A tile of the given shape filled with one scalar.

    %t = "tile.splat"(%x) : (f32) -> tensor<128xf32>
    """
    return create("splat", [ir.RankedTensorType.get(shape, value.type)], [value], loc=loc, ip=ip).result


def _verify_broadcast(op):
    src, dst = _shape(op.operands[0]), _shape(op.result)
    if len(src) != len(dst) or any(s not in (1, d) for s, d in zip(src, dst)):
        return f"cannot broadcast {src} to {dst}: dims must be equal or 1 in the source"
    if _elem(op.operands[0]) != _elem(op.result):
        return "element types differ"


@define("broadcast", operands=[("tile", "tensor")], results=[("result", "tensor")], verify=_verify_broadcast, pure=True)
def broadcast(value: ir.Value, shape: list[int], *, loc=None, ip=None) -> ir.Value:
    """Repeat the size-1 dims of a tile to reach `shape` (same rank).

    %b = "tile.broadcast"(%t) : (tensor<1x64xf32>) -> tensor<32x64xf32>
    """
    return create("broadcast", [ir.RankedTensorType.get(shape, _elem(value))], [value], loc=loc, ip=ip).result


def _verify_reshape(op):
    src, dst = _shape(op.operands[0]), _shape(op.result)
    if math.prod(src) != math.prod(dst):
        return f"reshape from {src} to {dst} changes the number of elements"


@define("reshape", operands=[("tile", "tensor")], results=[("result", "tensor")], verify=_verify_reshape, pure=True)
def reshape(value: ir.Value, shape: list[int], *, loc=None, ip=None) -> ir.Value:
    """The same elements, in row-major order, with another static shape.

    %r = "tile.reshape"(%t) : (tensor<64xf32>) -> tensor<1x64xf32>
    """
    return create("reshape", [ir.RankedTensorType.get(shape, _elem(value))], [value], loc=loc, ip=ip).result


def permutation_of(op: ir.Operation) -> list[int]:
    return list(ir.DenseI32ArrayAttr(op.attributes["permutation"]))


def _verify_trans(op):
    src, perm = _shape(op.operands[0]), permutation_of(op)
    if sorted(perm) != list(range(len(src))):
        return f"permutation {perm} is not a permutation of the {len(src)} dims"
    if _shape(op.result) != [src[p] for p in perm] or _elem(op.result) != _elem(op.operands[0]):
        return f"result must have shape {[src[p] for p in perm]} and the operand's element type"


@define("trans", operands=[("tile", "tensor")], results=[("result", "tensor")], attributes=["permutation"],
        verify=_verify_trans, pure=True)
def trans(value: ir.Value, permutation: list[int], *, loc=None, ip=None) -> ir.Value:
    """Permute a tile's dims: result dim k is operand dim permutation[k] (torch's permute).

    %t = "tile.trans"(%x) {permutation = array<i32: 1, 0>} : (tensor<32x64xf32>) -> tensor<64x32xf32>
    """
    shape = _shape(value)
    ty = ir.RankedTensorType.get([shape[p] for p in permutation], _elem(value))
    return create("trans", [ty], [value], {"permutation": ir.DenseI32ArrayAttr.get(permutation)}, loc=loc, ip=ip).result


REDUCE_KINDS = ("sum", "max", "min")


def _verify_reduce(op):
    src, axis = _shape(op.operands[0]), _int_attr(op, "axis")
    kind = ir.StringAttr(op.attributes["kind"]).value
    if kind not in REDUCE_KINDS:
        return f"kind must be one of {', '.join(REDUCE_KINDS)}"
    if not 0 <= axis < len(src):
        return f"axis {axis} is out of range for a rank-{len(src)} tile"
    want = src[:axis] + src[axis + 1 :]
    if _shape(op.result) != want or _elem(op.result) != _elem(op.operands[0]):
        return f"result must have shape {want} and the operand's element type"


@define("reduce", operands=[("tile", "tensor")], results=[("result", "any")], attributes=["axis", "kind"], verify=_verify_reduce, pure=True)
def reduce(value: ir.Value, axis: int, kind: str, *, loc=None, ip=None) -> ir.Value:
    """Reduce a tile along `axis` with sum, max or min; a 1-D tile reduces to a scalar.

    %s = "tile.reduce"(%t) {axis = 1 : i32, kind = "sum"} : (tensor<4x64xf32>) -> tensor<4xf32>
    """
    shape = _shape(value)
    rest = shape[:axis] + shape[axis + 1 :]
    ty = ir.RankedTensorType.get(rest, _elem(value)) if rest else _elem(value)
    attrs = {"axis": _i32(axis), "kind": ir.StringAttr.get(kind)}
    return create("reduce", [ty], [value], attrs, loc=loc, ip=ip).result


def _verify_gather(op):
    src, index, axis = _shape(op.operands[0]), _shape(op.operands[1]), _int_attr(op, "axis")
    if len(src) != len(index) or not 0 <= axis < len(src):
        return f"gather needs a source and an index tile of one rank and an axis of it, got {src}, {index}, axis {axis}"
    if any(s != i for d, (s, i) in enumerate(zip(src, index)) if d != axis):
        return f"gather's index {index} must match the source {src} in every dim but the axis ({axis})"
    if not isinstance(_elem(op.operands[1]), ir.IntegerType) or _shape(op.result) != index or _elem(op.result) != _elem(op.operands[0]):
        return "gather takes an integer index tile and returns the source's element type in the index's shape"


@define("gather", operands=[("src", "tensor"), ("index", "tensor")], results=[("result", "tensor")], attributes=["axis"],
        verify=_verify_gather, pure=True)
def gather(src, index, axis: int, *, loc=None, ip=None) -> ir.Value:
    """Elements of a tile picked along `axis` by an index tile (Triton's `tl.gather`):
    result[i, j] = src[index[i, j], j] for axis 0, an index taken modulo the source's extent.

    %g = "tile.gather"(%t, %idx) {axis = 0 : i32} : (tensor<2048xf16>, tensor<2048xi32>) -> tensor<2048xf16>
    """
    ty = ir.RankedTensorType.get(_shape(index), _elem(src))
    return create("gather", [ty], [src, index], {"axis": _i32(axis)}, loc=loc, ip=ip).result


def _verify_gather_operands(op, value_type, offsets, mask):
    if _shape(offsets) != _shape(mask) or _shape(offsets) != _shape(value_type):
        return "offsets, mask and value must have the same shape"
    if not isinstance(_elem(offsets), ir.IntegerType):
        return "offsets must be integers"
    if _elem(mask) != ir.IntegerType.get_signless(1):
        return "mask must be i1"
    memref = ir.MemRefType(op.operands[0].type)
    if memref.element_type != _elem(value_type):
        return f"element type {_elem(value_type)} does not match the tensor's {memref.element_type}"


def _verify_load(op):
    _, offsets, mask, other = op.operands
    return _verify_gather_operands(op, op.result, offsets, mask) or (
        "other must have the result's shape and element type"
        if _shape(other) != _shape(op.result) or _elem(other) != _elem(op.result) else None
    )


@define(
    "load",
    operands=[("base", "memref"), ("offsets", "any"), ("mask", "any"), ("other", "any")],
    results=[("result", "any")],
    verify=_verify_load,
)
def load(base, offsets, mask, other, *, loc=None, ip=None) -> ir.Value:
    """Gather `base.flat[offsets]` where `mask` holds, `other` elsewhere (Triton form).

    Offsets count elements from the tensor's first element, like Triton pointers.

    %v = "tile.load"(%x, %offs, %mask, %other)
        : (memref<?xf32, strided<[?], offset: ?>>, tensor<128xi32>, tensor<128xi1>, tensor<128xf32>) -> tensor<128xf32>
    """
    return create("load", [other.type], [base, offsets, mask, other], loc=loc, ip=ip).result


def _verify_store(op):
    _, offsets, value, mask = op.operands
    return _verify_gather_operands(op, value, offsets, mask)


@define("store", operands=[("base", "memref"), ("offsets", "any"), ("value", "any"), ("mask", "any")], verify=_verify_store)
def store(base, offsets, value, mask, *, loc=None, ip=None) -> ir.Operation:
    """Scatter `value` to `base.flat[offsets]` where `mask` holds (Triton form).

    "tile.store"(%y, %offs, %v, %mask)
        : (memref<?xf32, strided<[?], offset: ?>>, tensor<128xi32>, tensor<128xf32>, tensor<128xi1>) -> ()
    """
    return create("store", [], [base, offsets, value, mask], loc=loc, ip=ip)


# The ops that write a tensor argument (what must not be read ahead of them, nor as constant).
def _verify_print(op):
    t = op.operands[0].type
    elem = ir.RankedTensorType(t).element_type if isinstance(t, ir.RankedTensorType) else t
    if not isinstance(elem, (ir.IntegerType, ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type)):
        return f"cannot print a value of type {t}"


@define("assert_fail", operands=[], attributes=["message"])
def assert_fail(message: str, *, loc=None, ip=None) -> ir.Operation:
    """A failed `device_assert`, under the `scf.if` that tests it: `message` printed with the
    program id, then the CPU launcher raises (a GPU traps).

    "tile.assert_fail"() {message = "k.py:12: device_assert failed: x > 0"} : () -> ()
    """
    return create("assert_fail", [], [], {"message": ir.StringAttr.get(message)}, loc=loc, ip=ip)


@define("print", operands=[("value", "any")], attributes=["prefix"], verify=_verify_print)
def print_(value, prefix: str, *, loc=None, ip=None) -> ir.Operation:
    """Print every element of a tile (or a scalar) with its program id and index, after
    `prefix`, when the kernel runs (Triton's `device_print`).

    "tile.print"(%x) {prefix = "x: "} : (tensor<8xf32>) -> ()
    """
    return create("print", [], [value], {"prefix": ir.StringAttr.get(prefix)}, loc=loc, ip=ip)


WRITES = ("tile.store", "tile.store_tile", "tile.atomic_rmw", "tile.atomic_cas")

# kind -> the element types it takes (Triton's `tl.atomic_*`; 16-bit float adds need sm_90 on a GPU)
ATOMIC_KINDS = {
    "add": ("f32", "i32", "i64", "f64", "f16", "bf16"),
    "max": ("i32", "i64", "f32", "f64"), "min": ("i32", "i64", "f32", "f64"),
    "and": ("i32", "i64"), "or": ("i32", "i64"), "xor": ("i32", "i64"),
    "xchg": ("i32", "i64", "f32", "f64"),
    # Triton's atomic_load / atomic_store: the value read (its operand unused), the value written
    "load": ("i32", "i64", "f32", "f64", "f16", "bf16"), "store": ("i32", "i64", "f32", "f64", "f16", "bf16"),
}
CAS_TYPES = ("i32", "i64", "f32", "f64")
ATOMIC_SEMS = ("acq_rel", "acquire", "release", "relaxed")  # Triton's `sem=`, its default first
ATOMIC_SCOPES = ("gpu", "cta", "sys")  # Triton's `scope=`, its default first


def _verify_ordering(op):
    sem, scope = (ir.StringAttr(op.attributes[a]).value for a in ("sem", "scope"))
    if sem not in ATOMIC_SEMS:
        return f"sem must be one of {', '.join(ATOMIC_SEMS)}, got {sem}"
    if scope not in ATOMIC_SCOPES:
        return f"scope must be one of {', '.join(ATOMIC_SCOPES)}, got {scope}"


def _verify_atomic_rmw(op):
    _, offsets, value, mask = op.operands
    kind = ir.StringAttr(op.attributes["kind"]).value
    if kind not in ATOMIC_KINDS:
        return f"kind must be one of {', '.join(ATOMIC_KINDS)}, got {kind}"
    if str(_elem(value)) not in ATOMIC_KINDS[kind]:
        return f"atomic {kind} takes {' or '.join(ATOMIC_KINDS[kind])} values, got {_elem(value)}"
    if op.result.type != value.type:
        return "the result must have the value's type"
    return _verify_ordering(op) or _verify_gather_operands(op, value, offsets, mask)


def _orderings(sem: str, scope: str) -> dict:
    return {"sem": ir.StringAttr.get(sem), "scope": ir.StringAttr.get(scope)}


@define("atomic_rmw", operands=[("base", "memref"), ("offsets", "any"), ("value", "any"), ("mask", "any")],
        results=[("old", "any")], attributes=["kind", "sem", "scope"], verify=_verify_atomic_rmw)
def atomic_rmw(kind: str, base, offsets, value, mask, sem: str = "acq_rel", scope: str = "gpu", *, loc=None,
               ip=None) -> ir.Value:
    """Atomically combine `value` into `base.flat[offsets]` where `mask` holds (Triton's
    `tl.atomic_add` / `max` / `min` / `and` / `or` / `xor` / `xchg`), each element once; the
    result holds the elements' old values (0 where the mask is false). `sem` and `scope` are
    the PTX memory order and scope (`atom.acq_rel.gpu...`).

    %old = "tile.atomic_rmw"(%y, %offs, %v, %mask) {kind = "add", scope = "gpu", sem = "acq_rel"}
        : (memref<?xf32, strided<[?], offset: ?>>, tensor<128xi32>, tensor<128xf32>, tensor<128xi1>) -> tensor<128xf32>
    """
    return create("atomic_rmw", [value.type], [base, offsets, value, mask],
                  {"kind": ir.StringAttr.get(kind), **_orderings(sem, scope)}, loc=loc, ip=ip).result


def _verify_atomic_cas(op):
    _, offsets, cmp, value, mask = op.operands
    if str(_elem(value)) not in CAS_TYPES:
        return f"atomic cas takes {' or '.join(CAS_TYPES)} values, got {_elem(value)}"
    if cmp.type != value.type or op.result.type != value.type:
        return "cmp, value and the result must have one type"
    return _verify_ordering(op) or _verify_gather_operands(op, value, offsets, mask)


@define("atomic_cas", operands=[("base", "memref"), ("offsets", "any"), ("cmp", "any"), ("value", "any"), ("mask", "any")],
        results=[("old", "any")], attributes=["sem", "scope"], verify=_verify_atomic_cas)
def atomic_cas(base, offsets, cmp, value, mask, sem: str = "acq_rel", scope: str = "gpu", *, loc=None, ip=None) -> ir.Value:
    """Where `mask` holds, atomically replace `base.flat[offsets]` by `value` if it equals
    `cmp` (bit for bit), each element once (Triton's `tl.atomic_cas`); the result holds the
    old values (0 where the mask is false).

    %old = "tile.atomic_cas"(%lock, %c0, %cmp, %v, %true) {scope = "gpu", sem = "acq_rel"}
        : (memref<?xi32, strided<[?], offset: ?>>, i32, i32, i32, i1) -> i32
    """
    return create("atomic_cas", [value.type], [base, offsets, cmp, value, mask], _orderings(sem, scope),
                  loc=loc, ip=ip).result


@define("barrier")
def barrier(*, loc=None, ip=None) -> ir.Operation:
    """Every thread of the program waits here for the others (Triton's `tl.debug_barrier`):
    `bar.sync 0` on a GPU, nothing on the CPU (a program is one thread there).

    "tile.barrier"() : () -> ()
    """
    return create("barrier", [], [], loc=loc, ip=ip)


GRID_DEPENDENCY_KINDS = ("wait", "launch_dependents")


def _verify_grid_dependency(op):
    kind = ir.StringAttr(op.attributes["kind"]).value
    if kind not in GRID_DEPENDENCY_KINDS:
        return f"kind must be one of {', '.join(GRID_DEPENDENCY_KINDS)}, got {kind!r}"


@define("grid_dependency", attributes=["kind"], verify=_verify_grid_dependency)
def grid_dependency(kind: str, *, loc=None, ip=None) -> ir.Operation:
    """Grid dependence control (Triton's `gdc_wait` / `gdc_launch_dependents`): "wait" until
    the grid this one depends on has finished and its writes are visible, or
    "launch_dependents": let the next grid (launched with PDL) start. `griddepcontrol.wait` /
    `griddepcontrol.launch_dependents` on sm_90+, nothing on the CPU or before sm_90 (no PDL there).

    "tile.grid_dependency"() {kind = "wait"} : () -> ()
    """
    return create("grid_dependency", [], [], {"kind": ir.StringAttr.get(kind)}, loc=loc, ip=ip)


def _verify_block_access(op, tile_type, indices):
    memref = ir.MemRefType(op.operands[0].type)
    shape = _shape(tile_type)
    if len(indices) != memref.rank or len(shape) != memref.rank:
        return f"a rank-{memref.rank} tensor needs {memref.rank} tile indices and a rank-{memref.rank} tile"
    if memref.element_type != _elem(tile_type):
        return f"element type {_elem(tile_type)} does not match the tensor's {memref.element_type}"


def _verify_load_tile(op):
    return _verify_block_access(op, op.result, list(op.operands)[1:])


@define("load_tile", operands=[("base", "memref"), ("index", "*i32")],
        results=[("result", "tensor")], attributes=["padding"], verify=_verify_load_tile)
def load_tile(base, indices, shape, padding, *, loc=None, ip=None) -> ir.Value:
    """Load tile number `indices` of shape `shape` from `base`; elements past its bounds read `padding`.

    Tile (i, j) covers rows i*BM ... i*BM+BM-1 and columns j*BN ... j*BN+BN-1.

    %t = "tile.load_tile"(%x, %i, %j) {padding = 0.0 : f32}
        : (memref<?x?xf32, strided<[?, ?], offset: ?>>, i32, i32) -> tensor<32x64xf32>
    """
    elem = ir.MemRefType(base.type).element_type
    ty = ir.RankedTensorType.get(shape, elem)
    return create("load_tile", [ty], [base, *indices], {"padding": padding}, loc=loc, ip=ip).result


def _verify_store_tile(op):
    return _verify_block_access(op, op.operands[1], list(op.operands)[2:])


@define("store_tile", operands=[("base", "memref"), ("value", "tensor"), ("index", "*i32")], verify=_verify_store_tile)
def store_tile(base, value, indices, *, loc=None, ip=None) -> ir.Operation:
    """Store a tile at tile number `indices` of `base`; elements past its bounds are skipped.

    "tile.store_tile"(%y, %t, %i, %j) : (memref<?x?xf32, strided<[?, ?], offset: ?>>, tensor<32x64xf32>, i32, i32) -> ()
    """
    return create("store_tile", [], [base, value, *indices], loc=loc, ip=ip)


def _verify_dot(op):
    a, b, acc = (_shape(v) for v in op.operands)
    if len(a) != 2 or len(b) != 2 or a[1] != b[0] or acc != [a[0], b[1]]:
        return f"dot needs (M, K) x (K, N) + (M, N) tiles, got {a} x {b} + {acc}"
    float8 = all(str(_elem(v)) in ("f8E4M3FN", "f8E5M2") for v in op.operands[:2])  # (e4m3 by e5m2 too)
    if _elem(op.operands[0]) != _elem(op.operands[1]) and not float8:
        return "dot operands must have the same element type"
    if isinstance(_elem(op.operands[0]), ir.IntegerType) and (str(_elem(op.operands[0])) != "i8" or str(_elem(op.operands[2])) != "i32"):
        return "an integer dot takes i8 operands and an i32 accumulator"
    if "input_precision" in op.attributes:
        precision = ir.StringAttr(op.attributes["input_precision"]).value
        if precision != "tf32" or str(_elem(op.operands[0])) != "f32":
            return f"dot input_precision \"{precision}\" needs f32 operands and is \"tf32\""


@define("dot", operands=[("a", "tensor"), ("b", "tensor"), ("acc", "tensor")], results=[("result", "tensor")], verify=_verify_dot, pure=True)
def dot(a, b, acc, *, tf32: bool = False, loc=None, ip=None) -> ir.Value:
    """Matrix product of two tiles added to an accumulator tile; with `tf32`, f32
    operands are first rounded to tf32 (10-bit mantissa, to nearest, ties away from 0).

    %c = "tile.dot"(%a, %b, %acc) : (tensor<64x32xbf16>, tensor<32x64xbf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
    %d = "tile.dot"(%x, %y, %acc) {input_precision = "tf32"} : (tensor<64x32xf32>, tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    """
    attributes = {"input_precision": ir.StringAttr.get("tf32")} if tf32 else None
    return create("dot", [acc.type], [a, b, acc], attributes, loc=loc, ip=ip).result


def is_tf32(dot: ir.Operation) -> bool:
    """A `tile.dot` whose f32 operands are rounded to tf32 (the only precision besides exact)."""
    return "input_precision" in dot.attributes


def _verify_convert_layout(op):
    if _shape(op.operands[0]) != _shape(op.result) or _elem(op.operands[0]) != _elem(op.result):
        return "convert_layout changes only the encoding"


@define("convert_layout", operands=[("tile", "tensor")], results=[("result", "tensor")], verify=_verify_convert_layout, pure=True)
def convert_layout(value, result_type, *, loc=None, ip=None) -> ir.Value:
    """Move a tile from one layout encoding to another (through shared memory on a GPU).

    %c = "tile.convert_layout"(%t) : (tensor<64xf32, #tile.blocked<...>>) -> tensor<64xf32, #tile.blocked<...>>
    """
    return create("convert_layout", [result_type], [value], loc=loc, ip=ip).result


def _i32(v: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), v)
