"""Parses a kernel's Python source with lark's bundled `python.lark` grammar.

The grammar accepts all of Python; the emitter rejects, with the user's line,
every construct the language does not have (while, try, with, lambda, ...).
"""

from __future__ import annotations

import functools
import inspect
import textwrap
from dataclasses import dataclass

from lark import Lark, Tree
from lark.exceptions import UnexpectedInput
from lark.indenter import PythonIndenter

from .errors import CompilationError, def_line


@functools.cache
def _parser() -> Lark:
    return Lark.open_from_package(
        "lark", "python.lark", ["grammars"], parser="lalr", postlex=PythonIndenter(),
        start="file_input", propagate_positions=True,
    )


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
    lines, first_line, skip = def_line(fn)
    source = textwrap.dedent("".join(lines))
    indent = len(lines[0]) - len(lines[0].lstrip())
    filename = inspect.getsourcefile(fn) or "<kernel>"
    source = "".join(source.splitlines(keepends=True)[skip:])  # from `def`
    first_line += skip
    try:
        tree = _parser().parse(source if source.endswith("\n") else source + "\n")
    except UnexpectedInput as e:
        line = source.splitlines()[e.line - 1] if e.line and e.line > 0 else ""
        raise CompilationError("syntax not understood", filename, first_line + e.line - 1, e.column + indent, line) from None
    funcdef = tree.children[0]
    if funcdef.data != "funcdef":
        raise CompilationError("expected a function definition", filename, first_line, 1)
    return ParsedFunction(funcdef, source, filename, first_line, indent)
