"""The range of values an integer tile (or scalar) can hold, where its ops prove one:
a small interval evaluator over `arith` and the tile shape ops, for rewrites that
need a bound (`tile-small-int-to-float`). Upstream's `IntegerRangeAnalysis` does
this in C++ but is not reachable from the Python bindings.

    %b = arith.extsi %bytes : tensor<64xi8> to tensor<64xi32>    // [-128, 127]
    %n = arith.andi %b, %c15 : tensor<64xi32>                     // [0, 15]
    %q = arith.subi %n, %c8 : tensor<64xi32>                      // [-8, 7]
    %r = "tile.arange"() {start = 0 : i32, end = 64 : i32}        // [0, 63]

`int_range(v)` is (lo, hi) with lo <= v <= hi (as signed integers), or None when
nothing tighter than the type's own range is proven.
"""

from __future__ import annotations

from mlir import ir

_THROUGH = {"tile.splat", "tile.broadcast", "tile.reshape", "tile.trans", "tile.convert_layout"}


def _width(v) -> int | None:
    t = v.type
    if isinstance(t, ir.RankedTensorType):
        t = ir.RankedTensorType(t).element_type
    return ir.IntegerType(t).width if isinstance(t, ir.IntegerType) else None


def _constant(op) -> int | None:
    attr = op.attributes["value"]
    if isinstance(attr, ir.IntegerAttr):
        return ir.IntegerAttr(attr).value
    if isinstance(attr, ir.DenseIntElementsAttr) and ir.DenseElementsAttr(attr).is_splat:
        return ir.IntegerAttr(ir.DenseElementsAttr(attr).get_splat_value()).value
    return None


def constant_int(v) -> int | None:
    """The int an `arith.constant` (or a splat of one, or a splat dense constant) makes v, else None."""
    if isinstance(v.owner, ir.Block):
        return None
    op = v.owner.operation
    if op.name == "tile.splat":
        return constant_int(op.operands[0])
    return _constant(op) if op.name == "arith.constant" else None


def _fits(r, width: int):
    """r, if every value in it is an i`width` (signed), else None (the op may wrap)."""
    return r if r is not None and -(1 << (width - 1)) <= r[0] and r[1] < (1 << (width - 1)) else None


def int_range(v, depth: int = 0):
    width = _width(v)
    if width is None or depth > 16 or isinstance(v.owner, ir.Block):
        return None
    op = v.owner.operation
    name = op.name

    def arg(i):
        return int_range(op.operands[i], depth + 1)

    if name == "arith.constant":
        c = _constant(op)
        return None if c is None else (c, c)
    if name == "tile.arange":
        return (ir.IntegerAttr(op.attributes["start"]).value, ir.IntegerAttr(op.attributes["end"]).value - 1)
    if name in _THROUGH:
        return arg(0)
    if name in ("arith.extsi", "arith.extui"):
        src = _width(op.operands[0])
        if name == "arith.extui" or src == 1:  # (an i1 extends to 0 or 1 either way if extui)
            return (0, (1 << src) - 1) if name == "arith.extui" else (-1, 0)
        return arg(0) or (-(1 << (src - 1)), (1 << (src - 1)) - 1)
    if name == "arith.andi":  # a non-negative operand bounds the result
        bounds = [r[1] for r in (arg(0), arg(1)) if r is not None and r[0] >= 0]
        return (0, min(bounds)) if bounds else None
    if name in ("arith.shrsi", "arith.shrui"):
        a, k = arg(0), arg(1)
        if k is None or k[0] != k[1] or not 0 <= k[0] < width:
            return None
        if a is not None and (a[0] >= 0 or name == "arith.shrsi"):
            return (a[0] >> k[0], a[1] >> k[0])
        return (0, (1 << (width - k[0])) - 1) if name == "arith.shrui" and k[0] else None
    if name in ("arith.addi", "arith.subi", "arith.muli", "arith.maxsi", "arith.minsi"):
        a, b = arg(0), arg(1)
        if a is None or b is None:
            return None
        if name == "arith.addi":
            return _fits((a[0] + b[0], a[1] + b[1]), width)
        if name == "arith.subi":
            return _fits((a[0] - b[1], a[1] - b[0]), width)
        if name == "arith.muli":
            products = [x * y for x in a for y in b]
            return _fits((min(products), max(products)), width)
        pick = max if name == "arith.maxsi" else min
        return (pick(a[0], b[0]), pick(a[1], b[1]))
    if name == "arith.select":
        a, b = arg(1), arg(2)
        return None if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1]))
    if name in ("arith.divsi", "arith.divui"):  # by a positive constant: the bounds divided
        a, d = arg(0), arg(1)
        if a is None or d is None or d[0] != d[1] or d[0] <= 0 or (name == "arith.divui" and a[0] < 0):
            return None
        def trunc(x):  # arith's division rounds toward zero
            return x // d[0] if x >= 0 else -(-x // d[0])

        return (trunc(a[0]), trunc(a[1]))
    if name in ("arith.remsi", "arith.remui"):
        d = arg(1)
        if d is None or d[0] != d[1] or d[0] <= 0:
            return None
        a = arg(0)
        if name == "arith.remui" or (a is not None and a[0] >= 0):
            return (0, d[0] - 1)
        return (-(d[0] - 1), d[0] - 1)
    return None
