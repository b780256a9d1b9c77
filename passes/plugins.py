"""The names of registered passes, and loading passes from outside the package.

`@register_pass("name")` on a dataclass registers it (its fields are the
pass's options); importing a module is what registers its passes. Passes
outside the package come from:

- the Python entry point group `tile.passes` (each entry point names a module
  of an installed distribution, imported on the first compilation),
- `TILE_PASS_PLUGINS=module,path/to/file.py,...` (read on every compilation),
- `load_plugin(module_or_path)`, which `tile-opt --load-pass-plugin=` calls,
- or plainly importing the module that defines them.

No MLIR here: the runtime keys its caches by the source of the out-of-tree
passes a pipeline runs (`fingerprint`), and a host with only torch imports it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import marshal
import os
import sys

from ..frontend.errors import TileError

PASSES: dict[str, type] = {}
PACKAGE = __name__.split(".")[0]  # `tile`: a pass whose module is under it is in-tree
listeners: list = []  # called with no argument when an out-of-tree pass is (re)registered


def register_pass(name: str):
    def wrap(cls):
        known = PASSES.get(name)
        # Another class of that name would win or lose by import order, silently (a reload is the same class).
        if known is not None and (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
            raise TileError(f"pass '{name}' is registered twice: by {known.__module__}.{known.__qualname__} and "
                            f"{cls.__module__}.{cls.__qualname__}")
        cls.pass_name = name
        if not in_tree(cls):
            # Read now, as the module is imported: the source that runs, not a later edit of the file.
            cls.pass_fingerprint = _source_digest(cls)
        PASSES[name] = cls
        if not in_tree(cls):
            for listener in listeners:
                listener()
        return cls

    return wrap


def in_tree(cls) -> bool:
    return cls.__module__ == PACKAGE or cls.__module__.startswith(PACKAGE + ".")


def fingerprint(name: str) -> str | None:
    """A digest of the source of the out-of-tree pass registered as `name`, or None for a
    pass of the package (the compiler's digest covers it) or one not registered (upstream)."""
    cls = PASSES.get(name)
    return None if cls is None or in_tree(cls) else getattr(cls, "pass_fingerprint", None) or _source_digest(cls)


def _source_digest(cls) -> str:
    """The text of the file that defines the pass's `run` (its module: helpers included),
    or, with no file (code made by exec), the bytecode of the class's functions."""
    h = hashlib.sha256(f"{cls.__module__}.{cls.__qualname__}".encode())
    code = getattr(getattr(cls, "run", None), "__code__", None)
    path = code.co_filename if code is not None else None
    if path and os.path.isfile(path):
        with open(path, "rb") as f:
            h.update(f.read())
    else:
        for value in vars(cls).values():
            if hasattr(value, "__code__"):
                h.update(marshal.dumps(value.__code__))
    return h.hexdigest()[:16]


def load_plugin(spec: str):
    """Import a module by name, or a `.py` file by path (as the module named by its stem),
    so that its `@register_pass` classes register; returns the module."""
    spec = spec.strip()
    if not spec.endswith(".py"):
        try:
            return importlib.import_module(spec)
        except ImportError as e:
            raise TileError(f"cannot load the pass plugin '{spec}': {e}") from None
    path = os.path.abspath(spec)
    if not os.path.isfile(path):
        raise TileError(f"cannot load the pass plugin '{spec}': no such file")
    name = os.path.splitext(os.path.basename(path))[0]
    loaded = sys.modules.get(name)
    if loaded is not None:
        if os.path.abspath(getattr(loaded, "__file__", "") or "") == path:
            return loaded  # (imported already, by the user or an earlier load)
        raise TileError(f"cannot load the pass plugin '{spec}' as module '{name}': a module of that name is imported "
                        f"already (from {getattr(loaded, '__file__', None) or 'no file'}); rename the file")
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


_entry_points_loaded = False
_env_loaded: set[str] = set()


def load_plugins():
    """Import the `tile.passes` entry points (once) and the TILE_PASS_PLUGINS modules not
    yet imported."""
    global _entry_points_loaded
    if not _entry_points_loaded:
        _entry_points_loaded = True
        from importlib.metadata import entry_points

        for ep in entry_points(group="tile.passes"):
            try:
                ep.load()
            except Exception as e:
                raise TileError(f"cannot load the pass plugin '{ep.name} = {ep.value}' (entry point group "
                                f"tile.passes): {type(e).__name__}: {e}") from None
    for spec in os.environ.get("TILE_PASS_PLUGINS", "").split(","):
        if spec.strip() and spec not in _env_loaded:
            load_plugin(spec)
            _env_loaded.add(spec)
