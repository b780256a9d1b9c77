"""Expressions of the kernel language: names, constants, operators, calls,
attributes and indexing (a mixin of the emitter, `emitter.py`).

Operators on two compile-time values are folded in Python; anything touching
an SSA value emits IR through `semantics.py` and `builtins.py`.
"""

from __future__ import annotations

import ast
import builtins as py
import math
import operator
import re

from lark import Token, Tree

from . import dtypes, semantics, type_names
from .builtins import EMITTERS, tensor_method, tile_method
from .constexpr import unwrap
from .python_builtins import KERNEL_BUILTINS, KernelBuiltin
from .errors import CompilationError, TileError
from .values import Aggregate, Pointer, TensorArg, Tile

_PY_OPS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "//": operator.floordiv,
    "%": operator.mod, "**": operator.pow, "&": operator.and_, "|": operator.or_, "^": operator.xor,
    "<<": operator.lshift, ">>": operator.rshift, "<": operator.lt, "<=": operator.le, ">": operator.gt,
    ">=": operator.ge, "==": operator.eq, "!=": operator.ne, "@": operator.matmul,
}
def _pointer_tile(obj) -> bool:
    """Whether obj is a tile of pointers (`x + offsets` of a tile of offsets), not one pointer."""
    return isinstance(obj, Pointer) and isinstance(obj.offsets, Tile) and not obj.offsets.is_scalar


_PY_COMPARISONS = {"is": operator.is_, "is not": operator.is_not, "in": lambda a, b: a in b,
                   "not in": lambda a, b: a not in b}
_SAFE_PY_BUILTINS = {**KERNEL_BUILTINS, "abs": py.abs, "int": int, "float": float, "len": len, "bool": bool, "tuple": tuple}
_UNSUPPORTED = {
    "try_stmt": "try statements", "with_stmt": "with statements",
    "lambdef": "lambdas", "funcdef": "nested functions", "classdef": "classes", "break_stmt": "break",
    "continue_stmt": "continue", "global_stmt": "global", "nonlocal_stmt": "nonlocal", "del_stmt": "del",
    "raise_stmt": "raise", "import_stmt": "import", "yield_expr": "yield", "await_expr": "await",
    "comprehension": "comprehensions", "dict": "dicts", "set": "sets",
}


def is_runtime(v) -> bool:
    return isinstance(v, (Tile, Pointer, Aggregate))


class Expressions:
    """expr_<rule> for each lark rule of an expression; needs `error`, `location`,
    `scope`, `globals` and `inline_helper` from the emitter."""

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
        if name in self.globals:  # (a module's `BLOCK = tile.constexpr(64)`: its value)
            return unwrap(self.globals[name])
        if name in _SAFE_PY_BUILTINS or name == "range":
            return _SAFE_PY_BUILTINS.get(name, range)
        raise self.error(node, f"name '{name}' is not defined")

    def expr_number(self, node):
        return ast.literal_eval(str(node.children[0]))

    def expr_string(self, node):
        text = str(node.children[0])
        if "f" in text[:len(text) - len(text.lstrip("rRbBuUfF"))].lower():  # the prefix
            raise self.error(node, "unsupported Python construct: f-strings")
        return ast.literal_eval(text)

    def expr_string_concat(self, node):  # "ab" "cd"
        parts = [self.expr(c) for c in node.children]
        return parts[0][:0].join(parts)

    def expr_ellipsis(self, node):  # (a `...` body)
        return Ellipsis

    def expr_slice(self, node):  # t[1:], on a compile-time tuple
        return slice(*[None if c is None else self.expr(c) for c in node.children])

    def expr_sliceop(self, node):
        return self.expr(node.children[0]) if node.children and node.children[0] is not None else None

    def expr_const_true(self, node):
        return True

    def expr_const_false(self, node):
        return False

    def expr_const_none(self, node):
        return None

    def expr_tuple(self, node):
        return tuple(self.expr(c) for c in node.children)

    expr_list = expr_testlist_tuple = expr_tuple  # (a, b), [a, b] and a bare a, b (a helper's return)

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
        return self._logical(node, "&")

    def expr_or_test(self, node):
        return self._logical(node, "|")

    def _logical(self, node, op):
        """`and` / `or` as Python's on compile-time values, the rest unevaluated once one decides
        (`BIAS is not None and BIAS > 0`, `BLOCK or 128`); elementwise on run-time ones."""
        acc = None  # the run-time result so far
        for i, c in enumerate(node.children):
            v = self.expr(c)
            if acc is None and not is_runtime(v):
                if bool(v) != (op == "&") or i == len(node.children) - 1:
                    return v
                continue  # (True and ..., False or ...: the rest decides)
            acc = _as_bool(v) if acc is None else semantics.binary(op, acc, _as_bool(v))
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
        if op == "~" and v.dtype.is_float:
            raise self.error(node, f"~ needs an integer or bool operand, got {v.dtype!r}")
        if op == "~":  # (on bools a logical not, as torch's; all ones: -1, or an unsigned type's largest)
            ones = True if v.dtype == dtypes.int1 else -1 if v.dtype.signed else semantics.int_range(v.dtype)[1]
            return semantics.binary("^", v, ones)
        return v

    def expr_power(self, node):
        return self.binary(node, "**", self.expr(node.children[0]), self.expr(node.children[1]))

    def power(self, node, base, exp):
        """A run-time value to a small constant power (`x ** 2`, `x **= 2`), as products."""
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
            op = " ".join(map(str, kids[i].children)) if isinstance(kids[i], Tree) else str(kids[i])  # ("is", "not")
            right = self.expr(kids[i + 1])
            if op in _PY_COMPARISONS:
                part = self.python_comparison(node, op, left, right)
            else:
                part = self.binary(kids[i + 1], op, left, right)
            result = part if result is None else self._logical_pair(result, part)
            left = right
        return result

    def python_comparison(self, node, op, left, right):
        """`is`, `is not`, `in` and `not in` compare compile-time objects (`if BIAS is not None`, a
        constexpr's default): a run-time value is never None, but has no identity or
        membership to test before the kernel runs."""
        if op in ("in", "not in") and (is_runtime(left) or is_runtime(right)):
            raise self.error(node, f"'{op}' needs compile-time values on both sides")
        if op in ("is", "is not") and is_runtime(left) and is_runtime(right):
            raise self.error(node, f"'{op}' compares a run-time value only with a compile-time one (as `x is None`)")
        return _PY_COMPARISONS[op](left, right)

    def _logical_pair(self, a, b):
        if not is_runtime(a) and not is_runtime(b):
            return a and b
        return semantics.binary("&", _as_bool(a), _as_bool(b))

    def expr_test(self, node):
        then, cond, other = node.children
        cond = self.expr(cond)
        if not is_runtime(cond):  # only the branch taken, as Python (`tile.load(b + o) if HAS_B else 0.0`)
            return self.expr(then if cond else other)
        return semantics.where(cond, self.expr(then), self.expr(other))

    def binary(self, node, op, a, b):
        # (a tensor argument is no run-time value, but `x + 0` is a pointer all the same)
        if isinstance(a, TensorArg) or isinstance(b, TensorArg) or isinstance(a, Pointer) or isinstance(b, Pointer):
            return self.pointer_arith(node, op, a, b)
        if not is_runtime(a) and not is_runtime(b):
            try:
                if op in ("//", "%") and isinstance(a, (int, float)) and isinstance(b, (int, float)):
                    return _division(op, a, b)
                _check_fold_size(op, a, b)
                return _PY_OPS[op](a, b)
            except Exception as e:
                raise self.error(node, f"compile-time {op} failed: {e}") from None
        # x * 1, as when a stride specialized to 1 multiplies an index (not a bool: mask * 1 is int32)
        if op == "*" and isinstance(a, Tile) and type(b) is int and b == 1 and a.dtype != dtypes.int1:
            return a
        if op == "*" and isinstance(b, Tile) and type(a) is int and a == 1 and b.dtype != dtypes.int1:
            return b
        if op in ("<", "<=", ">", ">=", "==", "!="):
            return semantics.compare(op, a, b)
        if op == "@":
            return EMITTERS["dot"](a, b)
        if op == "**":
            return self.power(node, a, b)
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
        if isinstance(obj, (TensorArg, Pointer)) and (name == "dtype" or name == "type" and not _pointer_tile(obj)):
            # (Triton's `x_ptr.dtype.element_ty`, and `x_ptr.type.element_ty` of a scalar pointer)
            return dtypes.pointer_type((obj if isinstance(obj, TensorArg) else obj.base).dtype)
        if name == "type" and _pointer_tile(obj):  # (Triton's block_type of pointers)
            return type_names.block_type(dtypes.pointer_type(obj.base.dtype), tuple(obj.offsets.shape))
        if isinstance(obj, TensorArg):
            return tensor_method(obj, name)
        if isinstance(obj, Tile):
            return tile_method(obj, name)
        if isinstance(obj, Aggregate):  # a tensor descriptor's .load, .shape, ...
            try:
                return obj.attribute(name)
            except AttributeError:
                raise self.error(node, f"{obj!r} has no attribute '{name}'") from None
        try:
            return unwrap(getattr(obj, name))
        except type_names.NotInLanguage as e:  # (tile.atomic_poll: Triton's, not tile's yet)
            raise self.error(node, str(e)) from None
        except AttributeError:
            raise self.error(node, f"{obj!r} has no attribute '{name}'") from None

    def expr_getitem(self, node):
        obj, index = self.expr(node.children[0]), node.children[1]
        items = index.children if isinstance(index, Tree) and index.data == "subscript_tuple" else [index]
        if not is_runtime(obj):
            keys = [self.expr(i) for i in items]
            return obj[keys[0] if len(keys) == 1 else tuple(keys)]
        if _pointer_tile(obj):
            return Pointer(obj.base, self.index_tile(node, obj.offsets, items))  # (a tile of pointers: `ptrs[:, None]`)
        if not isinstance(obj, Tile):
            raise self.error(node, "only tiles can be indexed, with `:` and `None` (as in x[:, None])")
        return self.index_tile(node, obj, items)

    def index_tile(self, node, obj: Tile, items) -> Tile:
        """obj[items], each item `:` or `None`: a reshape."""
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
            if c is None:  # (the grammar's slot after a trailing comma: `f(a, mask=m,)`)
                continue
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
        if isinstance(callee, KernelBuiltin):  # min, max, isinstance, print: Triton's meanings
            return self.call_emitter(node, callee.__name__, callee.kernel_builtin, args, kwargs)
        if name is not None:
            return self.call_emitter(node, f"tile.{name}", EMITTERS[name], args, kwargs)
        helper = getattr(callee, "tile_helper", None)
        if helper is not None:
            return self.inline_helper(helper, args, kwargs)
        compile_time = not any(is_runtime(a) or isinstance(a, TensorArg) for a in [*args, *kwargs.values()])
        if callee in type_names.COMPILE_TIME_TYPES and compile_time:  # tile.pointer_type(tile.float16), a compile-time type
            return callee(*args, **kwargs)
        if callee in _SAFE_PY_BUILTINS.values() and compile_time:
            return callee(*args, **kwargs)
        if isinstance(getattr(callee, "__self__", None), type_names.TYPES) and compile_time:  # x.dtype.is_floating()
            return callee(*args, **kwargs)
        if callable(callee) and (getattr(callee, "tile_method", False) or getattr(callee, "__self__", None) is None
                                 and callee.__module__ == "tile.frontend.builtins"):
            method = _method_name(node.children[0])  # bound tile methods such as x.to / x.stride
            return self.call_emitter(node, method, callee, args, kwargs)
        raise self.error(node, f"cannot call {getattr(callee, '__name__', callee)!r} in a kernel: only tile builtins, "
                         "@tile.func helpers, min/max/print and abs/int/float/len on compile-time values")

    def call_emitter(self, node, shown: str, emit, args, kwargs):
        try:
            return emit(*args, **kwargs)
        except TypeError as e:  # Python's, on the arguments: named as the kernel wrote the call
            message = re.sub(r"^[\w.<>]+\(\) ", "", str(e))
            raise self.error(node, f"bad arguments to {shown}(): {message}") from None


def _method_name(node) -> str:
    """`.to` for `x.to`, as an error names the call."""
    return "." + _name(node.children[1]) if isinstance(node, Tree) and node.data == "getattr" else "the method"


def _name(node) -> str:
    if isinstance(node, Token):
        return str(node)
    if node.data in ("var", "name"):
        return _name(node.children[0])
    raise TypeError(node)


MAX_FOLDED_BITS = 1 << 12  # an int computed at compile time (a kernel uses 64 bits)
MAX_FOLDED_LENGTH = 1 << 16  # a str, bytes or tuple repeated at compile time


def _check_fold_size(op: str, a, b):
    """Refuse a compile-time ** or << whose result would take Python minutes and gigabytes
    (10 ** 10 ** 8 never finished compiling), and a sequence repeated past any use."""
    ints = isinstance(a, int) and isinstance(b, int)
    if ints and op == "**" and b > 0 and abs(a) > 1 and b * math.log2(abs(a)) > MAX_FOLDED_BITS:
        raise TileError(f"the result would have more than {MAX_FOLDED_BITS} bits")
    if ints and op == "<<" and a and b > MAX_FOLDED_BITS:
        raise TileError(f"the result would have more than {MAX_FOLDED_BITS} bits")
    seq, n = (a, b) if isinstance(a, (str, bytes, tuple, list)) else (b, a)
    if op == "*" and isinstance(seq, (str, bytes, tuple, list)) and isinstance(n, int) and len(seq) * n > MAX_FOLDED_LENGTH:
        raise TileError(f"a {type(seq).__name__} of {len(seq) * n} items is past any use in a kernel")


def _division(op: str, a, b):
    """a // b and a % b on Python numbers as on run-time ones (`semantics.binary`), so that a
    value folded at compile time (a constexpr, an int argument equal to 1) gives what the
    run-time value would: ints truncate (x // 0 == x, x % 0 == 0), floats floor as Python's."""
    if isinstance(a, float) or isinstance(b, float):
        return a // b if op == "//" else a % b
    if b == 0:
        return a if op == "//" else 0
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return q if op == "//" else a - q * b


def _as_bool(v):
    if not is_runtime(v):
        return semantics.constant(bool(v), dtypes.int1)
    return v if v.dtype == dtypes.int1 else semantics.compare("!=", v, 0)
