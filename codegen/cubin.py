"""PTX -> cubin with the ptxas shipped in the triton wheel (CUDA 12.9).

ptxas runs with -v; its resource report (registers, stack frame, spills) is
kept, so that builds can be checked for local memory without a GPU.
"""

from __future__ import annotations

import functools
import os
import subprocess
import tempfile

from ..frontend.errors import CompilationError


def ptxas_path() -> str:
    import triton

    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")


@functools.lru_cache(maxsize=64)
def assemble(ptx: str, target: str) -> tuple[bytes, str]:
    """(cubin, ptxas -v report) for one PTX text."""
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        r = subprocess.run([ptxas_path(), f"-arch={target}", "-O3", "-v", src, "-o", out], capture_output=True, text=True)
        if r.returncode != 0:
            raise CompilationError(f"ptxas failed for {target}:\n{r.stderr.strip()}")
        with open(out, "rb") as f:
            return f.read(), r.stderr


def ptx_to_cubin(ptx: str, target: str) -> bytes:
    return assemble(ptx, target)[0]
