"""Walks a kernel's syntax tree and emits the `tile`-dialect function.

Compile-time and run-time control flow are kept apart: a condition or loop
bound that is a Python value (constexpr) is folded here, one that is an SSA
value becomes `scf.if` / `scf.for`. `@tile.func` helpers are inlined.
"""

from __future__ import annotations

import ast
import builtins as py
import operator

from lark import Token, Tree
from mlir import ir
from mlir.dialects import func, scf

from . import dtypes, language, semantics
from .builtins import EMITTERS, tensor_method, tile_method
from .errors import CompilationError, TileError
from .parser import ParsedFunction
from .values import Pointer, TensorArg, Tile

_PY_OPS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "//": operator.floordiv,
    "%": operator.mod, "**": operator.pow, "&": operator.and_, "|": operator.or_, "^": operator.xor,
    "<<": operator.lshift, ">>": operator.rshift, "<": operator.lt, "<=": operator.le, ">": operator.gt,
    ">=": operator.ge, "==": operator.eq, "!=": operator.ne, "@": operator.matmul,
}
_SAFE_PY_BUILTINS = {"min": py.min, "max": py.max, "abs": py.abs, "int": int, "float": float, "len": len, "bool": bool}
_UNSUPPORTED = {
    "while_stmt": "while loops", "try_stmt": "try statements", "with_stmt": "with statements",
    "lambda": "lambdas", "funcdef": "nested functions", "classdef": "classes", "break_stmt": "break",
    "continue_stmt": "continue", "global_stmt": "global", "nonlocal_stmt": "nonlocal", "del_stmt": "del",
    "raise_stmt": "raise", "import_stmt": "import", "yield_expr": "yield", "await_expr": "await",
    "comprehension": "comprehensions", "dict": "dicts", "set": "sets", "assert_stmt": "assert",
}


class _Return(Exception):
    pass


def is_runtime(v) -> bool:
    return isinstance(v, (Tile, Pointer))


class FunctionEmitter:
    """Emits one function body (a kernel, or an inlined helper) into the current block."""

    def __init__(self, parsed: ParsedFunction, globals_: dict, scope: dict):
        self.parsed, self.globals, self.scope = parsed, globals_, scope
        self.returned = None

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
        for stmt in (node.children if isinstance(node, Tree) and node.data == "suite" else [node]):
            self.statement(stmt)

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
        if not cond.is_scalar:
            raise self.error(cond_node, "an if condition must be a scalar, not a tile (use tile.where)")
        if cond.dtype != dtypes.int1:
            cond = semantics.compare("!=", cond, 0)
        carried = [n for n in _assigned_names([body] + [b for _, b in rest] + [else_suite]) if is_runtime(self.scope.get(n))]
        before = dict(self.scope)
        types = [_carry_type(self.scope[n]) for n in carried]
        op = scf.IfOp(cond.value, types, has_else=True)
        for block, emit in ((op.then_block, lambda: self.suite(body)), (op.else_block, lambda: self.if_chain(node, rest, else_suite))):
            self.scope.clear()
            self.scope.update(before)
            with ir.InsertionPoint(block):
                emit()
                scf.YieldOp([self.carry_value(node, n, before[n]) for n in carried])
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
            raise self.error(iterable, "a for loop must iterate over range(...) or tile.static_range(...)")
        callee = self.expr(iterable.children[0])
        args, kwargs = self.arguments(iterable.children[1] if len(iterable.children) > 1 else None)
        if kwargs or not 1 <= len(args) <= 3:
            raise self.error(iterable, "range takes 1 to 3 positional arguments")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
        if callee is language.static_range:
            if is_runtime(start) or is_runtime(stop) or is_runtime(step):
                raise self.error(iterable, "static_range bounds must be compile-time values")
            for i in range(start, stop, step):
                self.scope[_name(target)] = i
                self.suite(body)
            return
        if callee is not range:
            raise self.error(iterable, "a for loop must iterate over range(...) or tile.static_range(...)")
        self.runtime_loop(node, _name(target), start, stop, step, body)

    def runtime_loop(self, node, var, start, stop, step, body):
        for name in _assigned_names([body]):
            old = self.scope.get(name)
            if isinstance(old, (int, float)) and not isinstance(old, bool) and name != var:
                # A Python number reassigned in a run-time loop would silently stay constant.
                raise self.error(node, f"variable '{name}' holds the compile-time value {old!r} but is reassigned inside a "
                                 "run-time loop; give it a run-time initial value (e.g. tile.zeros or tile.full)")
        carried = [n for n in _assigned_names([body]) if is_runtime(self.scope.get(n)) and n != var]
        bounds = [b if isinstance(b, Tile) else semantics.constant(b, dtypes.int32) for b in (start, stop, step)]
        ity = dtypes.int64 if any(b.dtype == dtypes.int64 for b in bounds) else dtypes.int32
        lo, hi, st = (semantics.cast(b, ity).value for b in bounds)
        before = dict(self.scope)
        op = scf.ForOp(lo, hi, st, [_carry_value(self.scope[n]) for n in carried])
        with ir.InsertionPoint(op.body):
            self.scope[var] = Tile(op.induction_variable)
            for n, arg in zip(carried, op.inner_iter_args):
                self.scope[n] = _uncarry(before[n], arg)
            self.suite(body)
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
        if isinstance(old, Tile) and isinstance(new, Tile) and new.type != old.type:
            if new.shape == old.shape:
                new_v = semantics.cast(new, old.dtype).value
            else:
                raise self.error(node, f"'{name}' changes type from {old.type} to {new.type} inside control flow")
        return new_v

    # ---- expressions ----------------------------------------------------------
    def expr(self, node):
        if isinstance(node, Token):
            raise self.error(None, f"unexpected token {node!r}")
        if node.data in _UNSUPPORTED:
            raise self.error(node, f"unsupported Python construct: {_UNSUPPORTED[node.data]}")
        handler = getattr(self, "expr_" + node.data, None)
        if handler is None:
            raise self.error(node, f"unsupported Python construct: {node.data.replace('_', ' ')}")
        try:
            with self.location(node):
                return handler(node)
        except CompilationError:
            raise
        except TileError as e:
            raise self.error(node, str(e)) from None

    def expr_var(self, node):
        name = _name(node)
        if name in self.scope:
            return self.scope[name]
        if name in self.globals:
            return self.globals[name]
        if name in _SAFE_PY_BUILTINS or name == "range":
            return _SAFE_PY_BUILTINS.get(name, range)
        raise self.error(node, f"name '{name}' is not defined")

    def expr_number(self, node):
        return ast.literal_eval(str(node.children[0]))

    def expr_string(self, node):
        return ast.literal_eval(str(node.children[0]))

    def expr_const_true(self, node):
        return True

    def expr_const_false(self, node):
        return False

    def expr_const_none(self, node):
        return None

    def expr_tuple(self, node):
        return tuple(self.expr(c) for c in node.children)

    expr_list = expr_tuple

    def expr_arith_expr(self, node):
        kids = node.children
        acc = self.expr(kids[0])
        for i in range(1, len(kids), 2):
            acc = self.binary(kids[i + 1], str(kids[i]), acc, self.expr(kids[i + 1]))
        return acc

    expr_term = expr_shift_expr = expr_arith_expr

    def expr_and_expr(self, node):
        return self._fold_chain(node, "&")

    def expr_or_expr(self, node):
        return self._fold_chain(node, "|")

    def expr_xor_expr(self, node):
        return self._fold_chain(node, "^")

    def _fold_chain(self, node, op):
        acc = self.expr(node.children[0])
        for c in node.children[1:]:
            if isinstance(c, Tree):
                acc = self.binary(c, op, acc, self.expr(c))
        return acc

    def expr_and_test(self, node):
        return self._logical(node, "&", all)

    def expr_or_test(self, node):
        return self._logical(node, "|", any)

    def _logical(self, node, op, fold):
        values = [self.expr(c) for c in node.children]
        if not any(is_runtime(v) for v in values):
            return fold(values)
        acc = values[0]
        for v in values[1:]:
            acc = semantics.binary(op, _as_bool(acc), _as_bool(v))
        return acc

    def expr_not_test(self, node):
        v = self.expr(node.children[0])
        return (not v) if not is_runtime(v) else semantics.logical_not(v)

    def expr_factor(self, node):
        op, v = str(node.children[0]), self.expr(node.children[1])
        if not is_runtime(v):
            return {"-": operator.neg, "+": operator.pos, "~": operator.invert}[op](v)
        if op == "-":
            return semantics.negate(v)
        if op == "~":
            return semantics.binary("^", v, -1)
        return v

    def expr_power(self, node):
        base, exp = self.expr(node.children[0]), self.expr(node.children[1])
        if not is_runtime(base) and not is_runtime(exp):
            return base**exp
        if isinstance(exp, int) and 0 < exp <= 4:
            acc = base
            for _ in range(exp - 1):
                acc = semantics.binary("*", acc, base)
            return acc
        raise self.error(node, "** needs a small positive integer exponent (1 to 4) on a run-time value")

    def expr_comparison(self, node):
        kids = node.children
        result, left = None, self.expr(kids[0])
        for i in range(1, len(kids), 2):
            op = str(kids[i].children[0]) if isinstance(kids[i], Tree) else str(kids[i])
            right = self.expr(kids[i + 1])
            if op in ("is", "is not", "in", "not in"):
                raise self.error(node, f"unsupported comparison '{op}'")
            part = self.binary(kids[i + 1], op, left, right)
            result = part if result is None else self._logical_pair(result, part)
            left = right
        return result

    def _logical_pair(self, a, b):
        if not is_runtime(a) and not is_runtime(b):
            return a and b
        return semantics.binary("&", _as_bool(a), _as_bool(b))

    def expr_test(self, node):
        then, cond, other = (self.expr(c) for c in node.children)
        if not is_runtime(cond):
            return then if cond else other
        return semantics.where(cond, then, other)

    def binary(self, node, op, a, b):
        if not is_runtime(a) and not is_runtime(b):
            try:
                return _PY_OPS[op](a, b)
            except Exception as e:
                raise self.error(node, f"compile-time {op} failed: {e}") from None
        if isinstance(a, TensorArg) or isinstance(b, TensorArg) or isinstance(a, Pointer) or isinstance(b, Pointer):
            return self.pointer_arith(node, op, a, b)
        if op == "*" and isinstance(a, Tile) and type(b) is int and b == 1:
            return a  # x * 1, as when a stride specialized to 1 multiplies an index
        if op == "*" and isinstance(b, Tile) and type(a) is int and a == 1:
            return b
        if op in ("<", "<=", ">", ">=", "==", "!="):
            return semantics.compare(op, a, b)
        if op == "@":
            return EMITTERS["dot"](a, b)
        return semantics.binary(op, a, b)

    def pointer_arith(self, node, op, a, b):
        if isinstance(b, (TensorArg, Pointer)) and op == "+":
            a, b = b, a
        if op not in ("+", "-") or isinstance(b, (TensorArg, Pointer)):
            raise self.error(node, "pointers support only `pointer + offsets` and `pointer - offsets`")
        p = a if isinstance(a, Pointer) else Pointer(a, 0)
        if isinstance(b, Tile) and b.dtype.is_float:
            raise self.error(node, "pointer offsets must be integers")
        if isinstance(p.offsets, int) and p.offsets == 0 and op == "+":
            return Pointer(p.base, b)
        if isinstance(p.offsets, int) and not is_runtime(b):
            return Pointer(p.base, _PY_OPS[op](p.offsets, b))
        return Pointer(p.base, semantics.binary(op, p.offsets, b))

    def expr_getattr(self, node):
        obj, name = self.expr(node.children[0]), _name(node.children[1])
        if isinstance(obj, TensorArg):
            return tensor_method(obj, name)
        if isinstance(obj, Tile):
            return tile_method(obj, name)
        try:
            return getattr(obj, name)
        except AttributeError:
            raise self.error(node, f"{obj!r} has no attribute '{name}'") from None

    def expr_getitem(self, node):
        obj, index = self.expr(node.children[0]), node.children[1]
        items = index.children if isinstance(index, Tree) and index.data == "subscript_tuple" else [index]
        if not is_runtime(obj):
            keys = [self.expr(i) for i in items]
            return obj[keys[0] if len(keys) == 1 else tuple(keys)]
        if not isinstance(obj, Tile):
            raise self.error(node, "only tiles can be indexed, with `:` and `None` (as in x[:, None])")
        shape, dims = [], iter(obj.shape)
        for item in items:
            if isinstance(item, Tree) and item.data == "slice" and all(c is None for c in item.children):
                shape.append(next(dims, None))
            elif isinstance(item, Tree) and item.data == "const_none":
                shape.append(1)
            else:
                raise self.error(item, "tiles can only be indexed with `:` and `None` (as in x[:, None])")
        if None in shape or len([s for s in items if s.data == "slice"]) != len(obj.shape):
            raise self.error(node, f"index does not match the tile's rank {len(obj.shape)}")
        return EMITTERS["reshape"](obj, tuple(shape))

    def arguments(self, node):
        args, kwargs = [], {}
        for c in node.children if node is not None else []:
            if isinstance(c, Tree) and c.data == "argvalue":
                kwargs[_name(c.children[0])] = self.expr(c.children[1])
            elif isinstance(c, Tree) and c.data in ("starargs", "kwargs", "stararg"):
                raise self.error(c, "unsupported Python construct: * or ** arguments")
            else:
                args.append(self.expr(c))
        return args, kwargs

    def expr_funccall(self, node):
        callee = self.expr(node.children[0])
        args, kwargs = self.arguments(node.children[1] if len(node.children) > 1 else None)
        name = getattr(callee, "tile_builtin", None)
        if name is not None:
            try:
                return EMITTERS[name](*args, **kwargs)
            except TypeError as e:
                raise self.error(node, f"bad arguments to tile.{name}: {e}") from None
        helper = getattr(callee, "tile_helper", None)
        if helper is not None:
            return inline_helper(helper, args, kwargs)
        compile_time = not any(is_runtime(a) or isinstance(a, TensorArg) for a in [*args, *kwargs.values()])
        if callee in _SAFE_PY_BUILTINS.values() and compile_time:
            return callee(*args, **kwargs)
        if callable(callee) and getattr(callee, "__self__", None) is None and callee.__module__ == "tile.frontend.builtins":
            return callee(*args, **kwargs)  # bound tile methods such as x.to / x.stride
        raise self.error(node, f"cannot call {getattr(callee, '__name__', callee)!r} in a kernel: only tile builtins, "
                         "@tile.func helpers and min/max/abs/int/float/len on compile-time values")


def _name(node) -> str:
    if isinstance(node, Token):
        return str(node)
    if node.data in ("var", "name"):
        return _name(node.children[0])
    raise TypeError(node)


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
        offs = v.offsets if isinstance(v.offsets, Tile) else semantics.constant(v.offsets, dtypes.int32)
        return offs.value
    return v.value


def _carry_type(v) -> ir.Type:
    return _carry_value(v).type


def _uncarry(old, value: ir.Value):
    return Pointer(old.base, Tile(value)) if isinstance(old, Pointer) else Tile(value)


def _as_bool(v):
    if not is_runtime(v):
        return semantics.constant(bool(v), dtypes.int1)
    return v if v.dtype == dtypes.int1 else semantics.compare("!=", v, 0)


def inline_helper(helper, args, kwargs):
    """Emit a `@tile.func` body in place of its call; returns what it returns."""
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

    `signature` lists (param name, kind, detail): kind "tensor" with (dtype, rank),
    "scalar" with a dtype, "one" (an int argument equal to 1: still passed, but
    folded as the constant 1, as Triton specializes), or "constexpr" with the Python value.
    """
    module = ir.Module.create(loc=ir.Location.file(parsed.filename, parsed.first_line, 1))
    arg_types, scope = [], {}
    for pname, kind, detail in signature:
        if kind == "tensor":
            dt, rank = detail
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
                scope[pname] = TensorArg(next(args), pname)
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
                emitter.suite(body)
            except _Return:
                if emitter.returned is not None:
                    raise emitter.error(body, "a kernel cannot return a value; store results with tile.store") from None
            func.ReturnOp([])
    return module
