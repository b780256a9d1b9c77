"""Runs a CPU-target kernel with MLIR's ExecutionEngine, in place on torch tensors' memory.

Each tensor is passed as a ranked memref descriptor (pointer, offset 0,
sizes, strides in elements), following the ABI recorded at compile time.
"""

from __future__ import annotations

import ctypes

from ..frontend.errors import LaunchError
from .arguments import check_tensor

_SCALARS = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "f32": ctypes.c_float, "f64": ctypes.c_double, "i1": ctypes.c_bool}


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
            self._engine = ExecutionEngine(module, opt_level=2)
        self._args = metadata["args"]

    def check(self, values):
        for (name, kind, _), v in zip(self._args, values):
            if kind == "tensor":
                check_tensor(name, v, want_cuda=False)

    def __call__(self, grid, values, names):
        keep, packed = [], []
        for (name, kind, detail), v in zip(self._args, values):
            if kind == "tensor":
                check_tensor(name, v, want_cuda=False)
                rank = v.dim()
                d = _descriptor_type(rank)(v.data_ptr(), v.data_ptr(), 0)
                if rank:
                    d.sizes[:] = list(v.shape)
                    d.strides[:] = list(v.stride())
                keep.append(d)
                packed.append(ctypes.pointer(ctypes.pointer(d)))
            else:
                ctype = _SCALARS[{"tile.int32": "i32", "tile.int64": "i64", "tile.float32": "f32", "tile.int1": "i1"}[detail]]
                if not isinstance(v, (int, float)):
                    raise LaunchError(f"argument '{name}' must be a number")
                c = ctype(v)
                keep.append(c)
                packed.append(ctypes.pointer(c))
        for g in grid:
            c = ctypes.c_int32(g)
            keep.append(c)
            packed.append(ctypes.pointer(c))
        self._engine.invoke(self.name, *packed)
