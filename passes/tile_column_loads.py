"""`tile-column-loads`: a 2-D load or store whose offsets step by one element down the
columns (dim 0) and by a stride along the rows becomes the transpose of a load (store) of
its transposed offsets, whose last dim is the contiguous one:

    # before: k^T's block read as fla reads k, `o_k[:, None] + o_t[None, :] * HK` (K contiguous)
    %k = "tile.load"(%K, %offs, %mask, %zero) : (...) -> tensor<64x32xbf16>
    # after
    %kt = "tile.load"(%K, %offs_t, %mask_t, %zero_t) : (...) -> tensor<32x64xbf16>
    %k = "tile.trans"(%kt) {permutation = array<i32: 1, 0>} : (...) -> tensor<64x32xbf16>

    # before: a tile stored column-major
    "tile.store"(%Y, %offs, %v, %mask)
    # after
    %vt = "tile.trans"(%v) {permutation = array<i32: 1, 0>}
    "tile.store"(%Y, %offs_t, %vt, %mask_t)

Why: the GPU layouts put a thread's consecutive elements along the last dim, so such a tile
went one element per access (32 scalar `ld.global.b16` a thread for 64 x 64 bf16, a sector
a lane), where its transpose is loaded 16 bytes at a time and reaches the layout its users
want through shared memory (the transpose). Triton's coalescing does the same with a
blocked layout in the column order and a layout conversion. The offsets, mask and `other`
are index values, rebuilt transposed by `tile-trans-loads`' `transposed`.

Not here: a dot operand in a loop, which `tile-pipeline` copies transposed into its ring
(`transposed_copies.py`) or `tile-k-major-loads` already rewrote. Our own pass: upstream
has no tile loads.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..dialects import tile_ops
from ..dialects.layout import element_bits
from .block_access import unit_stride_axis
from .registry import register_pass
from .tile_trans_loads import load_transposed, transposed
from .walk import collect, in_loop


def _column_major(op, data) -> bool:
    """A 2-D access of 8- to 32-bit elements whose offsets step by one down dim 0."""
    if not isinstance(data.type, ir.RankedTensorType):
        return False  # (a scalar access)
    t = ir.RankedTensorType(data.type)
    return t.rank == 2 and 8 <= element_bits(t.element_type) <= 32 and unit_stride_axis(op.operands[1]) == 0


def _read_by_looped_dot(load) -> bool:
    """Whether a dot reads the load (or its transpose) in a loop: `tile-pipeline`'s copies."""
    users = [u.owner for u in load.results[0].uses]
    users += [u.owner for t in users if t.name == "tile.trans" for u in t.results[0].uses]
    return in_loop(load) and any(u.name == "tile.dot" for u in users)


def store_transposed(store) -> None:
    """store(transposed offsets, trans(value), transposed mask)."""
    memo: dict = {}
    base, offsets, value, mask = store.operands
    with ir.InsertionPoint(store), store.location:
        stored = tile_ops.store(base, transposed(offsets, [1, 0], memo), tile_ops.trans(value, [1, 0]),
                                transposed(mask, [1, 0], memo))
    for name in store.attributes:  # (its cache hints)
        stored.attributes[name] = store.attributes[name]
    store.erase()


@register_pass("tile-column-loads")
@dataclass
class TileColumnLoads:
    def run(self, module_op):
        for op in collect(module_op, ("tile.load", "tile.store")):
            if op.name == "tile.load" and _column_major(op, op.results[0]) and not _read_by_looped_dot(op):
                several = len(list(op.results[0].uses)) > 1
                back = load_transposed(op)  # (which replaces a load read once)
                if several:
                    op.results[0].replace_all_uses_with(back)
                    op.erase()
            elif op.name == "tile.store" and _column_major(op, op.operands[2]):
                store_transposed(op)
