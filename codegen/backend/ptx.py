"""LLVM IR -> PTX, through llvmlite's NVPTX backend (the same LLVM 22 as MLIR).

`gpu_module_to_llvm_ir` takes the `gpu.module` that the nvvm stage produced
and translates its contents with MLIR's `translate_module_to_llvmir`, under NVPTX's
data layout (the alignment of loads and stores that carry none of their own).
`llvm_ir_to_ptx` links only the libdevice functions the kernel calls (from the
triton wheel), internalizes them, optimizes at O3 and emits PTX.
"""

from __future__ import annotations

import functools
import os

from mlir import ir
from mlir.dialects import llvm as llvm_dialect

from ...frontend.errors import CompilationError
from ...passes.walk import walk
from .targets import NVPTX64_DATA_LAYOUT, PTX_FEATURES



def gpu_module_to_llvm_ir(module: ir.Module) -> str:
    gpu_modules = [op for op in module.body.operations if op.operation.name == "gpu.module"]
    if len(gpu_modules) != 1:
        raise CompilationError(f"expected one gpu.module after the nvvm stage, found {len(gpu_modules)}")
    inner = ir.Module.create()
    for op in gpu_modules[0].regions[0].blocks[0].operations:
        inner.body.append(op.operation.clone())
    _check_translatable(inner)
    inner.operation.attributes["llvm.data_layout"] = ir.StringAttr.get(NVPTX64_DATA_LAYOUT)
    return llvm_dialect.translate_module_to_llvmir(inner.operation)


def _check_translatable(module: ir.Module) -> None:
    """Raise on the first op that is not LLVM or NVVM: a lowering left it behind, and the
    translation would crash the process on it (it does not fail cleanly)."""
    left = []

    def visit(op):
        if op.operation.name.split(".")[0] in ("llvm", "nvvm", "builtin"):
            return ir.WalkResult.ADVANCE
        left.append(op.operation)
        return ir.WalkResult.INTERRUPT

    walk(module.operation, visit)
    if left:
        raise CompilationError(f"internal error: '{left[0].name}' at {left[0].location} was not lowered to LLVM "
                               "by the nvvm stage; TILE_DUMP_IR=DIR shows where it came from")


@functools.cache
def _llvm():
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm


def libdevice_path() -> str:
    import triton

    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "lib", "libdevice.10.bc")


def llvm_ir_to_ptx(llvm_ir: str, target: str) -> str:
    if target not in PTX_FEATURES:
        # Checked here: an unsupported target aborts inside LLVM, uncatchably.
        raise CompilationError(f"unsupported GPU target {target}; known: {', '.join(PTX_FEATURES)}")
    llvm = _llvm()
    mod = llvm.parse_assembly(llvm_ir)
    mod.triple = "nvptx64-nvidia-cuda"
    kernels = {f.name for f in mod.functions if not f.is_declaration}
    if any(f.is_declaration and f.name.startswith("__nv_") for f in mod.functions):
        with open(libdevice_path(), "rb") as f:
            lib = llvm.parse_bitcode(f.read())
        lib.triple = mod.triple
        mod.link_in(lib)
        for f in mod.functions:
            if not f.is_declaration and f.name not in kernels:
                f.linkage = "internal"
    tm = llvm.Target.from_triple(mod.triple).create_target_machine(cpu=target, features=PTX_FEATURES[target], opt=3)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return tm.emit_assembly(mod)
