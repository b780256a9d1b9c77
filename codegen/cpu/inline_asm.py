"""The CPU target's answer to `tile.inline_asm`: PTX does not run on a CPU."""

from __future__ import annotations

from ...frontend.errors import TileError
from ..common.lowerings import lowering


@lowering("tile.inline_asm", target="cpu")
def op_tile_inline_asm(op):
    e = TileError("inline_asm_elementwise runs PTX, which the CPU target cannot: compile this kernel for a GPU "
                  "(TILE_TARGET=sm_90a TILE_COMPILE_ONLY=1 builds it on a host without one), or write the "
                  "computation with tile ops")
    e.location = op.location  # (at the call's line)
    raise e
