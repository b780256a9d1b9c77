"""Checks launch arguments against the specialization they were compiled for,
so that a bad call raises a `LaunchError` naming the argument, never crashes."""

from __future__ import annotations

from ..frontend.errors import LaunchError


def check_tensor(name: str, t, want_cuda: bool):
    if want_cuda and t.device.type != "cuda":
        raise LaunchError(f"argument '{name}' is on {t.device} but the kernel was compiled for a GPU: pass a CUDA tensor")
    if not want_cuda and t.device.type != "cpu":
        raise LaunchError(f"argument '{name}' is on {t.device} but the kernel was compiled for the CPU target")
    if any(s < 0 for s in t.stride()):
        raise LaunchError(f"argument '{name}' has a negative stride {t.stride()}")
