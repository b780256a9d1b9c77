"""Runs a CPU-target kernel with MLIR's ExecutionEngine, in place on torch tensors' memory.

Each tensor is passed as a ranked memref descriptor (pointer, offset 0,
sizes, strides in elements), following the ABI recorded at compile time.
"""

from __future__ import annotations

import ctypes

from .arguments import CTYPES, check_values


# x86 keeps bf16 values in f32 registers and narrows them with a libcall that
# libgcc has only from GCC 13 on; the module carries its own (round to nearest
# even, NaN kept quiet) so the JIT never looks for it in the process.
_TRUNCSFBF2 = """
llvm.func @__truncsfbf2(%x: f32) -> bf16 {
  %bits = llvm.bitcast %x : f32 to i32
  %c16 = llvm.mlir.constant(16 : i32) : i32
  %c1 = llvm.mlir.constant(1 : i32) : i32
  %half = llvm.mlir.constant(32767 : i32) : i32
  %quiet = llvm.mlir.constant(64 : i32) : i32
  %high = llvm.lshr %bits, %c16 : i32
  %odd = llvm.and %high, %c1 : i32
  %biased = llvm.add %bits, %half : i32
  %rounded = llvm.add %biased, %odd : i32
  %even = llvm.lshr %rounded, %c16 : i32
  %nan = llvm.or %high, %quiet : i32
  %isnan = llvm.fcmp "uno" %x, %x : f32
  %pick = llvm.select %isnan, %nan, %even : i1, i32
  %short = llvm.trunc %pick : i32 to i16
  %out = llvm.bitcast %short : i16 to bf16
  llvm.return %out : bf16
}
"""


def _with_bf16_runtime(module, text: str):
    if "bf16" in text and "__truncsfbf2" not in text:
        from mlir import ir

        for op in ir.Module.parse(_TRUNCSFBF2).body.operations:
            module.body.append(op.clone())


def _descriptor_type(rank: int):
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_longlong)]
    if rank:
        fields += [("sizes", ctypes.c_longlong * rank), ("strides", ctypes.c_longlong * rank)]
    return type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})


class CpuLauncher:
    def __init__(self, metadata: dict, llvm_mlir: str):
        self.metadata, self.name = metadata, metadata["name"]
        from mlir import ir
        from mlir.execution_engine import ExecutionEngine

        self._ctx = ir.Context()
        with self._ctx:
            module = ir.Module.parse(llvm_mlir)
            _with_bf16_runtime(module, llvm_mlir)
            self._engine = ExecutionEngine(module, opt_level=2)
        self._args = metadata["args"]
        self._scalar_types = {a["arg"]: CTYPES[a["type"]] for a in metadata["abi"] if a["part"] == "value"}

    def check(self, values):
        """Called once per new argument signature, not per launch."""
        check_values([a[0] for a in self._args], values, want_cuda=False)

    def __call__(self, grid, values, names):
        keep, packed = [], []
        for i, v in enumerate(values):
            if i not in self._scalar_types:
                rank = v.dim()
                d = _descriptor_type(rank)(v.data_ptr(), v.data_ptr(), 0)
                if rank:
                    d.sizes[:] = list(v.shape)
                    d.strides[:] = list(v.stride())
                keep.append(d)
                packed.append(ctypes.pointer(ctypes.pointer(d)))
            else:
                c = self._scalar_types[i](v)
                keep.append(c)
                packed.append(ctypes.pointer(c))
        for g in grid:
            c = ctypes.c_int32(g)
            keep.append(c)
            packed.append(ctypes.pointer(c))
        self._engine.invoke(self.name, *packed)
