"""Python's builtins as a kernel sees them, with Triton's meanings, and Triton's names the
language does not have yet.

- `min(a, b, ...)` / `max(...)`: Python's on compile-time values; on run-time scalars or
  tiles an elementwise minimum (Triton's `builtin_min`: a NaN loses to a number, as
  `minnum`), so that `min(num_pid_m - first_pid_m, GROUP_SIZE_M)` works as written.
- `isinstance(X, tile.constexpr)`: whether X is a compile-time value (constexpr parameters
  and globals are bare values here, never wrapped); `isinstance(X, tile.tensor)`, whether it
  is a run-time one (a tile, scalar or pointer; not a tensor descriptor, as Triton's).
- `print(prefix, *values)`: `tile.device_print`, as Triton's.
"""

from __future__ import annotations

import builtins as py
import functools

from . import descriptors, language, semantics, type_names
from .builtins import EMITTERS
from .constexpr import constexpr, unwrap
from .semantics import SemanticError
from .values import Pointer, TensorArg, Tile


class KernelBuiltin:
    """A Python builtin with a kernel meaning: `emit` runs in a kernel, `host` elsewhere."""

    def __init__(self, name, host, emit):
        self.__name__, self.host, self.kernel_builtin = name, host, emit

    def __call__(self, *args, **kwargs):
        return self.host(*args, **kwargs)

    def __repr__(self):
        return f"<built-in function {self.__name__}>"


def _runtime(v) -> bool:
    return isinstance(v, (Tile, Pointer, TensorArg))


def _min_max(kind: str):
    host = py.min if kind == "min" else py.max

    def emit(*args, **kwargs):
        if not any(_runtime(a) for a in args):
            return host(*[unwrap(a) for a in args], **kwargs)
        if kwargs:
            raise SemanticError(f"{kind}() of run-time values takes no keywords (tile.{kind}imum(x, y) is the "
                                "elementwise form)")
        if len(args) < 2:
            raise SemanticError(f"{kind}() of a run-time value needs two or more arguments; tile.{kind}(x) reduces a tile")
        for a in args:
            if isinstance(a, (Pointer, TensorArg)):
                raise SemanticError(f"{kind}() takes numbers, scalars and tiles, not pointers")
        # (a NaN loses to a number, `minnumf`: Triton's builtin min/max, PropagateNan.NONE)
        return functools.reduce(lambda x, y: semantics.extremum(kind, x, y, f"{kind}()'s operand", False), args)

    return emit


def _isinstance(value, classes):
    """isinstance, where `tile.constexpr` (alone or in a tuple) matches any compile-time value."""
    classes = classes if isinstance(classes, tuple) else (classes,)
    if constexpr in classes and not _runtime(value):
        return True
    if type_names.tensor in classes and _runtime(value):  # (Triton's tl.tensor: tiles, scalars, pointers)
        return True
    # (tile.tensor_descriptor names the frontend's descriptor value)
    rest = tuple(descriptors.TensorDescriptor if c is language.tensor_descriptor else c for c in classes
                 if c is not constexpr and c is not type_names.tensor)
    return bool(rest) and py.isinstance(value, rest)


def _print(*values, **kwargs):
    if not values or not isinstance(values[0], str):
        raise SemanticError("print in a kernel is tile.device_print(prefix, *values): give a string prefix first, "
                            "as print(\"x\", x)")
    if kwargs:
        raise SemanticError("print in a kernel (tile.device_print) takes no keywords")
    return EMITTERS["device_print"](*values)


KERNEL_BUILTINS = {
    "min": KernelBuiltin("min", py.min, _min_max("min")),
    "max": KernelBuiltin("max", py.max, _min_max("max")),
    "isinstance": KernelBuiltin("isinstance", py.isinstance, _isinstance),
    "print": KernelBuiltin("print", py.print, _print),
}

