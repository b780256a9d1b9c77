"""Triton's `tl.extra.cuda`: its `libdevice` has the functions of `tile.extra.libdevice`;
`gdc_wait` and `gdc_launch_dependents` are grid dependence control (`frontend/grid_dependence.py`)."""

from ...errors import TileError
from . import libdevice  # noqa: F401


def _stub(name: str, doc: str):
    def stub():
        raise TileError(f"tile.extra.cuda.{name} can only be called inside a @tile.kernel or @tile.func")

    stub.__name__ = stub.__qualname__ = name
    stub.__doc__ = doc
    stub.tile_builtin = f"extra.cuda.{name}"
    return stub


gdc_wait = _stub("gdc_wait", "Wait until the grid this one depends on (launched before it, with `launch_pdl=True` "
                             "on this one) has finished, its writes visible. Safe without PDL.")
gdc_launch_dependents = _stub("gdc_launch_dependents", "Let the next grid (launched with `launch_pdl=True`) start "
                                                       "once every program of this one has called it or ended; no "
                                                       "memory ordering implied. Safe without PDL.")
