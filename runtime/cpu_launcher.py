"""Runs a CPU-target kernel with MLIR's ExecutionEngine, in place on torch tensors' memory.

Each tensor is passed as a ranked memref descriptor (pointer, offset 0,
sizes, strides in elements), following the ABI recorded at compile time.
"""

from __future__ import annotations

import ctypes
import functools
import threading

from ..frontend.errors import DeviceAssertionError
from .arguments import CTYPES, check_values
from .cpu_float_runtime import add_float_runtime


_ASSERT_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)


@functools.cache
def _descriptor_type(rank: int):
    """The memref descriptor's struct for a rank, one class each: a class made per launch
    leaked, as ctypes keeps the pointer type of every class it has seen (about 40 KB a launch)."""
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_longlong)]
    if rank:
        fields += [("sizes", ctypes.c_longlong * rank), ("strides", ctypes.c_longlong * rank)]
    return type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})


_JIT_LOCK = threading.Lock()


class CpuLauncher:
    def __init__(self, metadata: dict, llvm_mlir: str):
        self.metadata, self.name = metadata, metadata["name"]
        self._llvm_mlir = llvm_mlir
        self._engine = None  # JIT-compiled on the first launch: autotune loads many configs and runs few
        self._failed = failed = []
        # (not through self: the JIT engine holds the callback, and engine -> callback -> self
        # would be a cycle through an object the garbage collector cannot traverse)
        self._on_failure = _ASSERT_CALLBACK(lambda message, x, y, z: failed.append((message, (x, y, z))))
        self._args = metadata["args"]
        self._scalar_types = {a["arg"]: CTYPES[a["type"]] for a in metadata["abi"] if a["part"] == "value"}

    def engine(self):
        with _JIT_LOCK:  # (threads launching it first at once: one JIT)
            return self._engine or self._jit()

    def _jit(self):
        from mlir import ir
        from mlir.execution_engine import ExecutionEngine

        ctx = ir.Context()
        ctx.enable_multithreading(False)  # (see dialects/tile_dialect.make_context)
        with ctx:
            module = ir.Module.parse(self._llvm_mlir)
            add_float_runtime(module, self._llvm_mlir)
            engine = ExecutionEngine(module, opt_level=2)
        # device_assert's failures: recorded by the kernel's call, raised when the launch returns
        engine.register_runtime("tile_assert_fail", self._on_failure)
        self._ctx, self._engine = ctx, engine
        return engine

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
        (self._engine or self.engine()).invoke(self.name, *packed)
        if self._failed:
            (message, pid), count = self._failed[0], len(self._failed)
            self._failed.clear()
            more = f" (and in {count - 1} other program(s))" if count > 1 else ""
            raise DeviceAssertionError(f"{message.decode(errors='replace')} in program {pid}{more}")
