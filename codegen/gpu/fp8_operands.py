"""A dot's B read through `tile.trans` (`passes/fp8_dots.py`'s "transposed_load" of a float8
B, `passes/tile_k_major_loads.py`'s of a 16-bit one: B's memory is K-major but no block
`tile-pipeline` copies transposed, so B is loaded as its N x K transpose, K contiguous, and
transposed back for the dot). wgmma and ldmatrix read a slot that holds B's transpose as
they read a transposed copy's: the transpose costs no code.

- of a ring slot (`tile.local_load`, copied with cp.async 16 bytes at a time): the slot,
  marked as holding the transpose (`SharedTile.transposed`), which the dot reads in place;
- of registers: left unmade (`defer`); the dot stores its operand, the N x K tile, into
  shared memory as it is, with vector stores along K (`distributed_dot.py`). So too the
  scaled 16-bit B of `dot_scaled` (`tile.registers_a`), which wgmma then reads K-major.
"""

from __future__ import annotations

import dataclasses

from ...passes.tile_fuse import read_as_k_major_b, read_in_place
from ..common.lowerings import lowering
from .distributed_async_copy import SharedTile
from .held_registers import defer
from .register_values import remat_own
from .static_registers import thread_coords


@lowering("tile.trans", target="gpu")
def op_tile_trans(self, op):
    src, result = self.map.get(op.operands[0]), op.results[0]
    if isinstance(src, SharedTile) and read_in_place(result):
        self.map[result] = dataclasses.replace(src, transposed=not src.transposed)
        return
    if read_as_k_major_b(result):
        d = self.dist(result)
        defer(self, result, lambda: self.eval_at(result, self.coords(d), d.num_registers, thread_coords(d, self.threads)))
        return
    remat_own(self, op)
