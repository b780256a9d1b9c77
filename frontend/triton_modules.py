"""`tile.core`, `tile.standard` and `tile.random`: the language's names under the modules of
Triton's that kernels spell (`tl.core.tensor`, `tl.standard.sum`, `tl.random.rand`), each
holding the names its Triton module gives `triton.language`. A name there that tile has not
is an AttributeError (in a kernel, a CompilationError at its line), one of Triton's that tile
lacks saying so."""

from __future__ import annotations

import sys
import types

from .type_names import missing

# Triton's names from triton/language/standard.py and random.py (tests/test_triton_type_names2.py checks them)
STANDARD = ("argmax", "argmin", "bitonic_merge", "cdiv", "cumprod", "cumsum", "flip", "interleave", "max", "min", "ravel",
            "reduce_or", "sigmoid", "softmax", "sort", "squeeze", "sum", "swizzle2d", "topk", "unsqueeze", "xor_sum",
            "zeros", "zeros_like")
RANDOM = ("pair_uniform_to_normal", "philox", "philox_impl", "rand", "rand4x", "randint", "randint4x", "randn", "randn4x",
          "uint_to_uniform_float")


def install(package: dict) -> None:
    """Add the three modules to the package whose namespace is `package` (importable as such)."""
    pkg = package["__name__"]
    language = {n: v for n, v in package.items() if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    parts = {"standard": STANDARD, "random": RANDOM,
             "core": [n for n in language if n not in STANDARD and n not in RANDOM]}
    for name, names in parts.items():
        module = types.ModuleType(f"{pkg}.{name}", f"Triton's triton.language.{name}: {pkg}'s names from it.")
        module.__dict__.update({n: language[n] for n in names if n in language})
        module.__getattr__ = lambda attr, where=module.__name__: _raise(missing(where, attr))
        sys.modules[module.__name__] = package[name] = module


def _raise(error: Exception):
    raise error
