"""Registers Python passes by kebab-case name, and builds pass managers from
textual pipelines that mix them with upstream passes.

MLIR's textual pipeline parser only knows passes registered in C++, so a
pipeline string is split into its top-level elements here: a registered tile
pass is added as a Python callable, anything else goes to MLIR as text.

    @register_pass("tile-fuse")
    @dataclass
    class TileFuse:
        max_ops: int = 64           # typed options: tile-fuse{max-ops=32}
        def run(self, module): ...
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re

from mlir import ir
from mlir.passmanager import PassManager

from ..frontend.errors import TileError, interrupt_of
from .plugins import PASSES, load_plugins, register_pass  # noqa: F401  (register_pass: the API of pass files)

_PASS_PACKAGES = ("tile.passes", "tile.codegen")


def load_all() -> dict[str, type]:
    """Import every module of the pass packages, and the plugins (`plugins.load_plugins`),
    so that their decorators run."""
    for package in _PASS_PACKAGES:
        pkg = importlib.import_module(package)
        for info in pkgutil.walk_packages(pkg.__path__, f"{package}."):  # (codegen's subpackages too)
            importlib.import_module(info.name)
    load_plugins()
    return PASSES


def split_top_level(text: str, sep: str = ",") -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def parse_options(cls, text: str):
    """`a=1 b-c=x` -> an instance of the pass's dataclass, with typed fields."""
    fields = {f.name: f for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}
    kwargs = {}
    for item in text.split():
        key, eq, value = item.partition("=")
        field = fields.get(key.replace("-", "_"))
        if field is None:
            raise TileError(f"pass '{cls.pass_name}' has no option '{key}'")
        ftype = field.type if isinstance(field.type, type) else {"int": int, "bool": bool, "str": str, "float": float}[field.type]
        kwargs[field.name] = _option_value(cls.pass_name, key, ftype, value if eq else None)
    return cls(**kwargs)


def _option_value(pass_name: str, key: str, ftype: type, value: str | None):
    """An option's typed value, as mlir-opt reads it: a bare bool option is true; anything
    that is not of the option's type is an error (`tma=yes` was silently false)."""
    if ftype is bool:
        words = {None: True, "1": True, "true": True, "0": False, "false": False}
        choice = words.get(value if value is None else value.lower())
        if choice is not None:
            return choice
    elif value is not None:
        try:
            return ftype(value)
        except ValueError:
            pass
    raise TileError(f"pass '{pass_name}' option '{key}' takes {'a' if ftype is bool else 'an'} {ftype.__name__}, "
                    f"got {'nothing' if value is None else repr(value)}")


def instantiate(element: str):
    """A registered pass instance for `name{options}`, or None if it is not a tile pass."""
    name, _, rest = element.partition("{")
    cls = load_all().get(name.strip())
    if cls is None:
        return None
    return parse_options(cls, rest.rstrip("}"))


def _callable(instance):
    def run(op, pass_):
        try:
            # Builders and verifiers need an ambient context, as in any pass.
            with op.context, op.location:
                instance.run(op)
        except TileError as e:
            loc = getattr(e, "location", None) or op.location
            loc.emit_error(str(e))
            pass_.signal_pass_failure()
        except Exception as e:  # a bug in the pass, or IR it does not expect: raised as itself, saying where
            interrupt = interrupt_of(e)
            if interrupt is not None:
                raise interrupt from e
            e.add_note(f"in pass '{instance.pass_name}'")
            raise

    return run


def pipeline_elements(pipeline: str) -> list[str]:
    """`builtin.module(a, b{x=1})` or `a,b` -> ["a", "b{x=1}"]."""
    text = pipeline.strip()
    if text.startswith("builtin.module(") and text.endswith(")"):
        text = text[len("builtin.module(") : -1]
    return split_top_level(text)


def pass_manager(pipeline: str | list[str], ctx: ir.Context | None = None) -> PassManager:
    elements = pipeline if isinstance(pipeline, list) else pipeline_elements(pipeline)
    pm = PassManager("builtin.module", context=ctx)
    for element in elements:
        instance = instantiate(element)
        if instance is None:
            try:
                pm.add(element)
            except ValueError as e:
                nested = [n for n in re.findall(r"[\w.-]+", element) if n in PASSES]
                if nested:  # MLIR's parser knows no Python pass: it said '<name>' is not registered
                    raise TileError(f"tile pass '{nested[0]}' nested in '{element}': tile passes run on the whole "
                                    f"module, at the top level of builtin.module(...)") from None
                said = str(e).splitlines()[0].split("error: ", 1)[-1]
                raise TileError(f"{said} (a pass of your own registers when its module is imported: import it, or "
                                "name it in TILE_PASS_PLUGINS or tile-opt --load-pass-plugin)") from None
        else:
            pm.add(_callable(instance), name=instance.pass_name, argument=instance.pass_name)
    return pm
