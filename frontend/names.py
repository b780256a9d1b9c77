"""The names a kernel or `@tile.func` body sees beyond its own: its closure's cells, then
its module's globals (as Python resolves them), and what it reads from there.

The compiled code depends on what it reads: the source of every helper it inlines and
the value of every constant it folds (`SCALE = 2.0`, `math.pi`, a closure's `scale`), by
a plain name or through modules (`mylib.helper`, `cfg.BLOCK`). `captured` lists them
from the source, before compiling, for the cache key (pure Python: the runtime imports
this without the compiler).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import textwrap
import threading
import types
from collections import ChainMap

from .constexpr import constexpr
from .dtypes import dtype, pointer_type
from .errors import source_of


_PACKAGE = __name__.split(".")[0]
# CPython 3.11's ast.parse is not thread-safe ("AST constructor recursion depth mismatch",
# python/cpython#106905): kernels compiled from several threads parse one at a time.
_PARSE = threading.Lock()


def namespace(fn) -> ChainMap:
    fn = inspect.unwrap(fn)
    cells = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            cells[name] = cell.cell_contents
        except ValueError:  # a closure variable not assigned yet
            pass
    return ChainMap(cells, fn.__globals__)


def is_constant(v) -> bool:
    """A value the frontend folds into the code it emits."""
    if isinstance(v, (bool, int, float, complex, str, bytes, type(None), dtype, pointer_type)):
        return True
    if isinstance(v, constexpr):
        return is_constant(v.value)
    if type(v).__module__ == "torch" and type(v).__name__ == "dtype":
        return True
    if isinstance(v, (tuple, list, frozenset)):
        return all(is_constant(x) for x in v)
    if isinstance(v, dict):
        return all(is_constant(k) and is_constant(x) for k, x in v.items())
    return False


def _references(fn) -> list[tuple[str, ...]]:
    """Each name the function's body loads, with the attributes read off it (`mylib.h.x`
    -> ("mylib", "h", "x")), its parameters left out. (Not its defaults': those were
    evaluated where it was defined, and `captured` takes their values.)"""
    source = textwrap.dedent(source_of(fn, fn.__name__))
    with _PARSE:
        tree = ast.parse(source)
    body = next(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))).body
    params = set(inspect.signature(fn).parameters)
    out = []
    for node in (n for stmt in body for n in ast.walk(stmt)):
        chain = []
        while isinstance(node, ast.Attribute):
            chain.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in params:
            out.append((node.id, *reversed(chain)))
    return sorted(set(out))


def captured(fn, is_helper: bool = False) -> tuple[list, list]:
    """(helpers, constants) that fn and the helpers it reaches read from their namespaces:
    each helper once, and per constant (where, dotted name, reader), the reader a function
    of no arguments that reads it again (the launcher's in-memory caches compare values).
    A helper's defaults are constants it reads (a kernel's are in its signature)."""
    helpers, constants, seen, todo = [], [], set(), [(fn, is_helper)]
    while todo:
        f, defaults = todo.pop()
        f = inspect.unwrap(f)
        ns = namespace(f)
        where = f"{f.__module__}.{f.__qualname__}"
        for p in inspect.signature(f).parameters.values() if defaults else ():
            if p.default is not p.empty and is_constant(p.default):
                constants.append((where, f"{p.name}=", lambda v=p.default: v))
        for root, *attrs in _references(f):
            if root not in ns:
                continue
            value, path = ns[root], []
            for attr in [None, *attrs]:
                if attr is not None:
                    try:
                        value = getattr(value, attr)
                    except Exception:  # (the frontend reports it, at its line)
                        break
                    path.append(attr)
                if isinstance(value, types.ModuleType) and value.__name__.split(".")[0] == _PACKAGE:
                    break  # the language's own names (tile.float32) never change
                helper = getattr(value, "tile_helper", None)
                if helper is not None:
                    if id(helper) not in seen:
                        seen.add(id(helper))
                        helpers.append(helper)
                        if has_source(helper.fn):  # (else its call fails to compile, at the caller's line)
                            todo.append((helper.fn, True))
                    break
                if is_constant(value):
                    constants.append((where, ".".join([root, *path]), _reader(f, root, path)))
                    break
    return helpers, constants


def has_source(fn) -> bool:
    try:
        inspect.getsource(fn)
        return True
    except (OSError, TypeError):
        return False


def _reader(fn, root: str, path: list[str]):
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    if root in cells:  # read the cell again: a closure's variable may be reassigned
        cell = cells[root]
        first = lambda: cell.cell_contents  # noqa: E731
    else:
        first = functools.partial(fn.__globals__.__getitem__, root)

    def read():
        v = first()
        for a in path:
            v = getattr(v, a)
        return v

    return read


def described(value) -> str:
    """A constexpr's value as the cache keys take it: its repr, and for a `@tile.func` (a
    constexpr may be one: ACT=gelu) the sources and values its code depends on, which its
    repr (`<tile.func gelu>`) does not tell apart."""
    if isinstance(value, tuple):  # (ACTS=(gelu, relu))
        return f"({''.join(described(v) + ', ' for v in value)})"
    helper = getattr(value, "tile_helper", None)
    if helper is None:
        return repr(value)
    helpers, constants = captured(helper.fn, is_helper=True)
    parts = [source_of(h.fn, h.__name__) for h in [helper, *helpers]]
    parts += [f"{where}: {name} = {read()!r}" for where, name, read in constants]
    return f"{value!r} {hashlib.sha256(chr(0).join(parts).encode()).hexdigest()[:16]}"
