"""Triton's tutorials 01-11 ported by rename (examples/triton_tutorials/): (a) each port's
main() runs on the CPU against torch; (b) each port's kernels compile for sm_90a at the
tutorial's benchmark configuration, without spills where none are expected; (c) each port
is Triton code by rename: the rename reversed (tile. -> tl., @tile.jit -> @triton.jit, ...),
its main() runs under Triton's interpreter (TRITON_INTERPRET=1, on the CPU) and passes the
same checks. A port that cannot run yet is a strict xfail naming the missing feature, so
the test fails once the feature lands and the mark must go."""

import ast
import importlib
import os
import re
import subprocess
import sys

import pytest
import torch

import tile
from as_triton import to_triton

HERE = os.path.dirname(os.path.abspath(__file__))
PORTS = os.path.join(os.path.dirname(HERE), "examples", "triton_tutorials")
sys.path.insert(0, PORTS)

# What a port needs that tile does not have yet (a strict xfail names it; remove it once it lands).
# port[:function] -> what it needs to run on the CPU (None: it runs); a port's main() runs every check
CPU_BLOCKERS = {
    "t01_vector_add": None,
    "t02_fused_softmax": None,
    "t03_matrix_multiplication:check_fp16": None,
    "t03_matrix_multiplication": None,
    "t04_low_memory_dropout": None,
    "t05_layer_norm": None,
    "t06_fused_attention:check_backward_only": None,
    "t06_fused_attention": None,
    "t07_extern_functions": None,
    "t08_grouped_gemm:check_pointers": None,
    "t08_grouped_gemm": None,
    "t09_persistent_matmul:check_matmul": None,
    "t09_persistent_matmul": None,
    "t10_block_scaled_matmul": None,
    "t11_programmatic_dependent_launch": None,
}
# port[:function] -> what its benchmark_launches() (or that function's) needs to compile for sm_90a
GPU_BLOCKERS = {
    "t01_vector_add": None,
    "t02_fused_softmax": None,
    "t03_matrix_multiplication:benchmark_launches_fp16": None,
    "t03_matrix_multiplication": None,
    "t04_low_memory_dropout": None,
    "t05_layer_norm": None,
    "t06_fused_attention": None,
    "t07_extern_functions": None,
    "t08_grouped_gemm:benchmark_launches_pointers": None,
    "t08_grouped_gemm": None,
    "t09_persistent_matmul:benchmark_launches_matmul": None,
    "t09_persistent_matmul": None,
    "t10_block_scaled_matmul": None,
    "t11_programmatic_dependent_launch": None,
}
# kernels whose benchmark configuration ptxas may spill on sm_90a, and why
SPILLS_EXPECTED = {
    # dK and dV, two 128x128 f32 accumulators at HEAD_DIM=128, are 256 registers a thread at 4 warps: Triton 3.9's
    # own build of this kernel spills too (test_tutorial_06_backward_spills_no_more_than_triton holds tile to it)
    "_attn_bwd": "256 registers a thread of accumulators",
    # its 128x256 f32 accumulator is 256 registers a thread at 4 warps; Triton 3.9's own build (sm_90a, ptxas
    # 13.4) spills too, 2628 bytes of stores (tile: about 2900; the emulated dot_scaled fits the shared memory by
    # taking A from registers and staging B in two chunks of N: tests/test_dot_scaled_registers.py)
    "block_scaled_matmul_kernel": "256 registers a thread of accumulator",
}
# ports that Triton's interpreter cannot run, and why (None: it runs)
INTERPRETER_BLOCKERS = {
    "t01_vector_add": None,
    "t02_fused_softmax": None,
    "t03_matrix_multiplication": None,
    "t04_low_memory_dropout": None,
    "t05_layer_norm": None,
    "t06_fused_attention": None,
    # Triton 3.9's interpreter leaves tl.extra's functions as stubs (libdevice.asin gives None, gdc_wait raises)
    "t07_extern_functions": "Triton's interpreter does not run tl.extra.libdevice",
    "t08_grouped_gemm": None,
    "t09_persistent_matmul": None,
    "t10_block_scaled_matmul": None,
    "t11_programmatic_dependent_launch": "Triton's interpreter does not run tl.extra.cuda.gdc_wait",
}


def _marked(table):
    return [pytest.param(name, marks=pytest.mark.xfail(reason=why, strict=True)) if why else name
            for name, why in table.items()]


@pytest.mark.parametrize("name", _marked(CPU_BLOCKERS))
def test_port_runs_on_the_cpu(name):
    module, _, function = name.partition(":")
    getattr(importlib.import_module(module), function or "main")()


@pytest.mark.parametrize("name", _marked(GPU_BLOCKERS))
def test_port_compiles_for_sm90a(name, gpu_target):
    gpu_target("sm_90a")
    module, _, function = name.partition(":")
    launches = getattr(importlib.import_module(module), function or "benchmark_launches")()
    assert launches
    for kernel, args, meta in launches:
        if isinstance(kernel, tile.Autotuner):
            kernel = kernel.kernel
        launcher = kernel.compile(*args, **meta)
        info = launcher.metadata["ptxas"]
        if kernel.name not in SPILLS_EXPECTED:
            assert info["stack_frame"] == info["spill_stores"] == info["spill_loads"] == 0, (kernel.name, info)


@tile.jit
def _epilogue_counter(out, num_tiles, NUM_SMS: tile.constexpr):
    """Tutorial 09's persistent loops: a scalar the loop steps (tile_id_c += NUM_SMS), read after
    the step in the same iteration; each program stores it where the loop's own tile_id says."""
    start_pid = tile.program_id(0)
    tile_id_c = start_pid - NUM_SMS
    for tile_id in range(start_pid, num_tiles, NUM_SMS):
        tile_id_c += NUM_SMS
        tile.store(out + tile_id, tile_id_c)


def test_tutorial_09_epilogue_counter(gpu_target):
    """tile-induction-offsets once left the stepped value reading the loop's first value (every
    program stored its start_pid), a silent wrong answer. For sm_90a, its scalar store in a loop
    was an internal error in tile-tma-stores (which looks for stored accumulator tiles)."""
    out = torch.full((21, ), -1, dtype=torch.int32)
    _epilogue_counter[(4, )](out, 21, NUM_SMS=4)
    assert out.tolist() == list(range(21))
    gpu_target("sm_90a")
    ptx = _epilogue_counter.compile(torch.empty(4096, dtype=torch.int32, device="meta"), 4096, NUM_SMS=132).asm["ptx"]
    assert "st.global.b32" in ptx


def test_reverse_rename():
    source = "import tile\n\n@tile.jit\ndef k(x, N: tile.constexpr):\n    n = tile.cdiv(N, 2)\n\nk[(tile.cdiv(8, 2),)](1)\n"
    assert to_triton(source) == ("import triton\nimport triton.language as tl\n\n@triton.jit\n"
                                 "def k(x, N: tl.constexpr):\n    n = tl.cdiv(N, 2)\n\nk[(triton.cdiv(8, 2),)](1)\n")


def _tl_names(source: str) -> set[str]:
    """The `tl.X` names a Triton source uses (the first attribute after tl)."""
    return {node.attr for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "tl"}


@pytest.mark.parametrize("name", list(INTERPRETER_BLOCKERS))
def test_port_names_only_triton_language(name):
    """Every `tile.X` a port's kernels use is Triton's `tl.X`, on paths main() does not run too
    (the fp8 and Blackwell branches): the rename reversed leaves no tile-only name."""
    tl = pytest.importorskip("triton.language")
    with open(os.path.join(PORTS, name + ".py")) as f:
        used = _tl_names(to_triton(f.read()))
    assert used and not [n for n in used if not hasattr(tl, n)]


INTERPRET = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location(sys.argv[2], sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules[sys.argv[2]] = module
spec.loader.exec_module(module)
module.main()
print("interpreted")
"""


@pytest.mark.parametrize("name", _marked(INTERPRETER_BLOCKERS))
def test_port_is_triton_by_rename(name, tmp_path):
    pytest.importorskip("triton")
    with open(os.path.join(PORTS, name + ".py")) as f:
        source = f.read()
    path = tmp_path / (name + "_triton.py")
    path.write_text(to_triton(source))
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    run = subprocess.run([sys.executable, "-c", INTERPRET, str(path), name + "_triton"], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and "interpreted" in run.stdout, run.stderr[-3000:]


def _twin(name: str, tmp_path):
    """The port with the rename reversed, imported as a Triton module."""
    import importlib.util

    with open(os.path.join(PORTS, name + ".py")) as f:
        source = to_triton(f.read())
    path = tmp_path / (name + "_triton.py")
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name + "_triton", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("causal", [False, True])
def test_tutorial_06_backward_spills_no_more_than_triton(causal, gpu_target, tmp_path):
    """The backward's qT (dK, dV) and kT, vT (dQ) are unmasked loads of column-major blocks
    through 64-bit pointers advanced each step: copied transposed by tile-pipeline, qT read in
    place by both its dots. They went element by element (scalar 16-bit loads), and the kernel
    spilled 2764 bytes (causal 4432) where Triton's own compile of it spills 2004 (2196)."""
    pytest.importorskip("triton")
    from as_triton import triton_sm90

    gpu_target("sm_90a")
    port = importlib.import_module("t06_fused_attention")
    (kernel, args, meta), = [x for x in port.benchmark_launches(causal=(causal,)) if x[0] is port._attn_bwd]
    launcher = kernel.compile(*args, **meta)
    assert not re.search(r"ld\.global(\.nc)?\.b16", launcher.asm["ptx"])
    meta = dict(meta)
    stages = meta.pop("num_stages")
    triton = triton_sm90(_twin("t06_fused_attention", tmp_path)._attn_bwd, args, meta, num_stages=stages)
    assert launcher.metadata["ptxas"]["spill_stores"] <= triton["spill_stores"], (launcher.metadata["ptxas"], triton)


def test_tutorial_06_forward_row_statistics_in_registers(gpu_target):
    """The running max and sum (m_i, l_i, stored after the loop as M) take the accumulator's
    rows layout: no exchange through shared memory in the K loop. A store of that shape
    once left it in a blocked layout, converted twice a reduction (4 barriers a step)."""
    gpu_target("sm_90a")
    port = importlib.import_module("t06_fused_attention")
    (kernel, args, meta), = [x for x in port.benchmark_launches(causal=(False,)) if x[0] is port._attn_fwd]
    ptx = kernel.kernel.compile(*args, **meta).asm["ptx"]
    first = ptx.index("wgmma.mma_async")
    step = ptx[first:ptx.rindex("wgmma.mma_async")]
    assert "st.shared" not in step and "ld.shared" not in step
