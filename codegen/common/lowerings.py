"""The lowerings of ops, by op name and target: grep an op's name to find how each target
lowers it.

    @lowering("tile.load", target="gpu")
    def op_tile_load(t, op): ...

Each target's pass looks its ops up here (`lowerings(target)`):

- "cpu": `convert-tile-to-linalg` (`cpu/`; the GPU's `codegen=linalg` runs it too): tile ops
  on tensors -> linalg/tensor/scf. The lowering gets the op, under an insertion point and
  location at it, and returns the value that replaces its result (None for none); the pass
  erases the op.
- "gpu": `convert-tile-to-gpu` (`gpu/`): each thread's registers. The lowering gets the
  `Translator` and the op, and maps the op's results (`t.map`); control flow and arith
  constants are lowered the same way. Other ops go to the translator's elementwise path.

`lowerings(target)` first imports every module of `common/` and of the target's package,
so a lowering in a new file registers by being there.
"""

from __future__ import annotations

import importlib
import pkgutil

TARGETS = ("cpu", "gpu")
_LOWERINGS: dict[str, dict] = {t: {} for t in TARGETS}
_loaded: set[str] = set()


def lowering(*names: str, target: str):
    """Register the decorated function as `target`'s lowering of the ops `names`."""
    if target not in TARGETS:
        raise ValueError(f"unknown lowering target '{target}': one of {', '.join(TARGETS)}")

    def wrap(fn):
        table = _LOWERINGS[target]
        for name in names:
            old = table.get(name)
            # (a module imported again registers the same function: allowed)
            if old is not None and (old.__module__, old.__qualname__) != (fn.__module__, fn.__qualname__):
                raise ValueError(f"two {target} lowerings of {name}: {old.__module__}.{old.__qualname__} and "
                                 f"{fn.__module__}.{fn.__qualname__}")
            table[name] = fn
        return fn

    return wrap


def lowerings(target: str) -> dict:
    """op name -> `target`'s lowering, every module that may hold one imported."""
    if target not in _loaded:
        codegen = __name__.rsplit(".", 2)[0]
        for package in (f"{codegen}.common", f"{codegen}.{target}"):
            for info in pkgutil.walk_packages(importlib.import_module(package).__path__, f"{package}."):
                importlib.import_module(info.name)
        _loaded.add(target)
    return _LOWERINGS[target]
