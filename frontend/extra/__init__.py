"""Triton's `tl.extra`: `tile.extra.libdevice` (also `tile.extra.cuda.libdevice`)."""

from . import cuda, libdevice  # noqa: F401
