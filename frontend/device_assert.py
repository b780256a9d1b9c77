"""`tile.device_assert(cond, msg="", mask=None)` (Triton's), and `assert` on a run-time
condition, which Triton compiles to it.

Where asserts are on (the CPU target always; a GPU with TILE_DEBUG=1 or
`@tile.jit(debug=True)`, as Triton's TRITON_DEBUG), a condition false in any element (where
`mask` holds) runs `tile.assert_fail` under an `scf.if`: the CPU launch then raises
`DeviceAssertionError` naming the line, a GPU calls CUDA's `__assertfail`. Elsewhere the
condition is not even evaluated at run time (it is still type-checked).
"""

from __future__ import annotations

import contextvars

from mlir import ir
from mlir.dialects import scf

from ..dialects import tile_ops
from . import semantics
from .builtin_registry import EMITTERS, emitter, source_line
from .dtypes import int1, int32
from .semantics import SemanticError
from .values import Tile

ENABLED = contextvars.ContextVar("tile_device_asserts", default=True)


@emitter("device_assert")
def _device_assert(cond, msg="", mask=None):
    if not isinstance(msg, str):
        raise SemanticError(f"device_assert's message must be a string, got {msg!r}")
    if not isinstance(cond, Tile):
        if not isinstance(cond, (bool, int, float)):
            raise SemanticError(f"device_assert's condition must be a tile, a scalar or a number, got {cond!r}")
        if cond or not ENABLED.get():
            return None
        failed = semantics.constant(True, int1)
    else:
        ok = cond if cond.dtype == int1 else semantics.compare("!=", cond, 0)
        if mask is not None:
            mask = mask if isinstance(mask, Tile) else semantics.literal(bool(mask))
            ok = semantics.binary("|", ok, semantics.logical_not(mask))
        if not ENABLED.get():
            return None
        if ok.shape:  # every element: the least of them as int32
            ok = EMITTERS["min"](semantics.cast(ok, int32), None)
        failed = semantics.compare("==", ok, 0) if ok.dtype != int1 else semantics.logical_not(ok)
    op = scf.IfOp(failed.value, [], has_else=False)
    with ir.InsertionPoint(op.then_block):
        tile_ops.assert_fail(f"{source_line()}: device_assert failed: {msg}" if msg else f"{source_line()}: device_assert failed")
        scf.YieldOp([])
    return None
