"""Triton's grid dependence control, `tl.extra.cuda.gdc_wait()` and `gdc_launch_dependents()`
(tutorial 11): with a launch of `launch_pdl=True` the next kernel on the stream may start
before this one ends (programmatic dependent launch); `gdc_wait` waits for the grid before
to finish (its writes visible) and `gdc_launch_dependents` lets the next one start. Both are
safe without PDL. `griddepcontrol.*` on sm_90+, nothing on the CPU, where launches run one
after another (`dialects/tile_ops.py: grid_dependency`)."""

from __future__ import annotations

from ..dialects import tile_ops
from .builtin_registry import emitter


@emitter("extra.cuda.gdc_wait")
def _gdc_wait():
    tile_ops.grid_dependency("wait")


@emitter("extra.cuda.gdc_launch_dependents")
def _gdc_launch_dependents():
    tile_ops.grid_dependency("launch_dependents")
