"""`tile.grid_dependency` (Triton's `gdc_wait` / `gdc_launch_dependents`) in the distributed
GPU codegen: PTX's `griddepcontrol.wait` / `griddepcontrol.launch_dependents` on sm_90+;
nothing before sm_90, which has no programmatic dependent launch (a grid there starts after
the one before it ends). The CPU target's: `cpu/grid_dependency.py`."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import nvvm

from ..common.lowerings import lowering


@lowering("tile.grid_dependency", target="gpu")
def op_tile_grid_dependency(self, op):
    """The distributed GPU codegen's."""
    if self.arch < 90:
        return
    kind = ir.StringAttr(op.attributes["kind"]).value
    nvvm.griddepcontrol(getattr(nvvm.GridDepActionKind, kind))
