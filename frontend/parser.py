"""Parses a kernel's Python source with lark's bundled `python.lark` grammar.

The grammar accepts all of Python; the emitter rejects, with the user's line,
every construct the language does not have (while, try, with, lambda, ...).

One parse at a time: lark's `PythonIndenter` keeps the indentation of the parse in
progress in the shared parser, and two threads parsing at once failed with dedent or
syntax errors. Both the grammar's tables (2 s to build) and each source's tree are kept
in `<TILE_CACHE_DIR>/parser/`, so that a later process parses a kernel in about a
millisecond.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import pickle
import sys
import tempfile
import textwrap
import threading
from dataclasses import dataclass

import lark
from lark import Lark, Tree
from lark.exceptions import UnexpectedInput
from lark.indenter import PythonIndenter

from .errors import CompilationError, def_line, source_of
from .paths import cache_dir, remove, share

_LOCK = threading.Lock()  # around the parser: see the module docstring
_GRAMMAR = dict(parser="lalr", start="file_input", propagate_positions=True)
_VERSION = f"lark {lark.__version__}, python {sys.version_info[:2]}, {sorted(_GRAMMAR.items())}"
_parser_instance: Lark | None = None
_trees: dict = {}  # source -> tree, in this process


def _new_lock():
    global _LOCK
    _LOCK = threading.Lock()


os.register_at_fork(after_in_child=_new_lock)  # (a fork while another thread parses: not inherited held)


def _cache_path(name: str) -> str:
    return os.path.join(cache_dir(), "parser", name)


def _parser() -> Lark:
    """The parser, its tables from lark's cache file when one exists (lark checks that it
    matches this grammar, these options and its version; a damaged one is rebuilt and
    written again), else built and saved there. Call with _LOCK held."""
    global _parser_instance
    if _parser_instance is None:
        path = _cache_path(f"python-lark-{lark.__version__}-py{sys.version_info[0]}{sys.version_info[1]}.cache")
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        except OSError:  # (a cache that cannot be written: build the tables every time)
            path = False
        _parser_instance = Lark.open_from_package("lark", "python.lark", ["grammars"], postlex=PythonIndenter(),
                                                  cache=path, **_GRAMMAR)
    return _parser_instance


@dataclass
class ParsedFunction:
    """A function's syntax tree and where its source lives, for error positions."""

    tree: Tree  # the `funcdef` node
    source: str  # the dedented source that was parsed
    filename: str
    first_line: int  # line number of the `def` in the file
    indent: int  # columns removed by dedent

    def position(self, meta) -> tuple[int, int]:
        return self.first_line + meta.line - 1, meta.column + self.indent

    def source_line(self, meta) -> str:
        lines = self.source.splitlines()
        return " " * self.indent + lines[meta.line - 1] if 0 < meta.line <= len(lines) else ""


def parse_function(fn) -> ParsedFunction:
    source_of(fn, fn.__name__)  # (none: a CompilationError saying so, not Python's OSError)
    lines, first_line, skip = def_line(fn)
    source = textwrap.dedent("".join(lines))
    indent = len(lines[0]) - len(lines[0].lstrip())
    filename = inspect.getsourcefile(fn) or "<kernel>"
    source = "".join(source.splitlines(keepends=True)[skip:])  # from `def`
    first_line += skip
    try:
        tree = _tree(source if source.endswith("\n") else source + "\n")
    except UnexpectedInput as e:
        line = source.splitlines()[e.line - 1] if e.line and e.line > 0 else ""
        raise CompilationError("syntax not understood", filename, first_line + e.line - 1, e.column + indent, line) from None
    funcdef = tree.children[0]
    if funcdef.data != "funcdef":
        raise CompilationError("expected a function definition", filename, first_line, 1)
    return ParsedFunction(funcdef, source, filename, first_line, indent)


def _tree(source: str) -> Tree:
    """source's tree: from this process's, from the disk cache's (a pickle named by the
    source's and the parser's hash) or parsed, and then kept in both. Trees are never
    changed after parsing (the emitter only reads them), so they are shared."""
    tree = _trees.get(source)
    if tree is not None:
        return tree
    path = _cache_path(hashlib.sha256(f"{_VERSION}\0{source}".encode()).hexdigest()[:32] + ".tree")
    try:
        with open(path, "rb") as f:
            tree = pickle.load(f)
    except Exception:  # (absent, or damaged: parse again)
        tree = None
    if not isinstance(tree, Tree):
        with _LOCK:
            tree = _parser().parse(source)
        _write_atomically(path, pickle.dumps(tree, protocol=pickle.HIGHEST_PROTOCOL))
    _trees[source] = tree
    return tree


def _write_atomically(path: str, data: bytes):
    """data into a temporary file renamed to path: other processes read it whole or not at all.
    A cache that cannot be written is only slower."""
    tmp = None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(share(tmp), path)
    except OSError:
        remove(tmp)
