"""`tile.grid_dependency` (Triton's `gdc_wait` / `gdc_launch_dependents`) on the CPU target:
nothing, launches there run one after another (the GPU's: `gpu/grid_dependency.py`)."""

from ..common.lowerings import lowering


@lowering("tile.grid_dependency", target="cpu")
def lower_grid_dependency(op):
    """`convert-tile-to-linalg`'s lowering: no op."""
    return None
