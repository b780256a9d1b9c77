"""Triton's `tl.extra.libdevice`: CUDA's libdevice math functions, full precision on a GPU
(`__nv_tanhf` where `tile.tanh` is `tanh.approx.f32`) and libm's on the CPU target
(`frontend/math_language.py`, `frontend/math_functions.py`)."""

from ..math_language import libdevice_stubs

globals().update(libdevice_stubs())
__all__ = list(libdevice_stubs())
