"""f32 division and math on the GPU as Triton computes them, one function per op, used
by `convert-tile-to-gpu` on scalars and on every register of a tile alike: a few
instructions where IEEE division and libdevice's accurate versions take dozens (and
registers); within a few ulp for the ranges kernels use (tanh: about 2^-11)."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, llvm

from ...dialects.tile_ops import ACCURATE
from ...passes.registry import register_pass
from ...passes.walk import collect


def _div_full(a, b):
    """f32 a / b as PTX `div.full.f32`, as Triton divides: within 2 ulp over the full range,
    a few instructions, where the IEEE `div.rn.f32` calls a slow path and costs registers."""
    return llvm.call_intrinsic(ir.F32Type.get(), "llvm.nvvm.div.full", [a, b], [], [])


def _ex2(x):
    """e^x as 2^(x log2 e) on the SFU (`ex2.approx.f32`), as Triton computes `exp`."""
    scaled = arith.mulf(x, arith.ConstantOp(ir.F32Type.get(), 1.4426950408889634).result)
    return llvm.call_intrinsic(ir.F32Type.get(), "llvm.nvvm.ex2.approx.f32", [scaled], [], [])


def _exp2(x):
    """2^x on the SFU (`ex2.approx.ftz.f32`): one instruction where the default lowering
    reduces the range and rescales around it (eight more). Results below 2^-126 flush to
    zero, which spares the scaling ptxas puts around a non-ftz `ex2` for subnormal results
    (a compare, a select and two multiplies): a softmax's probabilities lose nothing."""
    return llvm.call_intrinsic(ir.F32Type.get(), "llvm.nvvm.ex2.approx.ftz.f", [x], [], [])


def _lg2(x):
    """ln x as log2(x) ln 2 on the SFU (`lg2.approx.f32`), as Triton computes `log`."""
    lg = llvm.call_intrinsic(ir.F32Type.get(), "llvm.nvvm.lg2.approx.f", [x], [], [])
    return arith.mulf(lg, arith.ConstantOp(ir.F32Type.get(), 0.6931471805599453).result)


def _tanh(x):
    """tanh x on the SFU (`tanh.approx.f32`, sm_75+; relative error about 2^-11), one
    instruction where its expansion into exp and a division takes about twenty; NVVM has
    no intrinsic for it."""
    return llvm.InlineAsmOp(ir.F32Type.get(), [x], "tanh.approx.f32 $0, $1;", "=f,f").result


def _div_rn(a, b):
    """f32 a / b correctly rounded (`div.rn.f32`): `tile.math.div_rn`."""
    return llvm.call_intrinsic(ir.F32Type.get(), "llvm.nvvm.div.rn.f", [a, b], [], [])


def _sqrt_rn(x):
    """sqrt x correctly rounded (`sqrt.rn.f32`): `tile.math.sqrt_rn`, where libdevice's
    `__nv_sqrtf` (`tile.sqrt`) is `sqrt.approx.f32`."""
    return llvm.call_intrinsic(ir.F32Type.get(), "llvm.nvvm.sqrt.rn.f", [x], [], [])


# The op names this file replaces, and how: by default, and marked accurate.
F32_FAST = {"arith.divf": _div_full, "math.exp": _ex2, "math.exp2": _exp2, "math.log": _lg2, "math.tanh": _tanh}
F32_EXACT = {"arith.divf": _div_rn, "math.sqrt": _sqrt_rn}


def f32_form(op, element_type):
    """How the GPU computes this op where its result's element type is f32, or None for its
    default lowering (libdevice's function): Triton's fast form, or for an op marked
    `tile.accurate` the IEEE one."""
    if not isinstance(element_type, ir.F32Type):
        return None
    return (F32_EXACT if ACCURATE in op.attributes else F32_FAST).get(op.name)


@register_pass("exact-f32-ops")
@dataclass
class ExactF32Ops:
    """The linalg GPU path's scalar f32 ops marked `tile.accurate` in their IEEE forms (sqrt_rn's
    `sqrt.rn.f32`, where the default lowering, libdevice's `__nv_sqrtf`, is `sqrt.approx.f32`);
    the distributed path calls `f32_form` on each op itself."""

    def run(self, module_op):
        for op in collect(module_op, set(F32_EXACT)):
            form = f32_form(op, op.results[0].type) if ACCURATE in op.attributes else None
            if form is not None:
                with ir.InsertionPoint(op), op.location:
                    op.results[0].replace_all_uses_with(form(*op.operands))
                op.erase()
