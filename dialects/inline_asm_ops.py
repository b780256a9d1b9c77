"""`tile.inline_asm`: Triton's `inline_asm_elementwise`, a PTX snippet run on the elements of
its operands, `pack` elements an instance; the GPU codegen makes one `llvm.inline_asm` per
`pack` registers of a thread (`codegen/gpu/inline_asm.py`); the CPU target cannot run PTX.
"""

from __future__ import annotations

from mlir import ir

from .op_definition import create, define
from .tile_ops import _i32, _int_attr


def registers_per_instance(elem: ir.Type, pack: int) -> tuple[int, int]:
    """(registers, elements per register) of one operand or result in one instance: elements
    narrower than 32 bits share 32-bit registers, as many as `pack` lets (Triton's rule)."""
    bits = ir.FloatType(elem).width if isinstance(elem, ir.FloatType) else ir.IntegerType(elem).width
    per = min(32 // bits, pack) if bits < 32 else 1
    return pack // per, per


def _shape(t: ir.Type):
    return list(ir.RankedTensorType(t).shape) if isinstance(t, ir.RankedTensorType) else None


def _verify_inline_asm(op):
    pack = _int_attr(op, "pack")
    if pack < 1:
        return f"pack must be >= 1, got {pack}"
    if not op.results:
        return "inline asm needs a result"
    shape = _shape(op.results[0].type)
    if any(_shape(v.type) != shape for v in [*op.operands, *op.results]):
        return "the operands and results must have one shape"


# (optional slots, one type each: a variadic's values would have to share one type)
MAX_ARGS, MAX_RESULTS = 8, 8


@define("inline_asm", operands=[(f"arg{i}", "?any") for i in range(MAX_ARGS)],
        results=[(f"out{i}", "?any") for i in range(MAX_RESULTS)], attributes=["asm", "constraints", "pure", "pack"],
        verify=_verify_inline_asm)
def inline_asm(result_types, args, asm: str, constraints: str, pure: bool, pack: int, *, loc=None, ip=None) -> ir.Operation:
    """The PTX `asm` on every `pack` elements of `args` (tiles of one shape, or scalars), its
    operands numbered outputs first, with LLVM's `constraints` ("=r,r,r").

    %o = "tile.inline_asm"(%a) {asm = "shf.l.wrap.b32 $0, $1, $1, 3;", constraints = "=r,r", pack = 1 : i32,
                                pure = 1 : i32, operandSegmentSizes = array<i32: 1, 0, ...>, ...}
         : (tensor<128xi32>) -> tensor<128xi32>
    """
    attrs = {"asm": ir.StringAttr.get(asm), "constraints": ir.StringAttr.get(constraints), "pure": _i32(int(pure)),
             "pack": _i32(pack),
             "operandSegmentSizes": ir.DenseI32ArrayAttr.get([int(i < len(args)) for i in range(MAX_ARGS)]),
             "resultSegmentSizes": ir.DenseI32ArrayAttr.get([int(i < len(result_types)) for i in range(MAX_RESULTS)])}
    return create("inline_asm", result_types, args, attrs, loc=loc, ip=ip)
