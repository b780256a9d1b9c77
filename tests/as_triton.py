"""A tile kernel's own source run as a Triton kernel by Triton's interpreter (CPU), renamed
back (`benchmarks/library_kernels_on_device.triton_twin`: `tile.` -> `tl.`): the reference a
test compares the tile kernel against, from one source, as a Triton user's kernel would be
ported. In a process of its own: TRITON_INTERPRET is read when triton.language is imported.
`triton_sm90`: such a twin compiled by Triton for sm_90a, as its JIT would on an H100.
`to_triton`: a whole port of a Triton tutorial (examples/triton_tutorials/), host code too, renamed back."""

import ast
import os
import re
import subprocess
import sys
import tempfile

# The rename, reversed: (pattern, Triton spelling) on the host, then `tile.` -> `tl.` everywhere else.
HOST_NAMES = [
    (r"^import tile$", "import triton\nimport triton.language as tl"),
    (r"^from tile\.extra import", "from triton.language.extra import"),
    (r"\btile\.(jit|autotune|Config|cdiv|next_power_of_2)\b", r"triton.\1"),
    (r"^from tile import TensorDescriptor$", "from triton.tools.tensor_descriptor import TensorDescriptor"),
]


def _kernel_lines(source: str) -> set[int]:
    """Lines of the functions decorated with @tile.jit (their bodies are kernel code)."""
    lines = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and any("tile.jit" in ast.unparse(d) for d in node.decorator_list):
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def to_triton(source: str) -> str:
    """The port with the rename reversed: Triton code."""
    kernel = _kernel_lines(source)
    out = []
    for i, line in enumerate(source.splitlines(), 1):
        if i not in kernel:
            for pattern, spelling in HOST_NAMES:
                line = re.sub(pattern, spelling, line)
        out.append(re.sub(r"\btile\.", "tl.", line))
    return "\n".join(out) + "\n"


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


def triton_sm90(fn, args, meta: dict, num_stages: int, capability: int = 90) -> dict:
    """Triton's sm_90a compile of JIT function `fn` at `args` (tensors, meta ones too, and
    scalars, None for an optional pointer) and `meta` (constexprs and num_warps), specialized as
    its JIT would (ints equal to 1 and None constants, pointers and ints divisible by 16 marked so): its PTX and ptxas's
    registers and spill bytes. `capability` 80: its sm_80 compile instead."""
    import torch
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    meta = dict(meta)
    num_warps = meta.pop("num_warps")
    sig, constexprs, attrs = {}, {}, {}
    for i, (name, a) in enumerate(zip(fn.arg_names, args)):
        if isinstance(a, torch.Tensor):
            sig[name] = "*" + {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32", torch.int64: "i64",
                               torch.int32: "i32", torch.int8: "i8", torch.uint8: "u8", torch.bool: "i1"}[a.dtype]
            attrs[(i,)] = [["tt.divisibility", 16]]
        elif a is None:  # (an optional pointer left out: a constexpr None, as its JIT passes it)
            sig[name], constexprs[(i,)] = "constexpr", None
        elif isinstance(a, float):
            sig[name] = "fp32"
        elif a == 1:
            sig[name], constexprs[(i,)] = "constexpr", 1
        else:
            sig[name] = "i32"
            if a % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
    for name, value in meta.items():
        sig[name], constexprs[(fn.arg_names.index(name),)] = "constexpr", value
    compiled = triton.compile(ASTSource(fn, sig, constexprs=constexprs, attrs=attrs), target=GPUTarget("cuda", capability, 32),
                              options={"num_warps": num_warps, "num_stages": num_stages})
    ptx = compiled.asm["ptx"]
    ptxas = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas-blackwell")
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "k.ptx"), "w") as f:
            f.write(ptx)
        log = subprocess.run([ptxas, "-v", "--gpu-name", "sm_90a" if capability == 90 else f"sm_{capability}", f.name, "-o", os.path.join(tmp, "k.cubin")],
                             capture_output=True, text=True, check=True).stderr
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    return {"ptx": ptx, "registers": int(re.search(r"Used (\d+) registers", log).group(1)),
            "spill_stores": int(spills.group(1)), "spill_loads": int(spills.group(2)), "shared": compiled.metadata.shared}


def module_twin(module_name: str, names: list):
    """The kernels `names` of test module `module_name` renamed to Triton, for this process's
    Triton to compile (not its interpreter): the twins `triton_sm90` compiles beside tile's."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
    import triton.language.extra.cuda.libdevice  # noqa: F401  (both spellings, as Triton users' modules import it)
    import triton.language.extra.libdevice  # noqa: F401
    from library_kernels_on_device import triton_twin

    return triton_twin(sys.modules[module_name], names)


def meta(*shape, dtype=None):
    """A tensor of `shape` on the meta device (bf16 by default): a launch's specialization, no data."""
    import torch

    return torch.empty(shape, dtype=dtype or torch.bfloat16, device="meta")


def memory_forms(ptx: str) -> set:
    """The distinct global load and store instructions of a PTX text (`ld.global.v4.b32`, ...)."""
    return set(re.findall(r"\b(?:ld|st)\.global[\w.:]*", ptx))
