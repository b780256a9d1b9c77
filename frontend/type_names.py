"""Triton's type names that kernels write in annotations and checks, and the dtype names of
formats tile does not hold: `tile.tuple` (Python's tuple: `isinstance(x, tile.tuple)`,
`tile.tuple((a, b))`), `tile.const` (the annotation of a pointer to read-only data, accepted
as Triton's; tile does not check that such a tensor is never stored to), `tile.void` and the
float8 formats `float8e4b15`, `float8e4b8`, `float8e5b16`, whose use as a dtype is an error at
its line that says why."""

from __future__ import annotations

import builtins
from dataclasses import dataclass

tuple = builtins.tuple  # noqa: A001  (Triton's tl.tuple: the kernel language's tuples are Python's)


class const:
    """The annotation of a parameter whose tensor a kernel only reads (Triton's `tl.const`)."""


@dataclass(frozen=True)
class UnsupportedDtype:
    """A dtype name of Triton's that tile has no type for: naming it is fine, using it an error."""

    name: str
    reason: str

    def __repr__(self) -> str:
        return f"tile.{self.name}"

    def error(self) -> str:
        return f"{self!r} cannot be used as a dtype: {self.reason}"


_FLOAT8 = "tile's float8 types are float8e4m3 (Triton's float8e4nv) and float8e5m2 (float8e5)"
void = UnsupportedDtype("void", "it is the type of no value (Triton's, for functions that return nothing)")
float8e4b15 = UnsupportedDtype("float8e4b15", f"{_FLOAT8}; e4b15 is Triton's software format for GPUs before sm_89, "
                                              "deprecated as a dot operand on sm_90")
float8e4b8 = UnsupportedDtype("float8e4b8", f"{_FLOAT8}; e4b8 (torch.float8_e4m3fnuz) is AMD's, which Triton "
                                            "rejects on NVIDIA GPUs ('type fp8e4b8 not supported in this architecture')")
float8e5b16 = UnsupportedDtype("float8e5b16", f"{_FLOAT8}; e5b16 (torch.float8_e5m2fnuz) is AMD's, which Triton "
                                              "rejects on NVIDIA GPUs ('type fp8e5b16 not supported in this architecture')")
