"""The exceptions `tile` raises at its users, all under `TileError`.

A `CompilationError` points at the user's file, line and column, and shows the
line with a caret; it is raised with the compiler's own frames cut off.
"""

from __future__ import annotations

import inspect


class TileError(Exception):
    """Base of every error `tile` reports to a kernel author."""


class CompilationError(TileError):
    def __init__(self, message: str, filename: str = "<kernel>", line: int = 0, column: int = 0, source_line: str = ""):
        self.message, self.filename, self.line, self.column = message, filename, line, column
        text = f"{filename}:{line}:{column}: {message}"
        if source_line:
            text += f"\n    {source_line.rstrip()}\n    {' ' * max(column - 1, 0)}^"
        super().__init__(text)


class LaunchError(TileError):
    """Bad launch: wrong arguments, dtypes, devices or strides; names the argument."""


class DeviceUnavailableError(TileError):
    """The kernel was compiled, but there is no device here to run it on."""


def def_line(fn) -> tuple[list[str], int, int]:
    """fn's source lines, the file line number of the first, and the index of the `def`
    line among them (decorators are Python's business, not the language's): where an
    error about the whole kernel points."""
    lines, first = inspect.getsourcelines(fn)
    return lines, first, next(i for i, line in enumerate(lines) if line.lstrip().startswith("def "))
