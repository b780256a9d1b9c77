"""Loads the `tile` dialect (ops and layout attribute) into an MLIR context.

The IRDL text is generated from the op definitions in `tile_ops.py` and
`pipeline_ops.py` and the attribute in `layout.py`; `tile-opt --print-dialect` shows it.
"""

from __future__ import annotations

import sys
import types

from mlir import ir
from mlir.dialects import irdl

from . import combine_ops, pipeline_ops, tile_ops, warp_specialize_ops  # noqa: F401  (register the op definitions)
from .layout import ATTRIBUTE_IRDL
from .op_definition import REGISTRY


# MLIR's bindings import `mlir.dialects.<name>` for every op and attribute of a dialect they
# hand to Python, and retry a failed import each time: for `tile` (IRDL, no Python module)
# that searched sys.path some 14000 times compiling a small kernel. An empty module ends it.
sys.modules.setdefault("mlir.dialects.tile", types.ModuleType("mlir.dialects.tile"))


def irdl_source() -> str:
    ops = "\n".join(d.irdl() for d in REGISTRY.values())
    return f"irdl.dialect @tile {{\n{ATTRIBUTE_IRDL}\n{ops}\n}}\n"


def load(ctx: ir.Context) -> None:
    with ctx, ir.Location.unknown():
        irdl.load_dialects(ir.Module.parse(irdl_source()))


def make_context() -> ir.Context:
    """A fresh context with every upstream dialect and the tile dialect loaded."""
    ctx = ir.Context()
    # No thread pool: a kernel is one function, so MLIR has nothing to run in parallel, and
    # LLVM's pool threads deadlocked autotune's forked compile workers (a context collected
    # in the child joined pool threads that never woke).
    ctx.enable_multithreading(False)
    load(ctx)
    return ctx
