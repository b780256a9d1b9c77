"""Triton's `tl.extra.cuda`: its `libdevice` has the functions of `tile.extra.libdevice`."""

from . import libdevice  # noqa: F401
