"""A tile kernel's own source run as a Triton kernel by Triton's interpreter (CPU), renamed
back (`benchmarks/library_kernels_on_device.triton_twin`: `tile.` -> `tl.`): the reference a
test compares the tile kernel against, from one source, as a Triton user's kernel would be
ported. In a process of its own: TRITON_INTERPRET is read when triton.language is imported."""

import os
import subprocess
import sys

PRELUDE = '''
import os, sys
import numpy as np, torch, triton, triton.language as tl
sys.path[:0] = [sys.argv[1], os.path.join(os.path.dirname(sys.argv[1]), "benchmarks")]
from library_kernels_on_device import triton_twin


def as_triton(kernel):
    """The Triton kernel of a tile kernel's source."""
    name = kernel.fn.__name__
    return getattr(triton_twin(sys.modules[kernel.fn.__module__], [name]), name)
'''


def run_in_triton(script: str) -> subprocess.CompletedProcess:
    """Run PRELUDE + script (which prints "same" when the two agree) under TRITON_INTERPRET=1."""
    return subprocess.run([sys.executable, "-c", PRELUDE + script, os.path.dirname(__file__)],
                          env={**os.environ, "TRITON_INTERPRET": "1"}, capture_output=True, text=True, timeout=300)
