"""The GPU lowering of `tile.inline_asm` (Triton's `inline_asm_elementwise`): a thread's E
registers of each operand, `pack` at a time, into one `llvm.inline_asm` each, its results
split back into the E registers of each result. Elements narrower than 32 bits travel
packed in 32-bit registers (bitcast from and to `vector<4xi8>`); a last instance short of
`pack` elements repeats the thread's last element (its outputs are dropped)."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import llvm

from ...dialects.inline_asm_ops import registers_per_instance
from ...dialects.tile_ops import _int_attr
from ..common.lowerings import lowering
from .register_vectors import elements, from_elements


def _i32():
    return ir.IntegerType.get_signless(32)


def _elem(v) -> ir.Type:
    return ir.RankedTensorType(v.type).element_type if isinstance(v.type, ir.RankedTensorType) else v.type


def _to_registers(values: list, elem, pack: int) -> list:
    """One instance's operand registers of one argument (`pack` elements)."""
    regs, per = registers_per_instance(elem, pack)
    if per == 1:
        return values
    return [llvm.bitcast(_i32(), from_elements(values[i * per : (i + 1) * per], elem)) for i in range(regs)]


def _from_registers(values: list, elem, pack: int) -> list:
    """The `pack` elements of one result from its output registers."""
    _, per = registers_per_instance(elem, pack)
    if per == 1:
        return values
    vec = ir.VectorType.get([per], elem)
    return [e for v in values for e in elements(llvm.bitcast(vec, v), per)]


@lowering("tile.inline_asm", target="gpu")
def op_tile_inline_asm(t, op):
    pack = _int_attr(op, "pack")
    asm, constraints = (ir.StringAttr(op.attributes[a]).value for a in ("asm", "constraints"))
    pure = bool(_int_attr(op, "pure"))
    tensors = isinstance(op.results[0].type, ir.RankedTensorType)
    n = t.dist(op.results[0]).num_registers if tensors else 1
    args = [elements(t.value(a), n) if tensors else [t.value(a)] for a in op.operands]
    in_elems, out_elems = [_elem(a) for a in op.operands], [_elem(r) for r in op.results]
    ret_types = [ty for e in out_elems for ty in [_i32() if registers_per_instance(e, pack)[1] > 1 else e]
                 * registers_per_instance(e, pack)[0]]
    outs = [[] for _ in op.results]
    for start in range(0, n, pack):
        at = [min(start + j, n - 1) for j in range(pack)]
        operands = [r for regs, e in zip(args, in_elems) for r in _to_registers([regs[i] for i in at], e, pack)]
        ret = ret_types[0] if len(ret_types) == 1 else llvm.StructType.get_literal(ret_types)
        got = llvm.InlineAsmOp(ret, operands, asm, constraints, has_side_effects=not pure).result
        regs = [got] if len(ret_types) == 1 else [llvm.extractvalue(ty, got, [i]) for i, ty in enumerate(ret_types)]
        for k, e in enumerate(out_elems):
            count = registers_per_instance(e, pack)[0]
            mine, regs = regs[:count], regs[count:]
            outs[k] += _from_registers(mine, e, pack)[: min(pack, n - start)]
    for r, vals, e in zip(op.results, outs, out_elems):
        t.map[r] = from_elements(vals, e) if tensors else vals[0]
