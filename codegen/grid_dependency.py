"""`tile.grid_dependency` (Triton's `gdc_wait` / `gdc_launch_dependents`): PTX's
`griddepcontrol.wait` / `griddepcontrol.launch_dependents` on sm_90+; nothing on the CPU,
where launches run one after another, nor before sm_90, which has no programmatic
dependent launch (a grid there starts after the one before it ends)."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import nvvm


def lower_grid_dependency(op):
    """The CPU target's (`convert-tile-to-linalg`): nothing."""
    return None


def op_tile_grid_dependency(self, op):
    """The distributed GPU codegen's."""
    if self.arch < 90:
        return
    kind = ir.StringAttr(op.attributes["kind"]).value
    nvvm.griddepcontrol(getattr(nvvm.GridDepActionKind, kind))
