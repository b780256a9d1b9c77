"""Run-time control flow of the kernel language (a mixin of the emitter, `emitter.py`):
`if` on a run-time scalar becomes `scf.if`, `for` over `range` / `tile.range` an
`scf.for`, with the names they assign carried through as results; `tile.static_range`
is unrolled. A Python number a run-time `if` changes becomes a run-time scalar; a name
that cannot be carried (a dtype, a tuple) is an error where it would change.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from lark import Tree
from mlir import ir
from mlir.dialects import scf

from . import dtypes, language, semantics
from .errors import TileError
from .expressions import _name, is_runtime
from .values import Aggregate, Pointer, TensorArg, Tile, describe


class ControlFlow:
    """stmt_if_stmt and stmt_for_stmt; needs `expr`, `arguments`, `error`, `suite`, `scope`
    and `runtime_depth` from the emitter."""

    def runtime_condition(self, node, cond: Tile, construct: str = "if") -> Tile:
        """A run-time `if`'s (or `while`'s) condition as an i1 scalar."""
        if not isinstance(cond, Tile):
            raise self.error(node, f"{'an' if construct == 'if' else 'a'} {construct} condition must be a scalar or a "
                                   f"compile-time value, got {describe(cond)}")
        if not cond.is_scalar:
            hint = "tile.where picks elementwise" if construct == "if" else "reduce it, as tile.max(x, axis=0) > 0"
            raise self.error(node, f"{'an' if construct == 'if' else 'a'} {construct} condition must be a scalar, "
                                   f"not a tile of shape {cond.shape} ({hint})")
        return cond if cond.dtype == dtypes.int1 else semantics.compare("!=", cond, 0)

    def stmt_if_stmt(self, node):
        cond, then_suite, elifs, else_suite = node.children
        branches = [(cond, then_suite)] + [(e.children[0], e.children[1]) for e in (elifs.children if elifs else [])]
        self.if_chain(node, branches, else_suite)

    def if_chain(self, node, branches, else_suite, cond=None):
        """`if`/`elif`/`else` from branches[0] on (`cond`: its condition, already evaluated)."""
        if not branches:
            if else_suite is not None:
                self.suite(else_suite)
            return
        (cond_node, body), rest = branches[0], branches[1:]
        cond = self.expr(cond_node) if cond is None else cond
        if not is_runtime(cond):  # compile-time condition: emit one branch only
            if cond:
                self.suite(body)
            else:
                self.if_chain(node, rest, else_suite)
            return
        cond = self.runtime_condition(cond_node, cond)
        before = dict(self.scope)
        # The branches are emitted first, into an if without results: the values they leave
        # decide what it yields (a name assigned in every branch, a Python number one branch
        # changes), and their ops then move into the if that yields them.
        draft = scf.IfOp(cond.value, [], has_else=True)
        ends = []
        self.runtime_depth += 1
        for block, emit in ((draft.then_block, lambda: self.suite(body)),
                            (draft.else_block, lambda: self.if_chain(node, rest, else_suite))):
            self.scope.clear()
            self.scope.update(before)
            with ir.InsertionPoint(block):
                emit()
            ends.append(dict(self.scope))
        self.runtime_depth -= 1
        self.scope.clear()
        self.scope.update(before)
        carried = {}  # name -> the value whose type the if yields
        for n in _assigned_names([body] + [b for _, b in rest] + [else_suite]):
            values = [e.get(n, _UNSET) for e in ends]
            if any(v is _UNSET for v in values) or all(_same(v, before.get(n, _UNSET)) for v in values):
                continue  # unchanged, or undefined on a path (so after the if)
            runtime = [v for v in [before.get(n), *values] if is_runtime(v) or isinstance(v, TensorArg)]
            if runtime:  # (its type from before the if, where it had one)
                carried[n] = runtime[0] if is_runtime(runtime[0]) else Pointer(runtime[0], 0)
            elif all(_same(v, values[0]) for v in values):
                self.scope[n] = values[0]
            elif all(isinstance(v, (bool, int, float)) for v in values):  # made a run-time value
                dt = functools.reduce(semantics.promote_dtypes, [semantics.python_dtype(v, None) for v in values])
                with ir.InsertionPoint(draft):
                    carried[n] = semantics.constant(values[0], dt)
            else:
                raise self.error(node, f"'{n}' is {_describe(values[0])} or {_describe(values[1])} depending on a "
                                       "run-time condition: a run-time if can only choose run-time values (tiles, scalars, pointers)")
        with ir.InsertionPoint(draft):
            op = scf.IfOp(cond.value, [x.type for v in carried.values() for x in _carry_values(v)], has_else=True)
        for end, block, new in zip(ends, (draft.then_block, draft.else_block), (op.then_block, op.else_block)):
            self.scope.clear()
            self.scope.update(end)
            with ir.InsertionPoint(block):
                yields = [x for n, ref in carried.items() for x in self.carry_value(node, n, ref)]
            with ir.InsertionPoint(new):
                end_op = scf.YieldOp(yields)
            for o in list(block.operations):
                o.move_before(end_op)
        draft.operation.erase()
        self.scope.clear()
        self.scope.update(before)
        results = iter(op.results)
        for n, ref in carried.items():
            self.scope[n] = _uncarry(ref, results)

    def stmt_for_stmt(self, node):
        target, iterable, body, orelse = node.children
        if orelse is not None:
            raise self.error(node, "unsupported Python construct: for ... else")
        if not (isinstance(target, Tree) and target.data == "var"):
            raise self.error(target, "a for loop needs a single loop variable")
        if not (isinstance(iterable, Tree) and iterable.data == "funccall"):
            raise self.error(iterable, "a for loop must iterate over range(...), tile.range(...) or tile.static_range(...)")
        callee = self.expr(iterable.children[0])
        args, kwargs = self.arguments(iterable.children[1] if len(iterable.children) > 1 else None)
        stages = kwargs.pop("num_stages", None) if callee is language.range else None
        hints = {}
        if callee is language.range:  # Triton's scheduling hints: checked, and change no result
            for hint, kinds in _RANGE_HINTS.items():
                value = hints[hint] = kwargs.pop(hint, None)
                if value is not None and not isinstance(value, kinds):
                    raise self.error(iterable, f"tile.range's {hint} must be a compile-time "
                                               f"{' or '.join(k.__name__ for k in kinds)}, got {value!r}")
        if kwargs or not 1 <= len(args) <= 3:
            raise self.error(iterable, "range takes 1 to 3 positional arguments" + (
                f" and num_stages, {', '.join(_RANGE_HINTS)}" if callee is language.range else ""))
        if stages is not None and (isinstance(stages, bool) or not isinstance(stages, int) or stages < 1):
            raise self.error(iterable, f"num_stages must be a compile-time int of at least 1, got {stages!r}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
        if callee is language.static_range:
            if is_runtime(start) or is_runtime(stop) or is_runtime(step):
                raise self.error(iterable, "static_range bounds must be compile-time values")
            trips = range(start, stop, step)
            if len(trips) > MAX_UNROLLED:  # (a billion never ended)
                raise self.error(iterable, f"static_range unrolls {len(trips)} iterations, more than {MAX_UNROLLED}: "
                                           "use range(...) for a run-time loop")
            for i in trips:
                self.scope[_name(target)] = i
                self.suite(body)
            return
        if callee is not range and callee is not language.range:
            raise self.error(iterable, "a for loop must iterate over range(...), tile.range(...) or tile.static_range(...)")
        self.runtime_loop(node, _name(target), start, stop, step, body, stages, bool(hints.get("warp_specialize")))

    def loop_names(self, node, body, var=None) -> tuple[list[str], dict]:
        """The names a run-time loop's body assigns that it carries (run-time values; a tensor
        argument walked as a pointer), and the Python numbers among them: each becomes a
        run-time scalar (`_Number`), as a Triton assignment makes it a tensor, so that
        `acc = 0` then `acc += tile.sum(x)` is carried."""
        numbers = {}
        for name in _assigned_names([body]):
            old = self.scope.get(name)
            if isinstance(old, (int, float)) and not isinstance(old, bool) and name != var:
                numbers[name] = old
                self.scope[name] = _Number(semantics.literal(old).value, old)
            if isinstance(old, TensorArg) and name != var:  # a pointer walked through the loop: p = p + BLOCK
                self.scope[name] = Pointer(old, 0)
        return [n for n in _assigned_names([body]) if is_runtime(self.scope.get(n)) and n != var], numbers

    def retyping(self, numbers: dict, build):
        """build(made) emits a loop (its op first in `made`, and returned); a Python number in
        `numbers` whose type the body changes (`acc = 0`, then `acc += tile.sum(x)` with a float
        x) starts it again with the number of the body's type, which the loop then carries
        (Triton 3.9 raises there). A number the loop leaves unchanged is a Python number after
        it, as before it."""
        depth, saved, outer = self.runtime_depth, dict(self.scope), self.retypable
        self.retypable = outer | set(numbers)
        try:
            for _ in range(4 * len(numbers) + 1):
                made = []
                try:
                    op = build(made)
                    break
                except _Retype as r:
                    if r.name not in numbers:
                        raise
                    made[0].operation.erase()
                    self.runtime_depth = depth
                    self.scope.clear()
                    self.scope.update(saved)
                    number = numbers[r.name]
                    saved[r.name] = self.scope[r.name] = _Number(semantics.constant(number, r.dtype).value, number)
            else:
                raise TileError("the types of the numbers this loop changes do not settle")
        finally:
            self.retypable = outer
        for n, number in numbers.items():  # (unchanged: `_Number.kept`)
            if saved[n].kept:
                self.scope[n] = number
        return op

    def loop_body(self, node, body, before, carried, var=None):
        """Emit a loop's body at the insertion point and yield what it carries."""
        entry = {n: self.scope.get(n) for n in carried}
        self.runtime_depth += 1
        self.suite(body)
        self.runtime_depth -= 1
        for n in _assigned_names([body]):
            if n in before and n not in carried and n != var and not _same(self.scope.get(n, _UNSET), before[n]):
                raise self.error(node, f"'{n}' holds {_describe(before[n])} but is reassigned inside a run-time loop: "
                                       "only run-time values (tiles, scalars, pointers) can change from one iteration to the next")
        yields = [x for n in carried for x in self.carry_value(node, n, before[n])]
        for n in carried:
            if isinstance(before[n], _Number) and self.scope.get(n) is entry[n]:
                before[n].kept = True
        scf.YieldOp(yields)

    def runtime_loop(self, node, var, start, stop, step, body, num_stages=None, warp_specialize=False):
        for b in (start, stop, step):  # (a float was truncated, a tile failed MLIR's verifier)
            if not (isinstance(b, int) or isinstance(b, Tile) and b.is_scalar and not b.dtype.is_float):
                raise self.error(node, f"range's bounds must be ints or int scalars, got {_describe(b, runtime=True)}")
        carried, numbers = self.loop_names(node, body, var)
        if step == 0 and not isinstance(step, Tile):  # scf.for would never end
            raise self.error(node, "range's step must not be zero")
        # scf.for counts up by a positive step: a negative one, or a run-time one that may be (a
        # negative or zero step ran no iteration, billions or forever), loops over the trip count,
        # i = start + trip * step (as Triton does for constant steps)
        first, each = start, step
        counted = step < 0 if not isinstance(step, Tile) else not semantics.known_positive(step)
        if counted:
            start, stop, step = 0, semantics.trip_count(start, stop, step), 1
        bounds = [b if isinstance(b, Tile) else semantics.literal(b) for b in (start, stop, step)]
        ity = dtypes.int64 if any(b.dtype == dtypes.int64 for b in bounds) else dtypes.int32
        lo, hi, st = (semantics.cast(b, ity).value for b in bounds)

        def build(made):
            before = dict(self.scope)
            op = scf.ForOp(lo, hi, st, [x for n in carried for x in _carry_values(self.scope[n])])
            made.append(op)
            if num_stages is not None:  # read by tile-pipeline
                op.attributes["tile.num_stages"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), num_stages)
            if warp_specialize:  # read by tile-warp-specialize (sm_90a; other targets ignore it)
                op.attributes["tile.warp_specialize"] = ir.UnitAttr.get()
            with ir.InsertionPoint(op.body):
                iv = Tile(op.induction_variable)
                self.scope[var] = semantics.binary("+", first, semantics.binary("*", iv, each)) if counted else iv
                self.bind_carried(before, carried, op.inner_iter_args)
                self.loop_body(node, body, before, carried, var)
            self.bind_carried(before, carried, op.results, restore=True)
            return op

        self.retyping(numbers, build)

    def stmt_while_stmt(self, node):
        """`while cond:` on a run-time scalar: an scf.while whose first region evaluates the
        condition on the carried values, the second runs the body."""
        cond_node, body, orelse = (list(node.children) + [None])[:3]
        if orelse is not None:
            raise self.error(node, "unsupported Python construct: while ... else")
        # Evaluated once to tell a compile-time condition, in a region thrown away after: a
        # side effect in it (the spin lock's `atomic_cas`) must run only in the loop's test.
        probe = scf.ExecuteRegionOp([])
        with ir.InsertionPoint(probe.regions[0].blocks.append()):
            first = self.expr(cond_node)
        probe.operation.erase()
        if not is_runtime(first):
            if first:  # (it could only end by a break, which the language does not have)
                raise self.error(cond_node, "a while loop's condition must be a run-time value: this one never changes")
            return
        carried, numbers = self.loop_names(node, body)  # (i = 0; while i < n: i += 1 -- i is a run-time scalar)

        def build(made):
            before = dict(self.scope)
            inits = [x for n in carried for x in _carry_values(self.scope[n])]
            op = scf.WhileOp([v.type for v in inits], inits)
            made.append(op)
            test = op.before.blocks.append(*[v.type for v in inits])
            step = op.after.blocks.append(*[v.type for v in inits])
            with ir.InsertionPoint(test):
                self.bind_carried(before, carried, test.arguments)
                cond = self.runtime_condition(cond_node, self.expr(cond_node), "while")
                scf.ConditionOp(cond.value, list(test.arguments))
            with ir.InsertionPoint(step):
                self.bind_carried(before, carried, step.arguments, restore=True)
                self.loop_body(node, body, before, carried)
            self.bind_carried(before, carried, op.results, restore=True)
            return op

        self.retyping(numbers, build)

    def bind_carried(self, before, carried, values, restore=False):
        """Bind the carried names to a loop's block arguments or results (`restore`: the scope
        from before the loop first, so that nothing the body bound leaks out)."""
        if restore:
            self.scope.clear()
            self.scope.update(before)
        values = iter(values)
        for n in carried:
            self.scope[n] = _uncarry(before[n], values)

    def carry_value(self, node, name, old) -> list[ir.Value]:
        """The values that carry `name` out of a branch or iteration, whose types are those of `old`."""
        new = self.scope.get(name)
        if isinstance(new, TensorArg):  # (as `x + 0`)
            new = Pointer(new, 0)
        if isinstance(old, Aggregate):
            try:
                old.check_carry(new)
            except TileError as e:
                raise self.error(node, f"'{name}' {e}") from None
            return new.carried()
        if isinstance(new, Aggregate):
            raise self.error(node, f"'{name}' changes from {_describe(old, runtime=True)} to {new!r} inside control flow")
        if isinstance(old, Pointer) and not (isinstance(new, Pointer) and new.base is old.base):
            raise self.error(node, f"'{name}' must stay a pointer into '{old.base.name}' across control flow")
        if isinstance(old, Tile) and isinstance(new, (int, float)):
            new = semantics.constant(new, semantics.python_dtype(new, old.dtype), old.shape or None)
        if not is_runtime(new):
            raise self.error(node, f"'{name}' changes from a run-time value to {new!r} inside control flow")
        new_v = _carry_values(new)
        # As in Triton: a carried value keeps its type (a silent cast back would truncate).
        if isinstance(old, Tile) and isinstance(new, Tile) and new.type != old.type:
            if isinstance(old, _Number) and name in self.retypable and new.is_scalar:
                raise _Retype(name, new.dtype)
            if new.shape == old.shape:
                where = ("before this loop", "inside it") if node.data in ("for_stmt", "while_stmt") else ("on one path of this if", "on another")
                raise self.error(node, f"'{name}' is {old.dtype!r} {where[0]} but {new.dtype!r} {where[1]}: convert it "
                                       f"(.to({old.dtype!r})) or start it as {new.dtype!r}")
            raise self.error(node, f"'{name}' changes type from {old.type} to {new.type} inside control flow")
        return new_v


def _assigned_names(suites) -> list[str]:
    """Names assigned anywhere inside the given statement trees, in first-seen order."""
    seen = []

    def visit(t):
        if not isinstance(t, Tree):
            return
        if t.data in ("assign", "augassign", "annassign"):
            targets = t.children[:-1] if t.data == "assign" else t.children[:1]
            for target in targets:
                for v in target.iter_subtrees_topdown():
                    if v.data == "var" and _name(v) not in seen:
                        seen.append(_name(v))
        if t.data == "for_stmt" and t.children[0].data == "var" and _name(t.children[0]) not in seen:
            seen.append(_name(t.children[0]))
        for c in t.children:
            visit(c)

    for s in suites:
        visit(s)
    return seen


_UNSET = object()  # a name not bound on some path

# tile.range's keywords beside num_stages that Triton takes as scheduling hints; tile accepts
# them (the loop runs the same): it unrolls with static_range, and does not flatten nested
# loops or multi-buffer accumulators yet; warp_specialize marks the loop for tile-warp-specialize.
_RANGE_HINTS = {"loop_unroll_factor": (int,), "disallow_acc_multi_buffer": (bool,), "flatten": (bool,),
                "warp_specialize": (bool,)}


def _same(a, b) -> bool:
    """a is b, or equal compile-time values (a run-time one equals only itself)."""
    if a is b:
        return True
    if is_runtime(a) or is_runtime(b) or isinstance(a, TensorArg) or isinstance(b, TensorArg) or a is _UNSET or b is _UNSET:
        return False
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


def _describe(v, runtime=False) -> str:
    if runtime and isinstance(v, Tile):
        return f"a {'scalar' if v.is_scalar else 'tile'} of {v.dtype!r}"
    if isinstance(v, TensorArg):
        return f"tensor argument '{v.name}'"
    if isinstance(v, (bool, int, float, str, dtypes.dtype, type(None))):
        return f"the compile-time value {v!r}"
    return f"a compile-time {type(v).__name__}"


def _carry_values(v) -> list[ir.Value]:
    """The SSA values a loop or if carries for `v`: one, or an aggregate's (`values.Aggregate`)."""
    if isinstance(v, Aggregate):
        return v.carried()
    if isinstance(v, Pointer):
        offs = v.offsets if isinstance(v.offsets, Tile) else semantics.literal(v.offsets)
        return [offs.value]
    return [v.value]


def _uncarry(old, values):
    """`old`'s kind of value rebuilt from the next of `values` (an iterator), as many as it carries."""
    if isinstance(old, Aggregate):
        return old.rebuilt([next(values) for _ in old.carried()])
    value = next(values)
    if isinstance(old, _Number):  # (an inner loop or if that changes its type restarts the loop it came from)
        return _Number(value, old.number)
    return Pointer(old.base, Tile(value)) if isinstance(old, Pointer) else Tile(value)


@dataclass
class _Number(Tile):
    """A run-time scalar made of a Python number a loop reassigns (`acc = 0`); `kept`: the
    loop left it unchanged."""

    number: float = 0
    kept: bool = False


class Restart(Exception):
    """Emission starts again from an enclosing construct (the emitter lets it through)."""


class _Retype(Restart):
    """A `_Number` is `dtype` inside the loop that made it: `retyping` starts the loop again."""

    def __init__(self, name, dtype):
        super().__init__(name)
        self.name, self.dtype = name, dtype


MAX_UNROLLED = 4096  # iterations of a static_range
