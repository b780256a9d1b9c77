"""Walks a kernel's syntax tree and emits the `tile`-dialect function.

Compile-time and run-time control flow are kept apart: a condition or loop
bound that is a Python value (constexpr) is folded, one that is an SSA value
becomes `scf.if` / `scf.for` (`control_flow.py`). `@tile.func` helpers are inlined.
"""

from __future__ import annotations

import inspect

from lark import Tree
from mlir import ir
from mlir.dialects import func, scf

from . import bounds_check, device_assert, unsigned
from . import (atomics, builtins, descriptors, dot_scaled, dots, grid_dependence, hints, math_functions,  # noqa: F401
               memory_hints, python_builtins, random, reductions, scans, shape_builtins, standard)  # (they register their emitters)
from . import inline_asm, triton_core  # noqa: F401
from . import builtin_registry
from .builtin_registry import EMITTERS
from .constexpr import unwrap
from .control_flow import ControlFlow, Restart
from .descriptors import host_descriptors
from .errors import CompilationError, TileError
from .expressions import _UNSUPPORTED, Expressions, _name, is_runtime
from .names import namespace
from .parser import ParsedFunction
from .values import TensorArg, Tile


class _Return(Exception):
    pass


class FunctionEmitter(ControlFlow, Expressions):
    """Emits one function body (a kernel, or an inlined helper) into the current block."""

    def __init__(self, parsed: ParsedFunction, globals_: dict, scope: dict):
        self.parsed, self.globals, self.scope = parsed, globals_, scope
        self.returned = None
        self.runtime_depth = 0  # run-time ifs and loops around the statement being emitted
        self.retypable = frozenset()  # names of Python numbers a loop around may retype (`ControlFlow.retyping`)

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

        An `if` on a compile-time condition is replaced by the branch it takes, whose
        statements are then top-level ones too (`if HAS_X: ... if pid >= n: return`).
        """
        stmts = list(stmts)
        while stmts:
            stmt, stmts = stmts[0], stmts[1:]
            if not (isinstance(stmt, Tree) and stmt.data == "if_stmt"):
                self.statement(stmt)
                continue
            cond_node, body, elifs, else_suite = stmt.children
            branches = [(cond_node, body)] + [(e.children[0], e.children[1]) for e in (elifs.children if elifs else [])]
            taken, cond = else_suite, None
            for i, (c, b) in enumerate(branches):
                cond = self.guarded(c, lambda c=c: self.expr(c))
                if is_runtime(cond):
                    break
                if cond:
                    taken = b
                    break
            if not is_runtime(cond):
                stmts = _statements(taken) + stmts
                continue
            if i < len(branches) - 1 or else_suite is not None or not _ends_in_return(branches[i][1]):
                self.guarded(stmt, lambda: self.if_chain(stmt, branches[i:], else_suite, cond))
                continue
            cond = self.guarded(c, lambda: self.runtime_condition(c, cond))
            before = dict(self.scope)
            op = scf.IfOp(cond.value, [], has_else=True)
            with ir.InsertionPoint(op.then_block):
                self.runtime_depth += 1
                self.suite_of(branches[i][1].children[:-1])
                self.runtime_depth -= 1
                scf.YieldOp([])
            self.scope.clear()
            self.scope.update(before)
            with ir.InsertionPoint(op.else_block):
                try:
                    self.kernel_body(stmts)
                finally:  # (a later `return` ends the rest too: its block still needs the yield)
                    scf.YieldOp([])
            return

    def suite_of(self, stmts):
        for stmt in stmts:
            self.statement(stmt)

    def statement(self, node):
        if not isinstance(node, Tree):
            return
        if node.data in _UNSUPPORTED:
            raise self.error(node, f"unsupported Python construct: {_UNSUPPORTED[node.data]}")
        handler = getattr(self, "stmt_" + node.data, None)
        if handler is None:
            raise self.error(node, f"unsupported Python construct: {node.data.replace('_', ' ')}")
        self.guarded(node, lambda: handler(node))

    def guarded(self, node, emit):
        """emit() at node's location, its errors raised at node's line."""
        try:
            with self.location(node):
                return emit()
        except CompilationError as e:
            if e.line <= 0:  # (about no line of its own: a helper whose source cannot be read) at this statement
                raise self.error(node, e.message) from None
            raise
        except TileError as e:
            raise self.error(node, str(e)) from None
        except (_Return, Restart):
            raise
        except Exception as e:  # Python's own error on a value (a str constexpr used as a number): at its line
            raise self.error(node, f"{type(e).__name__}: {e}") from None

    def stmt_simple_stmt(self, node):  # `a = 1; b = 2`: statements on one line, in turn
        self.suite_of(node.children)

    def stmt_pass_stmt(self, node):
        pass

    def stmt_assert_stmt(self, node):
        """`assert BLOCK % 16 == 0, "..."` checks compile-time values as the kernel compiles."""
        cond = self.expr(node.children[0])
        if is_runtime(cond):  # (as Triton: a device_assert)
            message = node.children[1]
            EMITTERS["device_assert"](cond, "" if message is None else str(self.expr(message)))
            return
        if not cond:
            message = node.children[1]
            raise self.error(node, "assertion failed" + (f": {self.expr(message)}" if message is not None else ""))

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

def _statements(suite) -> list:
    """The statements of a branch (a suite, one simple statement, or None: none)."""
    if suite is None:
        return []
    return list(suite.children) if isinstance(suite, Tree) and suite.data == "suite" else [suite]


def _ends_in_return(body) -> bool:
    """A suite whose last statement is a bare `return`."""
    last = body.children[-1] if isinstance(body, Tree) and body.data == "suite" else None
    return isinstance(last, Tree) and last.data == "return_stmt" and last.children[0] is None


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


builtin_registry.inline_helper = inline_helper


def _inline(helper, args, kwargs):
    parsed = helper.parsed
    try:  # Python's own binding: defaults, keyword-only parameters, *args
        bound = inspect.signature(helper.fn).bind(*args, **kwargs)
    except TypeError as e:
        raise TileError(f"{helper.__name__}(): {e}") from None
    bound.apply_defaults()
    # (a default may be a module's `tile.constexpr(...)`: its value, as everywhere in a kernel)
    inner = FunctionEmitter(parsed, namespace(helper.fn), {k: unwrap(v) for k, v in bound.arguments.items()})
    body = parsed.tree.children[-1]
    try:
        inner.suite_of(body.children if body.data == "suite" else [body])
    except _Return:  # (only outside run-time control flow, which refuses it): the helper ends there
        return inner.returned
    return None


def emit_kernel(parsed: ParsedFunction, globals_: dict, name: str, signature: list, asserts: bool = True,
                bounds: bool = False, f32_precision: str = "ieee") -> ir.Module:
    """Build `func.func @name` for one specialization (`asserts`: device_assert checks, else none;
    `f32_precision`: f32 dots' where they name none, `dots.F32_DEFAULT`).

    `signature` lists (param name, kind, detail): kind "tensor" with (dtype, rank) or (dtype, rank, "wide"),
    "scalar" with a dtype, "one" (an int argument equal to 1: still passed, but
    folded as the constant 1, as Triton specializes), or "constexpr" with the Python value.
    """
    token, checks = device_assert.ENABLED.set(asserts), bounds_check.ENABLED.set(bounds)
    precision = dots.F32_DEFAULT.set(f32_precision)
    try:
        return _emit_kernel(parsed, globals_, name, signature)
    finally:
        device_assert.ENABLED.reset(token)
        bounds_check.ENABLED.reset(checks)
        dots.F32_DEFAULT.reset(precision)


def _emit_kernel(parsed: ParsedFunction, globals_: dict, name: str, signature: list) -> ir.Module:
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
                scope[pname] = TensorArg(next(args), pname, "wide" in detail, unsigned=not detail[0].signed)
            elif kind == "scalar":
                scope[pname] = Tile(next(args))
            elif kind == "one":
                next(args)
                scope[pname] = 1
            else:
                scope[pname] = detail
        host_descriptors(scope)
        emitter = FunctionEmitter(parsed, globals_, scope)
        with ir.InsertionPoint(block):
            body = parsed.tree.children[-1]
            try:
                emitter.kernel_body(body.children if isinstance(body, Tree) and body.data == "suite" else [body])
            except _Return:
                if emitter.returned is not None:
                    raise emitter.error(body, "a kernel cannot return a value; store results with tile.store") from None
            func.ReturnOp([])
    unsigned.forget(module)
    return module
