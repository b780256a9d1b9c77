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
        self.source_line = source_line
        text = f"{filename}:{line}:{column}: {message}"
        if source_line:
            text += f"\n    {source_line.rstrip()}\n    {' ' * max(column - 1, 0)}^"
        super().__init__(text)

    def __reduce__(self):
        # (whole, through a pickle: autotune's compile workers send theirs back)
        return type(self), (self.message, self.filename, self.line, self.column, self.source_line)


class LaunchError(TileError):
    """Bad launch: wrong arguments, dtypes, devices or strides; names the argument."""


class DeviceAssertionError(TileError, AssertionError):
    """A `device_assert` (or `assert` on a run-time value) failed while the kernel ran."""


class SpillWarning(UserWarning):
    """A GPU kernel whose registers ptxas spilled to local memory (said whenever its launcher is
    made, from the compiler or the cache)."""


class WarpSpecializeWarning(UserWarning):
    """A loop's `warp_specialize=True` was ignored (said whenever its launcher is made): the
    loop runs as it would without it, for the reason given (no TMA ring, sm_80, ...)."""


class DeviceUnavailableError(TileError):
    """The kernel was compiled, but there is no device here to run it on."""


def def_line(fn) -> tuple[list[str], int, int]:
    """fn's source lines, the file line number of the first, and the index of the `def`
    line among them (decorators are Python's business, not the language's): where an
    error about the whole kernel points."""
    lines, first = inspect.getsourcelines(fn)
    return lines, first, next(i for i, line in enumerate(lines) if line.lstrip().startswith("def "))


def checked_function(fn, decorator: str, varargs: bool):
    """fn, if `@tile.<decorator>` can compile it: a function written with `def` (a
    staticmethod's own; `varargs`: with *args and **kwargs); else a TileError saying what
    it got (a lambda, a kernel, any other object)."""
    if isinstance(fn, staticmethod):
        fn = fn.__func__
    inner = inspect.unwrap(fn) if callable(fn) else fn
    if not inspect.isfunction(inner) or inner.__name__ == "<lambda>" or inspect.iscoroutinefunction(inner):
        got = ("a lambda" if getattr(inner, "__name__", "") == "<lambda>" else
               "an async function" if inspect.iscoroutinefunction(inner) else repr(fn))
        raise TileError(f"@tile.{decorator} takes a function defined with `def`, got {got}")
    star = [p.name for p in inspect.signature(fn).parameters.values() if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if star and not varargs:
        raise TileError(f"@tile.{decorator} {fn.__name__}: parameters must be named, one each (not *{star[0]})")
    return fn


def source_of(fn, what: str) -> str:
    """fn's source, or a CompilationError saying it has none (`what`: "kernel k")."""
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        raise CompilationError(f"the source of {what} cannot be read (defined by exec or at an interactive "
                               "prompt?): tile compiles kernels and helpers from their source files") from None


def interrupt_of(e: BaseException) -> BaseException | None:
    """The KeyboardInterrupt or SystemExit that MLIR's Python bindings turned into a RuntimeError
    ("Exception raised in callback: ... KeyboardInterrupt", from a walk's callback), to raise as
    itself: a Ctrl-C during a compile came back as an internal compiler error, and was cached as one."""
    if not (isinstance(e, RuntimeError) and str(e).startswith("Exception raised in callback: ")):
        return None
    last = str(e).rstrip().splitlines()[-1]
    name, _, arg = last.partition(":")
    if name == "KeyboardInterrupt":
        return KeyboardInterrupt()
    if name == "SystemExit":
        arg = arg.strip()
        return SystemExit(int(arg) if arg.lstrip("-").isdigit() else arg or None)
    return None
