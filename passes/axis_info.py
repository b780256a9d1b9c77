"""What is known at compile time about integer tiles along their last dim, so
that loads and stores can be 16-byte vectors (the idea of Triton's AxisInfo).

For a value v:
- contiguity c: v is made of runs of c consecutive integers (v[i+1] = v[i] + 1);
- divisibility p: the first element of each run is a multiple of p;
- constancy k: v is made of runs of k equal values (masks: k lanes agree).

Scalars have contiguity 1, constancy "all" and a divisibility; kernel
arguments get theirs from the specialization (ints divisible by 16).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir

from .int_ranges import constant_int

BIG = 1 << 30


def divisible_indices(divisible_args: str) -> set[int]:
    """The kernel argument indices a `divisible-args` pass option names ("0,1,5"): tensors the
    launch found 16-byte aligned, ints it found multiples of 16."""
    return {int(i) for i in divisible_args.split(",") if i}


def argument_divisibility(fn, divisible_args: str) -> dict:
    """{argument of kernel `fn`: 16} for the arguments `divisible_args` names, as AxisInfo's
    `scalar_divisibility` takes them."""
    args = list(fn.regions[0].blocks[0].arguments) if fn.regions[0].blocks else []
    return {args[i]: 16 for i in divisible_indices(divisible_args) if i < len(args)}


@dataclass(frozen=True)
class Info:
    contiguity: int = 1
    divisibility: int = 1
    constancy: int = 1


def _pow2_divisor(v: int) -> int:
    return BIG if v == 0 else v & -v


def _last(v) -> int:
    t = v.type
    return ir.RankedTensorType(t).shape[-1] if isinstance(t, ir.RankedTensorType) and ir.RankedTensorType(t).rank else 1


class AxisInfo:
    def __init__(self, scalar_divisibility: dict | None = None):
        self.known: dict = {}
        self.scalar_divisibility = scalar_divisibility or {}

    def __call__(self, v) -> Info:
        if v in self.known:
            return self.known[v]
        info = self._hinted(v, self._compute(v))
        self.known[v] = info
        return info

    def _hinted(self, v, info: Info) -> Info:
        """info, raised to what `tile.multiple_of`/`max_contiguous`/`max_constancy` (frontend/hints.py)
        say of v."""
        suffix = ""
        if isinstance(v.owner, ir.Block):  # a loop-carried value: hinted on its loop (`tile.divisibility_arg1`)
            loop = v.owner.owner
            if loop is None or loop.operation.name != "scf.for":
                return info
            attrs, suffix = loop.operation.attributes, f"_arg{v.arg_number}"
        else:
            attrs = v.owner.operation.attributes
        hint = {k: ir.IntegerAttr(attrs[f"tile.{k}{suffix}"]).value for k in ("contiguity", "divisibility", "constancy")
                if f"tile.{k}{suffix}" in attrs}
        if not hint:
            return info
        n = _last(v)
        return Info(min(max(info.contiguity, hint.get("contiguity", 1)), n),
                    max(info.divisibility, hint.get("divisibility", 1)),
                    min(max(info.constancy, hint.get("constancy", 1)), n))

    def unguarded(self, d):
        """The divisor b of the frontend's `x % b`, which reads `select(b == 0 | b == -1, 1, b)`
        (a zero divisor never traps), where b is a kernel argument the specialization made a
        nonzero multiple of 16, or a constant other than 0 and -1: the guard then never fires.
        Else d itself."""
        def op_of(v, name):
            return None if isinstance(v.owner, ir.Block) or v.owner.operation.name != name else v.owner.operation

        def scalar(v):  # through a splat
            splat = op_of(v, "tile.splat")
            return splat.operands[0] if splat is not None else v

        select = op_of(d, "arith.select")
        if select is None or constant_int(select.operands[1]) != 1:
            return d
        b = select.operands[2]
        guard = op_of(select.operands[0], "arith.ori")
        tests = [op_of(t, "arith.cmpi") for t in guard.operands] if guard is not None else []
        if len(tests) != 2 or any(t is None or t.operands[0] != b or ir.IntegerAttr(t.attributes["predicate"]).value != 0
                                  for t in tests) or \
                sorted(constant_int(t.operands[1]) or 0 for t in tests) != [-1, 0]:
            return d
        nonzero = self.scalar_divisibility.get(scalar(b), 1) >= 2 or constant_int(b) not in (None, 0, -1)
        return b if nonzero else d

    def _compute(self, v) -> Info:
        n = _last(v)
        owner = v.owner
        if isinstance(owner, ir.Block):  # a block argument: a kernel argument or loop variable
            parent = owner.owner
            if parent is not None and parent.name == "scf.for" and v == owner.arguments[0]:
                lb, _, step = (self(o) for o in list(parent.operands)[:3])
                return Info(1, math.gcd(lb.divisibility, step.divisibility), BIG)
            div = self.scalar_divisibility.get(v, 1)
            return Info(1, div, BIG if not isinstance(v.type, ir.RankedTensorType) else 1)
        op = owner.operation if hasattr(owner, "operation") else owner
        name = op.name
        if name == "scf.execute_region":  # a fusion group: look at what it yields
            yielded = op.regions[0].blocks[0].operations[-1]
            return self(yielded.operands[list(op.results).index(v)])
        if name == "arith.constant":
            attr = op.attributes["value"]
            if isinstance(attr, ir.IntegerAttr):
                return Info(1, _pow2_divisor(attr.value), BIG)
            if isinstance(attr, ir.DenseIntElementsAttr) and attr.is_splat:
                return Info(1, _pow2_divisor(ir.IntegerAttr(attr.get_splat_value()).value), n)
            return Info(1, 1, 1)
        if name == "tile.arange":
            return Info(n, _pow2_divisor(ir.IntegerAttr(op.attributes["start"]).value), 1)
        if name == "tile.splat":
            return Info(1, self(op.operands[0]).divisibility, n)
        if name == "tile.program_id":
            return Info(1, 1, BIG)
        if name in ("tile.broadcast", "tile.reshape", "tile.convert_layout"):
            src = op.operands[0]
            s = self(src)
            if _last(src) == n:
                return s
            if _last(src) == 1 and name == "tile.broadcast":  # the last dim is new: every run along it is constant
                return Info(1, s.divisibility, n)
            if n == 1 or _last(src) == 1:
                # A reshape to or from a last dim of 1 (`v[:, None]`): each element is a run of its
                # own, a multiple of p where every element of v was (runs of one: contiguity 1), as
                # a paged cache's `block * stride + slot * stride` summed before `[None, :]` is.
                return Info(1, s.divisibility if s.contiguity == 1 or _last(src) == 1 else 1, 1)
            return Info(1, 1, 1)
        if name == "tile.trans":  # runs along the last dim survive only where it stays last
            perm = list(ir.DenseI32ArrayAttr(op.attributes["permutation"]))
            return self(op.operands[0]) if perm[-1] == len(perm) - 1 else Info(1, 1, 1)
        if name in ("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast"):
            return self(op.operands[0])
        if name in ("arith.addi", "arith.subi"):
            a, b = self(op.operands[0]), self(op.operands[1])
            contiguity = max(min(a.contiguity, b.constancy), min(b.contiguity, a.constancy) if name == "arith.addi" else 1)
            return Info(min(contiguity, n), math.gcd(a.divisibility, b.divisibility), min(a.constancy, b.constancy, n))
        if name in ("arith.remsi", "arith.remui"):
            a, b = self(op.operands[0]), self(self.unguarded(op.operands[1]))
            if b.constancy < n and b.constancy != BIG:
                return Info(1, 1, 1)
            # Runs of a keep going until they cross a multiple of b.
            return Info(math.gcd(a.contiguity, b.divisibility), math.gcd(a.divisibility, b.divisibility), a.constancy)
        if name in ("arith.divsi", "arith.divui"):
            a, b = self(op.operands[0]), self(op.operands[1])
            if b.constancy < n and b.constancy != BIG:
                return Info(1, 1, 1)
            # Aligned runs of a, b long, map to one value each.
            const = max(a.constancy, math.gcd(min(a.contiguity, a.divisibility), b.divisibility))
            return Info(1, max(1, a.divisibility // b.divisibility) if a.divisibility >= b.divisibility else 1, min(const, n))
        if name == "arith.muli":
            a, b = self(op.operands[0]), self(op.operands[1])
            return Info(1, min(a.divisibility * b.divisibility, BIG), min(a.constancy, b.constancy, n))
        if name == "arith.cmpi":
            a, b = self(op.operands[0]), self(op.operands[1])
            constancy = min(a.constancy, b.constancy)
            # offs < n with offs in aligned runs and n a multiple of the run: the mask is constant per run.
            if b.constancy >= n or b.constancy == BIG:
                constancy = max(constancy, math.gcd(min(a.contiguity, a.divisibility), b.divisibility))
            return Info(1, 1, min(constancy, n))
        if name in ("arith.andi", "arith.ori", "arith.xori", "arith.select"):
            ks = [self(o).constancy for o in op.operands]
            return Info(1, 1, min(min(ks), n))
        return Info(1, 1, 1)
