"""`TILE_DEBUG=1`'s bounds checks (also `@tile.jit(debug=True)`): every load, store and atomic
through a pointer checks that each element its mask leaves on lies within the storage of its
tensor argument, offsets 0 to 1 + sum((size - 1) * stride) (the memref's sizes and strides).
A violation prints one offending offset and fails as a `device_assert` naming the tensor and
the kernel's line: on the CPU target `DeviceAssertionError` after the launch (an out-of-bounds
read there otherwise read garbage or crashed the process), on a GPU `__assertfail`. Without
the flag no code is added.
"""

from __future__ import annotations

import contextvars

from mlir import ir
from mlir.dialects import arith, memref, scf

from ..dialects import tile_ops
from . import semantics
from .builtin_registry import EMITTERS, source_line
from .dtypes import int1, int32, int64
from .values import Pointer, Tile

ENABLED = contextvars.ContextVar("tile_bounds_checks", default=False)


def check(kind: str, pointer: Pointer, offsets: Tile, mask: Tile) -> None:
    """Where ENABLED: fail unless every element of `offsets` that `mask` keeps lies in the storage."""
    if not ENABLED.get():
        return
    arg, rank = pointer.base, pointer.base.rank
    fields = list(memref.ExtractStridedMetadataOp(arg.value).results)[2:]
    i64 = ir.IntegerType.get_signless(64)
    extent, empty = semantics.constant(1, int64), semantics.constant(False, int1)
    for d in range(rank):
        size, stride = (Tile(arith.index_cast(i64, fields[k])) for k in (d, rank + d))
        extent = semantics.binary("+", extent, semantics.binary("*", semantics.binary("-", size, 1), stride))
        empty = semantics.binary("|", empty, semantics.compare("==", size, 0))
    extent = semantics.where(empty, 0, extent)
    off = semantics.cast(offsets, int64)
    outside = semantics.binary("|", semantics.compare("<", off, 0), semantics.compare(">=", off, extent))
    bad = semantics.binary("&", outside, mask)
    worst = semantics.where(bad, off, -(2**63))
    if bad.shape:
        bad = semantics.compare("!=", EMITTERS["max"](semantics.cast(bad, int32), None), 0)
        worst = EMITTERS["max"](worst, None)
    line = source_line()
    op = scf.IfOp(bad.value, [], has_else=False)
    with ir.InsertionPoint(op.then_block):
        tile_ops.print_(worst.value, f"{line}: {kind} of tensor argument '{arg.name}' out of bounds at offset ")
        tile_ops.print_(extent.value, f"{line}: tensor argument '{arg.name}' holds offsets below ")
        tile_ops.assert_fail(f"{line}: {kind} of tensor argument '{arg.name}' out of bounds (TILE_DEBUG): "
                             "an offset outside its storage (printed above)")
        scf.YieldOp([])
