"""Walks a kernel's syntax tree and emits the `tile`-dialect function.

Compile-time and run-time control flow are kept apart: a condition or loop
bound that is a Python value (constexpr) is folded here, one that is an SSA
value becomes `scf.if` / `scf.for`. `@tile.func` helpers are inlined.
"""

from __future__ import annotations

from lark import Token, Tree
from mlir import ir
from mlir.dialects import func, scf

from . import dtypes, language, semantics
from .errors import CompilationError, TileError
from .expressions import _UNSUPPORTED, Expressions, _name, is_runtime
from .parser import ParsedFunction
from .values import Pointer, TensorArg, Tile


class _Return(Exception):
    pass


class FunctionEmitter(Expressions):
    """Emits one function body (a kernel, or an inlined helper) into the current block."""

    def __init__(self, parsed: ParsedFunction, globals_: dict, scope: dict):
        self.parsed, self.globals, self.scope = parsed, globals_, scope
        self.returned = None
        self.runtime_depth = 0  # run-time ifs and loops around the statement being emitted

    def inline_helper(self, helper, args, kwargs):
        return inline_helper(helper, args, kwargs)

    # ---- positions and errors -------------------------------------------------
    def error(self, node, message: str) -> CompilationError:
        meta = getattr(node, "meta", None)
        if meta is None or getattr(meta, "empty", True):
            return CompilationError(message, self.parsed.filename, self.parsed.first_line, 1)
        line, col = self.parsed.position(meta)
        return CompilationError(message, self.parsed.filename, line, col, self.parsed.source_line(meta))

    def location(self, node) -> ir.Location:
        meta = getattr(node, "meta", None)
        if meta is None or getattr(meta, "empty", True):
            return ir.Location.file(self.parsed.filename, self.parsed.first_line, 1)
        line, col = self.parsed.position(meta)
        return ir.Location.file(self.parsed.filename, line, col)

    # ---- statements -----------------------------------------------------------
    def suite(self, node):
        self.suite_of(node.children if isinstance(node, Tree) and node.data == "suite" else [node])

    def kernel_body(self, stmts):
        """A kernel's top-level statements, where `if cond: ... return` (Triton's `if pid >= n:
        return`) runs the rest of the kernel only when cond is false:

            if c: A; return  +  REST   ->   if c: A  else: REST
        """
        for i, stmt in enumerate(stmts):
            early = _early_return(stmt)
            cond = self.expr(stmt.children[0]) if early else None
            if not is_runtime(cond):
                if early and not cond:
                    continue  # a compile-time false condition: never returns
                self.statement(stmt)
                continue
            cond = self.runtime_condition(stmt.children[0], cond)
            before = dict(self.scope)
            op = scf.IfOp(cond.value, [], has_else=True)
            with ir.InsertionPoint(op.then_block):
                self.runtime_depth += 1
                self.suite_of(stmt.children[1].children[:-1])
                self.runtime_depth -= 1
                scf.YieldOp([])
            self.scope.clear()
            self.scope.update(before)
            with ir.InsertionPoint(op.else_block):
                self.kernel_body(stmts[i + 1:])
                scf.YieldOp([])
            return

    def suite_of(self, stmts):
        for stmt in stmts:
            self.statement(stmt)

    def runtime_condition(self, node, cond: Tile) -> Tile:
        """A run-time `if`'s condition as an i1 scalar."""
        if not cond.is_scalar:
            raise self.error(node, "an if condition must be a scalar, not a tile (use tile.where)")
        return cond if cond.dtype == dtypes.int1 else semantics.compare("!=", cond, 0)

    def statement(self, node):
        if not isinstance(node, Tree):
            return
        if node.data in _UNSUPPORTED:
            raise self.error(node, f"unsupported Python construct: {_UNSUPPORTED[node.data]}")
        handler = getattr(self, "stmt_" + node.data, None)
        if handler is None:
            raise self.error(node, f"unsupported Python construct: {node.data.replace('_', ' ')}")
        try:
            with self.location(node):
                handler(node)
        except CompilationError:
            raise
        except TileError as e:
            raise self.error(node, str(e)) from None
        except _Return:
            raise
        except Exception as e:  # Python's own error on a value (a str constexpr used as a number): at its line
            raise self.error(node, f"{type(e).__name__}: {e}") from None

    def stmt_simple_stmt(self, node):  # `a = 1; b = 2`: statements on one line, in turn
        self.suite_of(node.children)

    def stmt_pass_stmt(self, node):
        pass

    def stmt_expr_stmt(self, node):
        self.expr(node.children[0])

    def stmt_assign_stmt(self, node):
        self.statement(node.children[0])

    def stmt_assign(self, node):
        *targets, value = node.children
        v = self.expr(value)
        for t in targets:
            self.bind(t, v)

    def stmt_annassign(self, node):
        target, _, value = node.children
        if value is not None:
            self.bind(target, self.expr(value))

    def stmt_augassign(self, node):
        target, op, value = node.children
        if not (isinstance(target, Tree) and target.data == "var"):
            raise self.error(node, "augmented assignment needs a plain name on the left")
        op = op.children[0] if isinstance(op, Tree) else op  # lark wraps the token in `augassign_op`
        self.bind(target, self.binary(node, str(op)[:-1], self.expr(target), self.expr(value)))

    def bind(self, target, value):
        if target.data == "var":
            self.scope[_name(target)] = value
        elif target.data in ("tuple", "list", "testlist_tuple", "exprlist"):
            if not isinstance(value, tuple) or len(value) != len(target.children):
                raise self.error(target, "cannot unpack: the right side is not a tuple of matching length")
            for t, v in zip(target.children, value):
                self.bind(t, v)
        else:
            raise self.error(target, "can only assign to names (and tuples of names)")

    def stmt_return_stmt(self, node):
        if self.runtime_depth:
            raise self.error(node, "return inside a run-time loop or if is not supported (only `if cond: ... return` "
                                   "at the kernel's top level); guard the work with a mask instead")
        value = node.children[0]
        self.returned = None if value is None else self.expr(value)
        raise _Return()

    def stmt_if_stmt(self, node):
        cond, then_suite, elifs, else_suite = node.children
        branches = [(cond, then_suite)] + [(e.children[0], e.children[1]) for e in (elifs.children if elifs else [])]
        self.if_chain(node, branches, else_suite)

    def if_chain(self, node, branches, else_suite):
        if not branches:
            if else_suite is not None:
                self.suite(else_suite)
            return
        (cond_node, body), rest = branches[0], branches[1:]
        cond = self.expr(cond_node)
        if not is_runtime(cond):  # compile-time condition: emit one branch only
            if cond:
                self.suite(body)
            else:
                self.if_chain(node, rest, else_suite)
            return
        cond = self.runtime_condition(cond_node, cond)
        carried = [n for n in _assigned_names([body] + [b for _, b in rest] + [else_suite]) if is_runtime(self.scope.get(n))]
        before = dict(self.scope)
        types = [_carry_type(self.scope[n]) for n in carried]
        op = scf.IfOp(cond.value, types, has_else=True)
        self.runtime_depth += 1
        for block, emit in ((op.then_block, lambda: self.suite(body)), (op.else_block, lambda: self.if_chain(node, rest, else_suite))):
            self.scope.clear()
            self.scope.update(before)
            with ir.InsertionPoint(block):
                emit()
                scf.YieldOp([self.carry_value(node, n, before[n]) for n in carried])
        self.runtime_depth -= 1
        self.scope.clear()
        self.scope.update(before)
        for n, r in zip(carried, op.results):
            self.scope[n] = _uncarry(before[n], r)

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
        if kwargs or not 1 <= len(args) <= 3:
            raise self.error(iterable, "range takes 1 to 3 positional arguments" + (
                " and num_stages" if callee is language.range else ""))
        if stages is not None and (isinstance(stages, bool) or not isinstance(stages, int) or stages < 1):
            raise self.error(iterable, f"num_stages must be a compile-time int of at least 1, got {stages!r}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
        if callee is language.static_range:
            if is_runtime(start) or is_runtime(stop) or is_runtime(step):
                raise self.error(iterable, "static_range bounds must be compile-time values")
            for i in range(start, stop, step):
                self.scope[_name(target)] = i
                self.suite(body)
            return
        if callee is not range and callee is not language.range:
            raise self.error(iterable, "a for loop must iterate over range(...), tile.range(...) or tile.static_range(...)")
        self.runtime_loop(node, _name(target), start, stop, step, body, stages)

    def runtime_loop(self, node, var, start, stop, step, body, num_stages=None):
        for name in _assigned_names([body]):
            old = self.scope.get(name)
            if isinstance(old, (int, float)) and not isinstance(old, bool) and name != var:
                # A Python number reassigned in a run-time loop would silently stay constant.
                raise self.error(node, f"variable '{name}' holds the compile-time value {old!r} but is reassigned inside a "
                                 "run-time loop; give it a run-time initial value (e.g. tile.zeros or tile.full)")
        carried = [n for n in _assigned_names([body]) if is_runtime(self.scope.get(n)) and n != var]
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
        before = dict(self.scope)
        op = scf.ForOp(lo, hi, st, [_carry_value(self.scope[n]) for n in carried])
        if num_stages is not None:  # read by tile-pipeline
            op.attributes["tile.num_stages"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), num_stages)
        with ir.InsertionPoint(op.body):
            iv = Tile(op.induction_variable)
            self.scope[var] = semantics.binary("+", first, semantics.binary("*", iv, each)) if counted else iv
            for n, arg in zip(carried, op.inner_iter_args):
                self.scope[n] = _uncarry(before[n], arg)
            self.runtime_depth += 1
            self.suite(body)
            self.runtime_depth -= 1
            scf.YieldOp([self.carry_value(node, n, before[n]) for n in carried])
        self.scope.clear()
        self.scope.update(before)
        for n, r in zip(carried, op.results):
            self.scope[n] = _uncarry(before[n], r)

    def carry_value(self, node, name, old):
        new = self.scope.get(name)
        if isinstance(old, Pointer) and not (isinstance(new, Pointer) and new.base is old.base):
            raise self.error(node, f"'{name}' must stay a pointer into '{old.base.name}' across control flow")
        if isinstance(old, Tile) and isinstance(new, (int, float)):
            new = semantics.constant(new, semantics.python_dtype(new, old.dtype), old.shape or None)
        if not is_runtime(new):
            raise self.error(node, f"'{name}' changes from a run-time value to {new!r} inside control flow")
        new_v = _carry_value(new)
        # As in Triton: a carried value keeps its type (a silent cast back would truncate).
        if isinstance(old, Tile) and isinstance(new, Tile) and new.type != old.type:
            if new.shape == old.shape:
                raise self.error(node, f"'{name}' is {old.dtype!r} before this {'loop' if node.data == 'for_stmt' else 'if'} but {new.dtype!r} inside "
                                       f"it: convert it back (.to({old.dtype!r})) or start it as {new.dtype!r}")
            raise self.error(node, f"'{name}' changes type from {old.type} to {new.type} inside control flow")
        return new_v

def _early_return(stmt) -> bool:
    """`if cond: ...; return` (no value, no elif or else)."""
    if not (isinstance(stmt, Tree) and stmt.data == "if_stmt"):
        return False
    elifs, orelse = stmt.children[2], stmt.children[3]
    if (elifs is not None and elifs.children) or orelse is not None:
        return False
    body = stmt.children[1]
    last = body.children[-1] if isinstance(body, Tree) and body.data == "suite" else body
    return isinstance(last, Tree) and last.data == "return_stmt" and last.children[0] is None and body.data == "suite"


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


def _carry_value(v) -> ir.Value:
    if isinstance(v, Pointer):
        offs = v.offsets if isinstance(v.offsets, Tile) else semantics.literal(v.offsets)
        return offs.value
    return v.value


def _carry_type(v) -> ir.Type:
    return _carry_value(v).type


def _uncarry(old, value: ir.Value):
    return Pointer(old.base, Tile(value)) if isinstance(old, Pointer) else Tile(value)


_INLINE_DEPTH = [0]  # helpers being inlined, one inside another
MAX_INLINE_DEPTH = 64


def inline_helper(helper, args, kwargs):
    """Emit a `@tile.func` body in place of its call; returns what it returns."""
    if _INLINE_DEPTH[0] >= MAX_INLINE_DEPTH:
        raise TileError(f"@tile.func calls nest deeper than {MAX_INLINE_DEPTH} (does {helper.__name__} call itself "
                        "without a compile-time end?)")
    _INLINE_DEPTH[0] += 1
    try:
        return _inline(helper, args, kwargs)
    finally:
        _INLINE_DEPTH[0] -= 1


def _inline(helper, args, kwargs):
    parsed = helper.parsed
    names = [p for p, _ in _parameters(parsed.tree)]
    if len(args) > len(names):
        raise TileError(f"{helper.__name__}() takes {len(names)} arguments, got {len(args)}")
    scope = dict(zip(names, args))
    for k, a in kwargs.items():
        if k not in names:
            raise TileError(f"{helper.__name__}() has no parameter '{k}'")
        scope[k] = a
    missing = [n for n in names if n not in scope]
    if missing:
        raise TileError(f"{helper.__name__}() is missing argument(s): {', '.join(missing)}")
    inner = FunctionEmitter(parsed, helper.fn.__globals__, scope)
    body = parsed.tree.children[-1]
    stmts = body.children if body.data == "suite" else [body]
    for i, stmt in enumerate(stmts):
        try:
            inner.statement(stmt)
        except _Return:
            if i != len(stmts) - 1:
                raise inner.error(stmt, "return must be the last statement of a @tile.func") from None
            return inner.returned
    return None


def _parameters(funcdef) -> list[tuple[str, object]]:
    """(name, annotation node or None) for each parameter of a `funcdef`."""
    params = funcdef.children[1]
    out = []
    for p in params.children if params is not None else []:
        if p is None:
            continue
        if isinstance(p, Tree) and p.data == "typedparam":
            out.append((_name(p.children[0]), p.children[1]))
        elif isinstance(p, Tree) and p.data == "name":
            out.append((_name(p), None))
        elif isinstance(p, Token):
            out.append((str(p), None))
        else:
            raise TileError("kernels take plain parameters only (no defaults, *args or **kwargs)")
    return out


def emit_kernel(parsed: ParsedFunction, globals_: dict, name: str, signature: list) -> ir.Module:
    """Build `func.func @name` for one specialization.

    `signature` lists (param name, kind, detail): kind "tensor" with (dtype, rank) or (dtype, rank, "wide"),
    "scalar" with a dtype, "one" (an int argument equal to 1: still passed, but
    folded as the constant 1, as Triton specializes), or "constexpr" with the Python value.
    """
    module = ir.Module.create(loc=ir.Location.file(parsed.filename, parsed.first_line, 1))
    arg_types, scope = [], {}
    for pname, kind, detail in signature:
        if kind == "tensor":
            dt, rank = detail[:2]
            layout = ir.StridedLayoutAttr.get(ir.ShapedType.get_dynamic_stride_or_offset(), [ir.ShapedType.get_dynamic_stride_or_offset()] * rank)
            arg_types.append(ir.MemRefType.get([ir.ShapedType.get_dynamic_size()] * rank, dt.to_mlir(), layout))
        elif kind in ("scalar", "one"):
            arg_types.append(detail.to_mlir())
    with ir.InsertionPoint(module.body), ir.Location.file(parsed.filename, parsed.first_line, 1):
        fn = func.FuncOp(name, ir.FunctionType.get(arg_types, []))
        fn.attributes["tile.kernel"] = ir.UnitAttr.get()
        block = fn.add_entry_block()
        args = iter(block.arguments)
        for pname, kind, detail in signature:
            if kind == "tensor":
                scope[pname] = TensorArg(next(args), pname, "wide" in detail)
            elif kind == "scalar":
                scope[pname] = Tile(next(args))
            elif kind == "one":
                next(args)
                scope[pname] = 1
            else:
                scope[pname] = detail
        emitter = FunctionEmitter(parsed, globals_, scope)
        with ir.InsertionPoint(block):
            body = parsed.tree.children[-1]
            try:
                emitter.kernel_body(body.children if isinstance(body, Tree) and body.data == "suite" else [body])
            except _Return:
                if emitter.returned is not None:
                    raise emitter.error(body, "a kernel cannot return a value; store results with tile.store") from None
            func.ReturnOp([])
    return module
