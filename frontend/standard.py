"""Emitters of Triton's standard library (`triton/language/standard.py`) and its shape helpers
from `core.py`, composed of the tile ops the language already has, so that both targets run
them with no lowering of their own:

- `sort`, `topk`, `bitonic_merge`: Triton's bitonic network along the last dim, its steps a run-time loop
  (`scf.for`) of one compare-and-swap: each element's partner read by a `gather` (on a GPU,
  through shared memory), then Triton's `where`.
- `flip`: one `gather` at the reversed index along the dim.
- `histogram`: per bin, the number of elements equal to it (a compare and a `sum`); see
  `_histogram` for why no atomics.
- `cat`, `broadcast`, `view`, `squeeze`, `unsqueeze`, `swizzle2d`, `softmax`: as Triton's.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import scf

from ..dialects import tile_ops
from . import semantics
from .builtins import EMITTERS, SemanticError, _const_int, _tile, emitter
from .dtypes import int1, int8, int16, int32, int64
from .values import Tile

_SIGNED = {8: int8, 16: int16, 32: int32, 64: int64}
# Elements compared per step of a histogram: each input against every bin.
HISTOGRAM_STEP = 1 << 14


def _operand(x, what: str) -> Tile:
    x = semantics.computable(_tile(x, f"{what}'s operand"), f"{what}'s operand")
    if x.is_scalar:
        raise SemanticError(f"{what} needs a tile, got a scalar")
    return x


def _bool(v, what: str) -> bool:
    if isinstance(v, Tile) or not isinstance(v, (bool, int)):
        raise SemanticError(f"{what} must be a compile-time bool (a constexpr), got {v!r}")
    return bool(v)


def _last_dim(x: Tile, dim, what: str) -> int:
    """The sorted dim: None or the last (Triton sorts only along the last dim)."""
    last = len(x.shape) - 1
    if dim is None:
        return last
    dim = _const_int(dim, f"{what}'s dim")
    if dim not in (last, -1):
        raise SemanticError(f"{what} sorts along the last dim only ({last} of a tile of shape {x.shape}), got dim={dim}")
    return last


def _compare_and_swap(x: Tile, j, flip_bit, descending: bool) -> Tile:
    """One step of Triton's bitonic network along x's last dim (of m): each pair of elements
    2**j apart (j an int or an int32 scalar) holds its smaller value at the left, at the right
    where bit `flip_bit` of the index is 1, the order of the runs the step merges (bit log2(m):
    `descending`, the last merge's order). The partner is a `gather` at the index xor 2**j,
    and the swap Triton's `where((x > y) != (flip ^ right), y, x)`."""
    m = x.shape[-1]
    ones = [1] * (len(x.shape) - 1)
    index = EMITTERS["reshape"](Tile(tile_ops.arange(0, m)), tuple(ones + [m]))
    partner = semantics.broadcast_to(semantics.binary("^", index, semantics.binary("<<", 1, j)), x.shape)
    y = EMITTERS["gather"](x, partner, len(x.shape) - 1)
    right = semantics.binary("&", semantics.binary(">>", index, j), 1)
    flip = semantics.binary("&", semantics.binary(">>", semantics.binary("|", index, int(descending) * m), flip_bit), 1)
    swap = semantics.compare("!=", semantics.compare(">", x, y), semantics.compare("!=", semantics.binary("^", flip, right), 0))
    return semantics.where(swap, y, x)


def _loop(lo, hi, x: Tile, body) -> Tile:
    """x carried through `scf.for i in range(lo, hi)` (int32 bounds, ints or scalars), each
    iteration `x = body(i, x)`: one copy of a network's step, not one per step (a 1024-element
    sort has 55), so that both targets compile it in seconds."""
    lo, hi = (v if isinstance(v, Tile) else semantics.constant(v, int32) for v in (lo, hi))
    op = scf.ForOp(lo.value, hi.value, semantics.constant(1, int32).value, [x.value])
    with ir.InsertionPoint(op.body):
        scf.YieldOp([body(Tile(op.induction_variable), Tile(op.inner_iter_args[0])).value])
    return Tile(op.results[0])


def _merge(x: Tile, stage, flip_bit, descending: bool) -> Tile:
    """Triton's `_bitonic_merge_hypercube`: `stage` steps, pairs 2**(stage-1) apart first."""
    last = stage - 1 if isinstance(stage, int) else semantics.binary("-", stage, 1)
    return _loop(0, stage, x, lambda t, x: _compare_and_swap(x, semantics.binary("-", last, t), flip_bit, descending))


def _to_key(x: Tile) -> tuple[Tile, object]:
    """x as values that compare as x does under signed or float comparisons, and the inverse:
    a bool as int8, an unsigned int with its top bit flipped (then read as signed)."""
    if x.dtype == int1:
        return semantics.cast(x, int8), lambda k: semantics.compare("!=", k, 0)
    if x.dtype.is_int_unsigned():
        signed = _SIGNED[x.dtype.bits]
        low = semantics.constant(-(1 << (x.dtype.bits - 1)), signed)
        key = semantics.binary("^", EMITTERS["cast"](x, signed, bitcast=True), low)
        return key, lambda k, dt=x.dtype: EMITTERS["cast"](semantics.binary("^", k, low), dt, bitcast=True)
    return x, lambda k: k


def _sort(x, k, dim, descending, what: str) -> Tile:
    """Triton's `sort_impl`: sort the last dim (k None) or keep its top k, in order."""
    x = _operand(x, what)
    if x.dtype.bits == 8 and x.dtype.is_float:
        raise SemanticError(f"{what} of a {x.dtype!r} tile is not supported: convert it to a wider float first")
    _last_dim(x, dim, what)
    descending = _bool(descending, f"{what}'s descending")
    n = x.shape[-1]
    log_n = n.bit_length() - 1
    if k is not None:
        k = _const_int(k, "topk's k")
        if k <= 0 or k & (k - 1) or k > n:
            raise SemanticError(f"topk's k must be a power of two from 1 to the last dim's size {n}, got {k}")
    log_k = log_n if k is None else k.bit_length() - 1
    x, back = _to_key(x)
    if log_k == 0:  # (a single element: the extremum)
        return back(EMITTERS["max" if descending else "min"](x, len(x.shape) - 1, keep_dims=True))
    # sorted runs of 2**s for s = 1 .. log_k, their orders alternating by bit s of the index
    x = _loop(1, log_k + 1, x, lambda s, x: _merge(x, s, s, descending))
    # bitonic top-k: keep the better of each pair of runs of k (the halves of each run of 2k),
    # merge, repeat
    batch = list(x.shape[:-1])
    for i in range(log_k + 1, log_n + 1):
        runs = EMITTERS["reshape"](x, tuple(batch + [x.shape[-1] >> (log_k + 1), 2, 1 << log_k]))
        kept = EMITTERS["max" if descending else "min"](runs, len(batch) + 1)
        x = _merge(EMITTERS["reshape"](kept, tuple(batch + [x.shape[-1] // 2])), log_k, log_k, descending)
    return back(x)


@emitter("sort")
def _sort_emitter(x, dim=None, descending=False):
    """Triton's `tl.sort`: x sorted along its last dim (a bitonic sorting network)."""
    return _sort(x, None, dim, descending, "sort")


@emitter("topk")
def _topk(x, k, dim=None, descending=True):
    """Triton's `tl.topk`: the k largest (smallest with descending=False) of the last dim, in order."""
    return _sort(x, k, dim, descending, "topk")


@emitter("bitonic_merge")
def _bitonic_merge(x, dim=None, descending=False):
    """Triton's `tl.bitonic_merge`: x's last dim, a bitonic sequence (one that rises then falls,
    or falls then rises), sorted by the network's last merge alone."""
    x = _operand(x, "bitonic_merge")
    _last_dim(x, dim, "bitonic_merge")
    descending = _bool(descending, "bitonic_merge's descending")
    x, back = _to_key(x)
    log_n = x.shape[-1].bit_length() - 1
    return back(_merge(x, log_n, log_n, descending) if log_n else x)


@emitter("flip")
def _flip(x, dim=None):
    """Triton's `tl.flip`: x reversed along `dim` (default: the last), one `gather`."""
    x = _operand(x, "flip")
    rank = len(x.shape)
    dim = rank - 1 if dim is None else _const_int(dim, "flip's dim")
    if not -rank <= dim < rank:
        raise SemanticError(f"flip's dim {dim} is out of range for a tile of shape {x.shape}")
    dim %= rank
    n = x.shape[dim]
    index = semantics.binary("-", n - 1, Tile(tile_ops.arange(0, n)))
    index = semantics.broadcast_to(EMITTERS["reshape"](index, tuple(n if d == dim else 1 for d in range(rank))), x.shape)
    return EMITTERS["gather"](x, index, dim)


@emitter("histogram")
def _histogram(x, num_bins, mask=None):
    """Triton's `tl.histogram`: int32 counts of the values 0 .. num_bins - 1 among x's (a 1-D
    int32 tile's), those where `mask` is false left out, as are values outside the bins.

    Each bin counts the elements equal to it: a [chunk, num_bins] compare summed along the
    chunk, a chunk of x at a time. No atomics, so the counts are exact however many elements
    (and GPU threads) hit one bin, and deterministic; the cost is x's size times num_bins
    compares, which suits the few hundred bins of an MoE's experts."""
    x = _operand(x, "histogram")
    if len(x.shape) != 1 or x.dtype != int32:
        raise SemanticError(f"histogram needs a 1-D int32 tile, got shape {x.shape} of {x.dtype!r}")
    bins = _const_int(num_bins, "histogram's num_bins")
    if bins < 1 or bins & (bins - 1):
        raise SemanticError(f"histogram's num_bins must be a power of two, got {bins}")
    n = x.shape[0]
    if mask is not None:
        mask = _tile(mask, "histogram's mask")
        if mask.dtype != int1:
            raise SemanticError(f"histogram's mask must be a bool tile, got {mask.dtype!r}")
        mask = semantics.broadcast_to(mask, [n])
        x = semantics.where(mask, x, -1)  # (no bin holds -1)
    if n * bins > 64 * HISTOGRAM_STEP:
        raise SemanticError(f"histogram of {n} elements into {bins} bins takes {n * bins} compares, past the "
                            f"{64 * HISTOGRAM_STEP} of one program: use fewer elements per program")
    step = max(1, min(n, HISTOGRAM_STEP // bins))
    values = EMITTERS["reshape"](x, (n // step, step))
    edges = EMITTERS["reshape"](Tile(tile_ops.arange(0, bins)), (1, bins))
    counts = None
    for c in range(n // step):
        chunk = values if n == step else _row(values, c)
        hits = semantics.compare("==", EMITTERS["reshape"](chunk, (step, 1)), edges)
        part = EMITTERS["sum"](hits, 0)
        counts = part if counts is None else semantics.binary("+", counts, part)
    return counts


def _row(t: Tile, r: int) -> Tile:
    """Row r of a 2-D tile, as a 1-D tile: the sum of the rows, the others zeroed. (A `gather`
    at a constant row is an internal error in the GPU codegen's registers path today.)"""
    rows = EMITTERS["reshape"](Tile(tile_ops.arange(0, t.shape[0])), (t.shape[0], 1))
    return EMITTERS["sum"](semantics.where(semantics.compare("==", rows, r), t, 0), 0)


@emitter("cat")
def _cat(input, other, can_reorder=False, dim=0):
    """Triton's `tl.cat`: a and b (of one shape) one after the other along `dim`; the result's
    dim doubles (a join, its new dim moved before `dim`, merged)."""
    a, b = _operand(input, "cat"), _operand(other, "cat")
    if a.shape != b.shape:
        raise SemanticError(f"cat needs tiles of one shape, got {a.shape} and {b.shape}")
    rank = len(a.shape)
    dim = _const_int(dim, "cat's dim")
    if not -rank <= dim < rank:
        raise SemanticError(f"cat's dim {dim} is out of range for tiles of shape {a.shape}")
    dim %= rank
    joined = EMITTERS["join"](a, b)
    order = list(range(rank))
    order.insert(dim, rank)
    shape = list(a.shape)
    shape[dim] *= 2
    return EMITTERS["reshape"](EMITTERS["permute"](joined, order), tuple(shape))


@emitter("broadcast")
def _broadcast(input, other):
    """Triton's `tl.broadcast`: both operands broadcast to their common shape."""
    a, b = _tile(input, "broadcast's input"), _tile(other, "broadcast's other")
    shape = semantics.broadcast_shapes(a.shape, b.shape)
    return semantics.broadcast_to(a, shape), semantics.broadcast_to(b, shape)


@emitter("view")
def _view(input, *shape):
    """Triton's (deprecated) `tl.view`: a reshape; here the order is kept."""
    return EMITTERS["reshape"](input, *shape)


@emitter("squeeze")
def _squeeze(x, dim):
    """Triton's `tl.squeeze`: x without its dim `dim`, of size 1."""
    x = _operand(x, "squeeze")
    rank = len(x.shape)
    dim = _const_int(dim, "squeeze's dim")
    if not -rank <= dim < rank or x.shape[dim] != 1:
        raise SemanticError(f"squeeze's dim {dim} must be a dim of size 1 of the tile's shape {x.shape}")
    dim %= rank
    shape = x.shape[:dim] + x.shape[dim + 1:]
    return EMITTERS["reshape"](x, tuple(shape)) if shape else _scalar(x)


def _scalar(x: Tile) -> Tile:
    """A one-element tile's element."""
    return EMITTERS["max"](x)


@emitter("unsqueeze")
def _unsqueeze(x, dim):
    """Triton's `tl.unsqueeze`: x with a dim of size 1 inserted at `dim`."""
    x = _tile(x, "unsqueeze's operand")
    rank = len(x.shape) + 1
    dim = _const_int(dim, "unsqueeze's dim")
    if not -rank <= dim < rank:
        raise SemanticError(f"unsqueeze's dim {dim} is out of range for a result of rank {rank}")
    return EMITTERS["expand_dims"](x, dim % rank)


@emitter("swizzle2d")
def _swizzle2d(i, j, size_i, size_j, size_g):
    """Triton's `tl.swizzle2d`: the (i, j) of a row-major size_i x size_j grid renumbered
    column-major within each group of size_g rows (the last group may have fewer)."""
    if not any(isinstance(v, Tile) for v in (i, j, size_i, size_j, size_g)):  # (on the host's ints: Python's)
        ij, size_gj = i * size_j + j, size_g * size_j
        off_i = ij // size_gj * size_g
        size_g, ij = min(size_i - off_i, size_g), ij % size_gj
        return off_i + ij % size_g, ij // size_g
    ij = semantics.binary("+", semantics.binary("*", i, size_j), j)
    size_gj = semantics.binary("*", size_g, size_j)
    off_i = semantics.binary("*", semantics.binary("//", ij, size_gj), size_g)
    size_g = EMITTERS["minimum"](semantics.binary("-", size_i, off_i), size_g)
    ij = semantics.binary("%", ij, size_gj)
    return semantics.binary("+", off_i, semantics.binary("%", ij, size_g)), semantics.binary("//", ij, size_g)


@emitter("softmax")
def _softmax(x, dim=None, keep_dims=None, ieee_rounding=False):
    """Triton's `tl.softmax` along `dim` (default 0, not torch's last dim)."""
    x = _operand(x, "softmax")
    dim = 0 if dim is None else dim
    z = semantics.binary("-", x, EMITTERS["max"](x, dim, keep_dims=True))
    num = EMITTERS["exp"](z)
    return EMITTERS["math.fdiv"](num, EMITTERS["sum"](num, dim, keep_dims=True), ieee_rounding)
