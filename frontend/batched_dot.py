"""`tile.dot` of rank-3 tiles (Triton's batched `tl.dot`): [B, M, K] x [B, K, N] (+ [B, M, N])
-> [B, M, N], as B dots of rank 2.

Each batch is taken out with a `tile.gather` along dim 0 at a constant index, multiplied by
the 2-D dot (so the target picks mma/wgmma and layouts as for any dot), and the results are
put back with a `where` on the batch index. The batch of a tile is small (the tile lives in
one program's registers), so B dots cost what one dot of B times the rows would."""

from __future__ import annotations

from ..dialects import tile_ops
from . import semantics
from .builtins import EMITTERS
from .dtypes import int32
from .semantics import SemanticError
from .values import Tile
from .values import describe as _describe


def _batch(x: Tile, b: int) -> Tile:
    """x[b] of a [B, ...] tile."""
    index = semantics.constant(b, int32, [1] + list(x.shape[1:]))
    return EMITTERS["reshape"](Tile(tile_ops.gather(x.value, index.value, 0)), tuple(x.shape[1:]))


def batched_dot(dot, a: Tile, b: Tile, acc, **options) -> Tile:
    """`dot` (the 2-D emitter) of each batch of a and b, onto acc's."""
    if len(b.shape) != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise SemanticError(f"a batched dot needs (B, M, K) and (B, K, N) tiles, got {a.shape} and {b.shape}")
    batches, m, n = a.shape[0], a.shape[1], b.shape[2]
    if acc is not None and (not isinstance(acc, Tile) or list(acc.shape) != [batches, m, n]):
        raise SemanticError(f"a batched dot's acc must be a ({batches}, {m}, {n}) tile, got {_describe(acc)}"
                            + (f" of shape {acc.shape}" if isinstance(acc, Tile) else ""))
    out = None
    which = Tile(tile_ops.arange(0, batches))
    which = semantics.broadcast_to(EMITTERS["reshape"](which, (batches, 1, 1)), [batches, m, n])
    for i in range(batches):
        c = dot(_batch(a, i), _batch(b, i), None if acc is None else _batch(acc, i), **options)
        c = semantics.broadcast_to(EMITTERS["reshape"](c, (1, m, n)), [batches, m, n])
        out = c if out is None else semantics.where(semantics.compare("==", which, i), c, out)
    return out
