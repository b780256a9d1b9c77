"""A tile's values at any coordinates (methods of the GPU `Translator`): recomputed
where the value is a function of `arange`, splats and constants (`rematerializable`),
read from registers each thread already holds (`held_registers.py`), or else
exchanged through shared memory (`Translator.exchange`); and elementwise ops
register by register, with fma contraction and the fast f32 math Triton uses.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from ...dialects.tile_ops import permutation_of
from ...passes.index_values import SHAPE_OPS, index_only
from ...passes.tile_fuse import through_groups
from ..common.lowerings import lowering
from .distributed_layout import Distribution, row_major_strides
from .fast_math import f32_form
from ..common.float8 import is_float8, narrow_float8, widen_float8
from .held_registers import defer, held_at, only_read_through
from .register_vectors import elements as _elements
from .register_vectors import from_elements as _from_elements
from .register_vectors import i32 as _i32
from .register_vectors import linear_index
from .register_vectors import splat as _splat
from .static_registers import broadcast_coords, reshape_coords, thread_coords, trans_coords

_CONTRACTIBLE = {"arith.addf", "arith.subf", "arith.mulf"}


def rematerializable(self, v) -> bool:
    return index_only(v)


def eval_at(self, v, coords: list, n: int, static: list | None = None):
    """The values of tile v at the given per-dim coordinate vectors (n registers); `static`,
    the same coordinates as numbers per thread ([threads, n] a dim), where known."""
    v = through_groups(v)  # recomputable values stay so across fusion groups
    t = ir.RankedTensorType(v.type)
    shape_op = not isinstance(v.owner, ir.Block) and v.owner.operation.name in SHAPE_OPS
    if not shape_op and not self.rematerializable(v):
        held = held_at(self, v, coords, n, static) if static is not None else None
        if held is not None:  # every thread holds what it needs: no shared memory
            return held
        src_dist = self.dist(v)
        lin = linear_index(coords, row_major_strides(src_dist.shape), n)
        at = static and sum(c * s for c, s in zip(static, row_major_strides(src_dist.shape)))
        return self.exchange(self.value(v), src_dist, self.coords(src_dist), t.element_type, lin, n, at)
    op = v.owner.operation
    if op.name == "tile.arange":
        return arith.addi(coords[0], _splat(_i32(ir.IntegerAttr(op.attributes["start"]).value), n))
    if op.name == "tile.splat":
        return _splat(self.value(op.operands[0]), n)
    if op.name == "arith.constant":
        attr = ir.DenseElementsAttr(op.attributes["value"])
        return arith.ConstantOp(ir.VectorType.get([n], t.element_type), ir.DenseElementsAttr.get_splat(
            ir.VectorType.get([n], t.element_type), attr.get_splat_value())).result
    if op.name == "tile.convert_layout":
        return self.eval_at(op.operands[0], coords, n, static)
    if op.name == "tile.broadcast":
        src_shape = ir.RankedTensorType(op.operands[0].type).shape
        zero = _splat(_i32(0), n)
        static = static and broadcast_coords(static, src_shape)
        return self.eval_at(op.operands[0], [c if s != 1 else zero for c, s in zip(coords, src_shape)], n, static)
    if op.name == "tile.trans":
        perm = permutation_of(op)
        return self.eval_at(op.operands[0], trans_coords(coords, perm), n, static and trans_coords(static, perm))
    if op.name == "tile.reshape":
        src_shape = list(ir.RankedTensorType(op.operands[0].type).shape)
        lin = linear_index(coords, row_major_strides(list(t.shape)), n)
        src_coords = [None] * len(src_shape)
        for d in range(len(src_shape) - 1, -1, -1):
            src_coords[d] = arith.remui(lin, _splat(_i32(src_shape[d]), n))
            lin = arith.divui(lin, _splat(_i32(src_shape[d]), n))
        static = static and reshape_coords(static, list(t.shape), src_shape)
        return self.eval_at(op.operands[0], src_coords, n, static)
    operands = [self.eval_at(o, coords, n, static) if isinstance(o.type, ir.RankedTensorType) else self.value(o)
                for o in op.operands]
    return self.clone_elementwise(op, operands, n)


def uniform_run(self, op) -> int:
    """Registers per run over which this compare's result is proven constant (1: not proven)."""
    if op.name != "arith.cmpi":
        return 1
    dist = self.dist(op.results[0])
    if not isinstance(dist, Distribution) or dist.layout.order[0] != dist.rank - 1:
        return 1
    run = dist.vector_width
    if run <= 1 or self.axis(op.results[0]).constancy % run or any(
            self.dist(o).layout != dist.layout for o in op.operands):
        return 1
    return run


def clone_elementwise(self, op, operands, n):
    rt = ir.RankedTensorType(op.results[0].type)
    if op.name == "arith.extf" and is_float8(ir.RankedTensorType(op.operands[0].type).element_type):
        return _from_elements(widen_float8(_elements(operands[0], n), rt.element_type, self.float8_cvt), rt.element_type)
    if op.name == "arith.truncf" and is_float8(rt.element_type):
        return _from_elements(narrow_float8(_elements(operands[0], n), rt.element_type, self.float8_cvt), rt.element_type)
    form = f32_form(op, rt.element_type)
    if form is not None:
        per_register = zip(*(_elements(v, n) for v in operands))
        return _from_elements([form(*xs) for xs in per_register], rt.element_type)
    attrs = {k: op.attributes[k] for k in op.attributes}
    if op.name in _CONTRACTIBLE:
        attrs["fastmath"] = ir.Attribute.parse("#arith.fastmath<contract>")  # let a * b + c become one fma, as Triton and nvcc do
    return ir.Operation.create(op.name, results=[ir.VectorType.get([n], rt.element_type)], operands=operands, attributes=attrs).result


def elementwise(self, op):
    """An elementwise op on tiles, register by register."""
    n = self.dist(op.results[0]).num_registers
    run = self.uniform_run(op)
    if run > 1:  # e.g. a mask that axis info proves equal along each run: one compare per run
        starts = [_from_elements(_elements(self.value(o), n)[::run], ir.VectorType(self.vtype(o)).element_type)
                  for o in op.operands]
        few = _elements(self.clone_elementwise(op, starts, n // run), n // run)
        elem = ir.RankedTensorType(op.results[0].type).element_type
        return _from_elements([v for v in few for _ in range(run)], elem)
    return self.clone_elementwise(op, [self.value(o) for o in op.operands], n)


@lowering("tile.arange", "tile.splat", "tile.broadcast", "tile.reshape", target="gpu")
def remat_own(self, op):
    result = op.results[0]
    d = self.dist(result)

    def make():
        return self.eval_at(result, self.coords(d), d.num_registers, thread_coords(d, self.threads))

    if op.name in ("tile.broadcast", "tile.reshape", "tile.trans") and only_read_through(result):
        defer(self, result, make)  # its users read through it to its operand
    else:
        self.map[result] = make()
