"""Launches a cubin from the cache on torch's current CUDA stream.

The kernel parameters are built from the ABI recorded at compile time (read
back from the compiled function's signature): for each tensor its pointer
(twice: allocated and aligned), offset 0, sizes and strides in elements; for
each scalar its value. Imports only ctypes and the driver shim.
"""

from __future__ import annotations

import ctypes

from ..frontend.errors import DeviceUnavailableError
from . import cuda_driver
from .arguments import CTYPES, check_values


class CudaLauncher:
    def __init__(self, metadata: dict, cubin: bytes):
        self.metadata, self.name, self.cubin = metadata, metadata["name"], cubin
        self.block = (metadata["num_threads"], 1, 1)
        self.abi = [(a["arg"], a["part"], a.get("dim", 0), a["type"]) for a in metadata["abi"]]
        self.arg_names = [a[0] for a in metadata["args"]]
        self.shared_bytes = metadata.get("shared_bytes", 0)
        self._function = None
        # One preallocated ctypes slot per parameter, and the address array over them, built
        # once: a launch only writes values into the slots (launches from one thread at a time).
        self._slots = [ctypes.c_void_p() if ty == "ptr" else CTYPES[ty]() for _, _, _, ty in self.abi]
        self._argv = cuda_driver.parameter_array(self._slots)
        self._plan = {}
        for slot, (arg, part, dim, _) in zip(self._slots, self.abi):
            self._plan.setdefault(arg, []).append((slot, part, dim))
        self._plan = list(self._plan.items())

    def function(self):
        if self._function is None:
            if not cuda_driver.available():
                raise DeviceUnavailableError(
                    f"{self.name} was compiled for {self.metadata['target']} into the cache "
                    f"({self.metadata.get('cache_path')}), but this host has no CUDA device to run it")
            self._module = cuda_driver.Module(self.cubin)
            self._function = self._module.function(self.name)
            if self.shared_bytes > 48 * 1024:  # past 48 KB a block must opt in
                self._function.set_dynamic_shared_memory(self.shared_bytes)
        return self._function

    def check(self, values):
        """Called once per new argument signature, not per launch."""
        self._function or self.function()  # first: say so if there is no device at all
        check_values(self.arg_names, values, want_cuda=True)

    def __call__(self, grid, values, names):
        fn = self._function or self.function()
        for arg, slots in self._plan:
            v = values[arg]
            if hasattr(v, "data_ptr"):
                ptr, shape, strides = v.data_ptr(), v.shape, v.stride()
                for slot, part, dim in slots:
                    slot.value = ptr if part == "ptr" else 0 if part == "offset" else shape[dim] if part == "size" else strides[dim]
            else:
                slots[0][0].value = v
        fn.launch_argv(grid, self.block, self._argv, self.shared_bytes, _current_stream())


_raw_stream = None


def _current_stream() -> int:
    """torch's current stream on the current device, by the cheapest call torch offers."""
    global _raw_stream
    if _raw_stream is None:
        import torch

        get = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        _raw_stream = (lambda: get(torch.cuda.current_device())) if get else (lambda: torch.cuda.current_stream().cuda_stream)
    return _raw_stream()
