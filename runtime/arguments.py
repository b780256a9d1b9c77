"""Checks launch arguments against the specialization they were compiled for,
so that a bad call raises a `LaunchError` naming the argument, never crashes."""

from __future__ import annotations

import ctypes

from ..frontend.errors import LaunchError

# The C type of each scalar kernel parameter, by its MLIR type in the recorded ABI.
CTYPES = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "f32": ctypes.c_float, "f64": ctypes.c_double, "i1": ctypes.c_bool}


def check_values(names, values, want_cuda: bool):
    """Tensors on the right device; everything else a number."""
    for name, v in zip(names, values):
        if hasattr(v, "data_ptr"):
            check_tensor(name, v, want_cuda)
        elif not isinstance(v, (int, float)):
            raise LaunchError(f"argument '{name}' must be a tensor or a number")


def check_tensor(name: str, t, want_cuda: bool):
    if want_cuda and t.device.type != "cuda":
        raise LaunchError(f"argument '{name}' is on {t.device} but the kernel was compiled for a GPU: pass a CUDA tensor")
    if not want_cuda and t.device.type != "cpu":
        raise LaunchError(f"argument '{name}' is on {t.device} but the kernel was compiled for the CPU target")
    if any(s < 0 for s in t.stride()):
        raise LaunchError(f"argument '{name}' has a negative stride {t.stride()}")


def tensor_device(names, values) -> int | None:
    """The CUDA device ordinal of a launch's tensors (None if none is on a CUDA device); tensors
    on two devices are an error naming them (a kernel runs on one device and reads its memory)."""
    device = first = None
    for name, v in zip(names, values):
        d = getattr(v, "device", None)
        if d is None or d.type != "cuda":
            continue
        index = d.index if d.index is not None else 0
        if device is None:
            device, first = index, name
        elif index != device:
            raise LaunchError(f"arguments '{first}' (cuda:{device}) and '{name}' (cuda:{index}) are on different "
                              f"devices: a kernel runs on one device (move them to one)")
    return device
