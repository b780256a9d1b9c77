"""Which tile values are functions of `arange`, splats and constants alone (offsets,
masks, iotas): any thread can compute them at any coordinates, in any layout, without
reading memory or another thread's registers. `tile-assign-layouts` lets only other
values decide a shape's layout; the GPU codegen recomputes these wherever a layout
change needs them (`codegen/gpu/register_values.py`).
"""

from __future__ import annotations

from mlir import ir

from .tile_fuse import through_groups

# Ops that make a tile from nothing, or only reshape, broadcast or relayout one.
SHAPE_OPS = {"tile.arange", "tile.splat", "tile.broadcast", "tile.reshape", "tile.trans", "tile.convert_layout",
             "arith.constant"}


def is_elementwise(op) -> bool:
    """An `arith`/`math` op without regions: on tiles, the same op on every element."""
    return op.name.startswith(("arith.", "math.")) and not op.regions


def index_only(v, depth: int = 0) -> bool:
    """Whether tile v is a function of `arange`, splats and constants (through fusion groups)."""
    v = through_groups(v)
    if depth > 12 or not isinstance(v.type, ir.RankedTensorType) or isinstance(v.owner, ir.Block):
        return False
    op = v.owner.operation
    if op.name in SHAPE_OPS:
        return op.name in ("tile.arange", "tile.splat", "arith.constant") or index_only(op.operands[0], depth + 1)
    if is_elementwise(op):
        return all(index_only(o, depth + 1) or not isinstance(o.type, ir.RankedTensorType) for o in op.operands)
    return False
