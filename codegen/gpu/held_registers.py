"""Serving a tile's elements from registers the thread already holds (methods and
helpers of the GPU `Translator`).

A broadcast or reshape reads its operand at other coordinates (a row's maximum,
reduced along the row, broadcast back over it: `x - tile.max(x, axis=1)[:, None]`);
`Translator.eval_at` otherwise gets such elements through shared memory
(`exchange`). Where every thread already holds each element it needs, in a
register that is the same one in every thread, the result is just those
registers, picked at compile time: no shared memory, no barrier. This is what
Triton's slice layouts give: a row reduced along lanes stays in the lanes that
reduced it (after the butterfly every one of them holds it).

The check is numeric, over every thread at once (`static_registers.thread_coords`
gives each thread's coordinates per register). A reduction's own result is
materialized in its layout (through shared memory) only if something needs it
there: a reduction whose users are all broadcasts and reshapes is deferred
(`defer`), and so is a broadcast or reshape whose users are too, since
`eval_at` reads through them to their operand.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from ...dialects.tile_ops import permutation_of
from ...passes.index_values import is_elementwise
from .register_vectors import elements, from_elements
from .static_registers import broadcast_coords, reshape_coords, thread_coords, trans_coords

MAX_CELLS = 1 << 24  # threads x wanted x held registers compared, per dim: bigger tiles keep to shared memory
_READ_THROUGH = ("tile.broadcast", "tile.reshape", "tile.trans")  # lowered by eval_at, which reads their operand


def pick(held: list[np.ndarray], want: list[np.ndarray]) -> list[int] | None:
    """Per wanted register, a held register that holds the wanted element in every thread
    (held, want: per dim, coordinates [threads, registers]); None if some has none."""
    threads, n_held = held[0].shape
    n_want = want[0].shape[1]
    if threads * n_held * n_want > MAX_CELLS:
        return None
    ok = np.ones((n_want, n_held), dtype=bool)
    for h, w in zip(held, want):
        ok &= (w[:, :, None] == h[:, None, :]).all(axis=0)
    if not ok.any(axis=1).all():
        return None
    return ok.argmax(axis=1).tolist()


def only_read_through(value) -> bool:
    """Whether every user of value is a broadcast or reshape (which `eval_at` reads through)."""
    users = [u.owner for u in value.uses]
    return bool(users) and all(u.name in _READ_THROUGH for u in users)


def defer(self, value, materialize) -> None:
    """Leave value unmaterialized: `materialize()` makes it if something asks for it
    (`Translator.value`), kept for later uses in the block it was deferred in."""
    self.map[value] = None
    self.deferred[value] = (materialize, ir.InsertionPoint.current.block)


def _holder(self, v):
    """(a function giving v's held values, their coordinates per thread): a reduction's
    partials or v's own registers, where v is made; else None."""
    if v in self.partials:
        values, held = self.partials[v]
        return (lambda: values), held
    if self.map.get(v) is not None:
        dist = self.dist(v)
        return (lambda: elements(self.value(v), dist.num_registers)), thread_coords(dist, self.threads)
    return None


def servable(self, v, want: list[np.ndarray]) -> bool:
    """Whether v at the coordinates `want` can come from registers each thread holds: v is
    recomputable, or a reduction's partials or v's own registers hold every element
    (`pick`), or v is elementwise, or a broadcast, reshape or layout change, of such values."""
    if self.rematerializable(v):
        return True
    op = None if isinstance(v.owner, ir.Block) else v.owner.operation
    if op is not None and op.name == "tile.broadcast":
        return servable(self, op.operands[0], broadcast_coords(want, ir.RankedTensorType(op.operands[0].type).shape))
    if op is not None and op.name == "tile.reshape":
        src_shape = list(ir.RankedTensorType(op.operands[0].type).shape)
        return servable(self, op.operands[0], reshape_coords(want, list(ir.RankedTensorType(v.type).shape), src_shape))
    if op is not None and op.name == "tile.trans":
        return servable(self, op.operands[0], trans_coords(want, permutation_of(op)))
    if op is not None and op.name == "tile.convert_layout":
        return servable(self, op.operands[0], want)
    holder = _holder(self, v)
    if holder is not None:
        return pick(holder[1], want) is not None
    if op is not None and is_elementwise(op):
        return all(servable(self, o, want) for o in op.operands if isinstance(o.type, ir.RankedTensorType))
    return False


def held_at(self, v, coords: list, n: int, want: list[np.ndarray]):
    """v at `coords` (and numerically `want`, [threads, n] a dim) from registers each thread
    holds, where `servable`; else None (the caller goes through shared memory)."""
    if not servable(self, v, want):
        return None
    holder = _holder(self, v)
    if holder is None:  # elementwise: each operand at these coordinates, then the op register by register
        op = v.owner.operation
        operands = [self.eval_at(o, coords, n, want) if isinstance(o.type, ir.RankedTensorType) else self.value(o)
                    for o in op.operands]
        return self.clone_elementwise(op, operands, n)
    values, held = holder[0](), holder[1]
    return from_elements([values[i] for i in pick(held, want)], ir.RankedTensorType(v.type).element_type)
