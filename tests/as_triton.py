"""A tile kernel's own source run as a Triton kernel by Triton's interpreter (CPU), spelled
back (`@tile.jit` -> `@triton.jit`, `tile.` -> `tl.`): the reference a test compares the tile
kernel against, from one source, as a Triton user's kernel would be ported. In a process of
its own: TRITON_INTERPRET is read when triton.language is imported."""

import os
import subprocess
import sys

PRELUDE = '''
import importlib, inspect, os, sys, tempfile
import numpy as np, torch, triton, triton.language as tl
sys.path.insert(0, sys.argv[1])


def as_triton(kernel):
    """The Triton kernel of a tile kernel's source."""
    name = kernel.fn.__name__
    src = inspect.getsource(kernel.fn).replace("@tile.jit", "@triton.jit").replace("tile.", "tl.")
    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, f"as_triton_{name}.py"), "w") as f:
        f.write("import triton\\nimport triton.language as tl\\n\\n\\n" + src)
    sys.path.insert(0, folder)
    return getattr(importlib.import_module(f"as_triton_{name}"), name)
'''


def run_in_triton(script: str) -> subprocess.CompletedProcess:
    """Run PRELUDE + script (which prints "same" when the two agree) under TRITON_INTERPRET=1."""
    return subprocess.run([sys.executable, "-c", PRELUDE + script, os.path.dirname(__file__)],
                          env={**os.environ, "TRITON_INTERPRET": "1"}, capture_output=True, text=True, timeout=300)
