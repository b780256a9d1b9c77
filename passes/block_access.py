"""Whether a 2-D `tile.load` reads (or a `tile.store` writes) a block of a row-major
tensor masked exactly at the tensor's bounds: the copy a TMA unit does in hardware
(`tile-pipeline`, `tile-tma-stores`).

    offsets = rm[:, None] * s + rc[None, :]     rm = r0 + arange(R), rc = c0 + arange(C)
    mask    = (rm[:, None] < rows) & (rc[None, :] < cols)

is the R x C block at (r0, c0) of a rows x cols tensor of row stride `s`,
zero outside it. The column stride must be the constant 1 (a unit stride the
specialization folded away), either operand of `+` and `&` may come first,
and the vectors may be reshaped, broadcast and grouped on the way. With the
unit stride on the rows instead (`rm[:, None] + rc[None, :] * s`: a column-major
tensor, such as the B of x @ W.T), the block is `transposed`: the C x R block
at (c0, r0) of the cols x rows row-major tensor of row stride `s`.

A `cp.async` copy of a column-major block (`match_copy_block`) needs less: the
offsets may add scalar bases (a batch's and head's start, attention's K read
transposed; a pointer a loop advanced, `+ splat(k * step)`), be 64-bit, and the mask
may bound one dim, or none (a whole tile):

    offsets = (x + rd[:, None]) + rn[None, :] * s + y     mask = rn[None, :] < n
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith

from .tile_fuse import through_groups


@dataclass
class Block:
    row: tuple  # (scalar i32 value or None, constant): r0 = value + constant
    col: tuple
    rows: ir.Value  # the bounds and the row stride, i32 scalars
    cols: ir.Value
    stride: ir.Value  # of the rows, or of the columns when `transposed`
    transposed: bool = False
    bases: tuple = ()  # scalars (i32 or i64) added to every offset (`match_copy_block` only)
    unsigned: bool = False  # its mask compares unsigned (a descriptor's: a negative index is outside; `match_copy_block` only)


def start_value(start: tuple, mapping: dict) -> ir.Value:
    """A block's row or column start (`Block.row`/`col`: value + constant) as an i32, its
    value as `mapping` holds it (its clone at the iteration being issued)."""
    value, const = start
    if value is None:
        return arith.ConstantOp(ir.IntegerType.get_signless(32), const).result
    value = _outside_groups(value, mapping)
    return arith.addi(value, arith.ConstantOp(ir.IntegerType.get_signless(32), const).result) if const else value


def _outside_groups(v, mapping: dict) -> ir.Value:
    """v as `mapping` holds it; where a fusion group computes it inside (a splat's scalar,
    `KH + k0`, that nothing outside reads), its scalar ops cloned here, where the copy is
    made: a value inside a group is not visible outside it.

        # before -> after (at the issue point)
        %g = scf.execute_region { %s = arith.addi %kh, %k0 ... }   ->   %s' = arith.addi %kh, %k0'
    """
    if isinstance(v.owner, ir.Block) or v.owner.operation.parent.name != "scf.execute_region":
        return mapping.get(v, v)
    op = v.owner.operation
    operands = [_outside_groups(x, mapping) for x in op.operands]  # (cloned first: they come before it)
    new = op.clone()
    for n, x in enumerate(operands):
        new.operands[n] = x
    return new.results[list(op.results).index(v)]


def _owner(v):
    v = through_groups(v)
    return (None if isinstance(v.owner, ir.Block) else v.owner.operation), v


def _shape(v) -> list[int]:
    return list(ir.RankedTensorType(v.type).shape)


def _under_broadcast(v):
    """(axis, 2-D value) for a tile that is an R x 1 (axis 0) or 1 x C (axis 1) value broadcast."""
    op, v = _owner(v)
    while op is not None and op.name in ("tile.broadcast", "tile.convert_layout"):
        op, v = _owner(op.operands[0])
    shape = _shape(v)
    if len(shape) != 2 or 1 not in shape:
        return None
    return (0 if shape[1] == 1 else 1), v


def _vector(v):
    """The 1-D value an R x 1 or 1 x C tile reshapes, or None; through sign extensions (an
    index vector widened to the i64 offsets of a 64-bit base, as `.to(tl.int64)` makes them)."""
    op, _ = _owner(v)
    if op is not None and op.name == "arith.extsi":
        op, _ = _owner(op.operands[0])
    if op is None or op.name != "tile.reshape":
        return None
    return through_groups(op.operands[0])


def _splat(v):
    op, _ = _owner(v)
    return op.operands[0] if op is not None and op.name == "tile.splat" else None


def _start(vec):
    """(scalar or None, constant) when vec = splat(x) + arange(c, c + n), or arange alone."""
    op, _ = _owner(vec)
    if op is None:
        return None
    if op.name == "tile.arange":
        return None, ir.IntegerAttr(op.attributes["start"]).value
    if op.name != "arith.addi":
        return None
    for a, b in (op.operands, list(op.operands)[::-1]):
        x, ar = _splat(a), _owner(b)[0]
        if x is not None and ar is not None and ar.name == "tile.arange":
            return x, ir.IntegerAttr(ar.attributes["start"]).value
    return None


def _same_vector(a, b) -> bool:
    """a and b hold the same values: one value, or two computations of `splat(x) + arange`
    of one x (the offsets' and the mask's `k * BK + offs_k`, each written out by the user)."""
    if a == b:
        return True
    sa, sb = _start(a), _start(b)
    if sa is None or sb is None or sa[1] != sb[1] or (sa[0] is None) != (sb[0] is None) or _shape(a) != _shape(b):
        return False
    return sa[0] is None or sa[0] == sb[0]


def _offset_term(v):
    """(axis, vector, stride or None for 1) of one `+` operand of the offsets."""
    found = _under_broadcast(v)
    if found is None:
        return None
    return _term(*found)


def _based_term(v):
    """(axis, vector, stride or None, base scalar or None): `_offset_term`, or a scalar splat
    plus one, before the broadcast."""
    found = _under_broadcast(v)
    if found is None:
        return None
    axis, t = found
    op, _ = _owner(t)
    if op is not None and op.name == "arith.addi":
        for a, b in (op.operands, list(op.operands)[::-1]):
            term = _splat(a) is not None and _term(axis, b)
            if term:
                return (*term, _splat(a))
    term = _term(axis, t)
    return term and (*term, None)


def _term(axis, t):
    """(axis, vector, stride or None for 1) of an R x 1 or 1 x C offset term."""
    vec = _vector(t)
    if vec is not None:
        return axis, vec, None
    op, _ = _owner(t)
    if op is not None and op.name == "arith.extsi":  # (an i32 product widened: `(rn * s).to(int64)`)
        op, _ = _owner(op.operands[0])
    if op is None or op.name != "arith.muli":
        return None
    for a, b in (op.operands, list(op.operands)[::-1]):
        vec, s = _vector(a), _splat(b)
        if vec is not None and s is not None:
            return axis, vec, s
    return None


SLT, ULT = 2, 6  # arith.cmpi predicates


def _mask_term(v, predicates=(SLT, ULT)):
    """(axis, vector, bound) of one `&` operand of the mask: vector < bound, signed or unsigned
    (a descriptor's: a negative index out of bounds too, as a TMA copy takes it); `predicates`
    (SLT,) where the copy made of it compares signed (`match_copy_block`)."""
    found = _under_broadcast(v)
    if found is None:
        return None
    axis, t = found
    op, _ = _owner(t)
    if op is None or op.name != "arith.cmpi" or ir.IntegerAttr(op.attributes["predicate"]).value not in predicates:
        return None
    vec, bound = _vector(op.operands[0]), _splat(op.operands[1])
    return (axis, vec, bound) if vec is not None and bound is not None else None


def _pair(v, name, term):
    """The two terms of `name`(a, b), ordered by axis (rows, then columns), or None; through
    layout conversions (a store's offsets and mask follow its value's layout)."""
    op, _ = _owner(v)
    while op is not None and op.name == "tile.convert_layout":
        op, _ = _owner(op.operands[0])
    if op is None or op.name != name:
        return None
    terms = [term(o) for o in op.operands]
    if None in terms or {t[0] for t in terms} != {0, 1}:
        return None
    return sorted(terms, key=lambda t: t[0])


def unit_stride_axis(offsets) -> int | None:
    """The axis along which 2-D `offsets` (rows[:, None] * s + cols[None, :] * t, scalars added
    as splats, also inside a term: `(base + rows * s)[:, None]`, as attention's backward reads
    a head's rows) step by one element while the other has a stride: 0 for a column-major
    tile (a float8 dot's K-major B); None if neither, or unknown."""
    op, v = _owner(offsets)
    while op is not None and op.name == "arith.addi":  # (pointer increments: + splat(k * step))
        a, b = op.operands
        if _splat(b) is None and _splat(a) is None:
            break
        v = a if _splat(b) is not None else b
        op, _ = _owner(v)
    terms = _pair(v, "arith.addi", _based_term)
    if terms is None or (terms[0][2] is None) == (terms[1][2] is None):
        return None
    return 0 if terms[0][2] is None else 1


def match_copy_block(load) -> Block | None:
    """The column-major block `load` (a `tile.load` of a 2-D tile) reads, as a `cp.async`
    copy may take it (module doc): its `base` set where the offsets add a scalar, its
    `rows` or `cols` None where the mask does not bound them. Else None."""
    _, offsets, mask, _ = load.operands
    if len(_shape(load.results[0])) != 2:
        return None
    return _copy_block(offsets, mask, SLT) or _copy_block(offsets, mask, ULT)


def _copy_block(offsets, mask, predicate: int) -> Block | None:
    """`match_copy_block`'s block where the mask's compares are all `predicate`."""
    offsets, outer = _scalar_terms(offsets)
    offs = _pair(offsets, "arith.addi", _based_term)
    if offs is None:
        return None
    (_, row_vec, row_stride, b0), (_, col_vec, col_stride, b1) = offs
    compare = lambda v: _mask_term(v, (predicate,))  # noqa: E731  (transposed_copies.py masks its copies alike)
    pair = _pair(mask, "arith.andi", compare)
    single = compare(mask)
    bounds = {t[0]: t[1:] for t in pair or ([single] if single else [])}
    if (not bounds and not _all_true(mask)) or row_stride is not None or col_stride is None:
        return None  # a unit stride on the rows only
    if any(not _same_vector(vec, (row_vec, col_vec)[axis]) for axis, (vec, _) in bounds.items()):
        return None
    row, col = _start(row_vec), _start(col_vec)
    if row is None or col is None:
        return None
    rows, cols = (bounds[axis][1] if axis in bounds else None for axis in (0, 1))
    return Block(row, col, rows, cols, col_stride, transposed=True,
                 bases=tuple(b for b in (b0, b1) if b is not None) + outer, unsigned=predicate == ULT)


def _scalar_terms(offsets) -> tuple:
    """(x, (b, ...)) for offsets = x + splat(b) + ... (a pointer a loop advanced, its
    `+ splat(k * step)` from `tile-induction-offsets`; a scalar added to a pointer tile)."""
    outer = []
    while True:
        op, _ = _owner(offsets)
        if op is None or op.name != "arith.addi":
            return offsets, tuple(outer)
        a, b = op.operands
        if _splat(b) is not None and _splat(a) is None:
            outer.append(_splat(b))
            offsets = a
        elif _splat(a) is not None and _splat(b) is None:
            outer.append(_splat(a))
            offsets = b
        else:
            return offsets, tuple(outer)


def _all_true(mask) -> bool:
    """mask is a splat of the constant true (an unmasked load's)."""
    op = None if _splat(mask) is None else _owner(_splat(mask))[0]
    return op is not None and op.name == "arith.constant" and isinstance(op.attributes["value"], ir.BoolAttr) \
        and op.attributes["value"].value


def match_block(load) -> Block | None:
    """The block `load` (a `tile.load` of a 2-D tile) reads, or None if it is not one."""
    _, offsets, mask, _ = load.operands
    return _match(offsets, mask) if len(_shape(load.results[0])) == 2 else None


def match_store_block(store) -> Block | None:
    """The block `store` (a `tile.store` of a 2-D tile) writes, or None if it is not one."""
    _, offsets, value, mask = store.operands
    return _match(offsets, mask) if len(_shape(value)) == 2 else None


def _match(offsets, mask) -> Block | None:
    offsets, outer = _scalar_terms(offsets)  # (a pointer a loop advanced, `tile-induction-offsets`)
    if len(outer) > 1:
        return None
    base = outer[0] if outer else None
    offs, masks = _pair(offsets, "arith.addi", _offset_term), _pair(mask, "arith.andi", _mask_term)
    if offs is None or masks is None:
        return None
    (_, row_vec, row_stride), (_, col_vec, col_stride) = offs
    (_, row_vec2, rows), (_, col_vec2, cols) = masks
    if (row_stride is None) == (col_stride is None) or not _same_vector(row_vec, row_vec2) \
            or not _same_vector(col_vec, col_vec2):
        return None  # exactly one unit stride
    row, col = _start(row_vec), _start(col_vec)
    if row is None or col is None:
        return None
    if base is not None:
        shifted = _shifts(base, (row, rows, row_stride), (col, cols, col_stride))
        if shifted is None:
            return None
        (row, rows), (col, cols) = shifted
    return Block(row, col, rows, cols, row_stride if row_stride is not None else col_stride, transposed=row_stride is None)


def _shifts(base, *axes):
    """The block a pointer advanced by `base` elements reads, as the index form would: the
    mask then bounds the advance too (`rk < K - k * BK`), so each axis whose bound is
    `n - d` moved by d rows (or columns), where base == sum of d * stride; the start
    (None, c) becomes (d, c) and the bound n. ((row, rows), (col, cols)), or None where
    base is not such a sum.

        offsets = rm[:, None] * s + rk[None, :] + splat(k * BK)
        mask    = (rm[:, None] < M) & (rk[None, :] < K - k * BK)    ->  col = (k * BK, 0), cols = K
    """
    target = _poly(base)
    moves = []
    for start, bound, _ in axes:
        op, _ = _owner(bound)
        moves.append(op.operands if op is not None and op.name == "arith.subi" and start[0] is None else None)
    for which in ((0, 1), (0,), (1,)):
        if any(moves[a] is None for a in which):
            continue
        total: dict = {}
        for a in which:
            stride = axes[a][2]
            _add(total, _times(_poly(moves[a][1]), _poly(stride) if stride is not None else {(): 1}))
        if {k: c for k, c in total.items() if c} == {k: c for k, c in target.items() if c}:
            return tuple(((moves[a][1], start[1]), moves[a][0]) if a in which else (start, bound)
                         for a, (start, bound, _) in enumerate(axes))
    return None


def _poly(v) -> dict:
    """An i32 scalar as a polynomial in the values it is made of: {(leaves...): coefficient},
    so that k * (BK * s) and (k * BK) * s compare equal."""
    op, v = _owner(v)
    if op is not None and op.name == "arith.constant" and isinstance(op.attributes["value"], ir.IntegerAttr):
        return {(): ir.IntegerAttr(op.attributes["value"]).value}
    if op is not None and op.name in ("arith.addi", "arith.subi"):
        out = dict(_poly(op.operands[0]))
        _add(out, _poly(op.operands[1]), -1 if op.name == "arith.subi" else 1)
        return out
    if op is not None and op.name == "arith.muli":
        return _times(_poly(op.operands[0]), _poly(op.operands[1]))
    return {(_Leaf(v),): 1}


class _Leaf:
    """A value as a polynomial's variable: equal by identity, ordered by hash."""

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return self.v == other.v

    def __hash__(self):
        return hash(self.v)

    def __lt__(self, other):
        return hash(self.v) < hash(other.v)


def _add(into: dict, p: dict, sign: int = 1):
    for k, c in p.items():
        into[k] = into.get(k, 0) + sign * c


def _times(p: dict, q: dict) -> dict:
    out: dict = {}
    for k1, c1 in p.items():
        for k2, c2 in q.items():
            _add(out, {tuple(sorted(k1 + k2)): c1 * c2})
    return out
