"""Running a pass list on a module: the one piece of code that the compiler's stages and
`tile-opt` share, with per-pass IR dumps and the tile verifier after it.

Dumps come from MLIR's own IR printer (`PassManager.enable_ir_printing`), so Python and
upstream passes are printed alike, with the pass's own name in each header, and by default
only after a pass that changed the IR (MLIR compares an operation fingerprint taken before
the pass). The printer writes one file per pass into a tree of folders by nesting
(`tree_printing_dir_path`); each nested pipeline (`gpu.module(...)`) runs in a pass manager
of its own, so that reading the files back in folder order is the order they ran in.
"""

from __future__ import annotations

import os
import re
import tempfile

from mlir import ir

from .registry import pass_manager

# `N_pass.mlir`; inside a nested pipeline `PARENT_N_pass.mlir`
_FILE = re.compile(r"((?:\d+_)+)(\D.*)\.mlir$")


def segments(elements: list[str]) -> list[list[str]]:
    """Consecutive top-level passes together; each nested pipeline on its own."""
    out: list[list[str]] = []
    for element in elements:
        nested = "(" in element.split("{")[0]
        if nested or not out or _is_nested(out[-1]):
            out.append([element])
        else:
            out[-1].append(element)
    return out


def _is_nested(segment: list[str]) -> bool:
    return len(segment) == 1 and "(" in segment[0].split("{")[0]


def _read_tree(folder: str) -> list[tuple[str, str]]:
    """(pass argument, text) of every file the printer wrote, in the order it wrote them."""
    found = []
    for root, _, files in os.walk(folder):
        depth = os.path.relpath(root, folder)
        for name in files:
            m = _FILE.match(name)
            if m:
                order = tuple(int(n) for n in m.group(1).rstrip("_").split("_"))
                found.append(((depth, order), m.group(2), os.path.join(root, name)))
    out = []
    for _, label, path in sorted(found):
        with open(path, encoding="utf-8") as f:
            out.append((label, f.read()))
    return out


def run_pipeline(module: ir.Module, elements: list[str], ctx: ir.Context | None = None, *,
                 dumps: list[tuple[str, str]] | None = None, only_changed: bool = True, debug_info: bool = True,
                 generic: bool = False, verify: bool = True) -> None:
    """Run the pipeline `elements` on `module`. With `dumps` (a list), append (pass name, IR)
    after each pass (with `only_changed`, each pass that changed the IR), printed with
    locations (`debug_info`: the kernel's Python file:line:col).
    Then, with `verify`, the tile ops' own verifiers (`tile-verify`), which IRDL's cannot run:
    a pass that breaks a tile op's invariants fails here, at the op's location, raising the
    same `ir.MLIRError` as a failing pass."""
    for segment in segments(elements):
        pm = pass_manager(segment, ctx)
        if dumps is None:
            pm.run(module.operation)
            continue
        with tempfile.TemporaryDirectory(prefix="tile-dump-") as folder:
            pm.enable_ir_printing(print_after_all=True, print_after_change=only_changed,
                                  print_module_scope=True, enable_debug_info=debug_info,
                                  print_generic_op_form=generic, tree_printing_dir_path=folder)
            try:
                pm.run(module.operation)
            finally:
                dumps.extend(_read_tree(folder))
    if verify:
        pass_manager(["tile-verify"], ctx).run(module.operation)
