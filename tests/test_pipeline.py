"""The stages end to end without a GPU: dumps, ahead-of-time sm_90/sm_80
builds, restarting from a stage file, and a runtime that needs no compiler."""

import importlib
import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch

import tile
from tile.codegen.compiler import compile_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _vector_add():
    import vector_add

    return vector_add.add_kernel


def _args(n=1000):
    return torch.rand(n), torch.rand(n), torch.empty(n), n


def test_dump_ir_writes_numbered_pass_and_stage_files(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE_DUMP_IR", str(tmp_path))
    _vector_add().compile(*_args(), BLOCK=1024)
    folders = [d for d in os.listdir(tmp_path) if d.startswith("add_kernel-")]
    assert len(folders) == 1
    files = sorted(os.listdir(tmp_path / folders[0]))
    assert len(files) >= 8
    assert files[0] == "01-stage-tile.mlir"
    assert any(f.endswith("-tile-fuse.mlir") for f in files)
    assert any(f.endswith("-stage-llvm.mlir") for f in files)
    numbers = [int(f.split("-")[0]) for f in files]
    assert numbers == list(range(1, len(files) + 1))


@pytest.mark.parametrize("target", ["sm_90", "sm_80"])
def test_ahead_of_time_gpu_build(target, monkeypatch):
    monkeypatch.setenv("TILE_TARGET", target)
    launcher = _vector_add().compile(*_args(1024), BLOCK=1024)
    assert launcher.asm["ptx"].count(".entry") == 1
    assert f".target {target}" in launcher.asm["ptx"]
    assert launcher.asm["cubin"][:4] == b"\x7fELF"
    assert "gpu.func @add_kernel" in launcher.asm["gpu"]
    # 16-byte vector accesses: n = 1024 and the tensors are aligned, so runs of 4 f32 are proven aligned.
    # The tensors overlap nothing (noalias), but each program streams its own elements: no `.nc`.
    assert launcher.metadata["options"]["noalias"] is True
    assert "ld.global.v4.b32" in launcher.asm["ptx"] and "st.global.v4.b32" in launcher.asm["ptx"]
    assert "ld.global.nc" not in launcher.asm["ptx"]
    # The launch ABI was read back from the compiled signature: 3 memrefs of rank 1 and one i32.
    assert [a["type"] for a in launcher.metadata["abi"]] == ["ptr", "ptr", "i64", "i64", "i64"] * 3 + ["i32"]


def test_launch_without_gpu_says_it_compiled(monkeypatch):
    monkeypatch.setenv("TILE_TARGET", "sm_90")
    if torch.cuda.is_available():
        pytest.skip("this host has a GPU")
    with pytest.raises(tile.DeviceUnavailableError, match="compiled for sm_90 into the cache"):
        _vector_add()[(1,)](*_args(), BLOCK=1024)


def test_restart_from_a_stage_file(monkeypatch):
    monkeypatch.setenv("TILE_TARGET", "sm_90")
    launcher = _vector_add().compile(*_args(), BLOCK=1024)
    path = os.path.join(launcher.metadata["cache_path"], "stage-tile-opt.mlir")
    options = {k: launcher.metadata["options"][k] for k in ("divisible_args", "noalias")}
    compiled = compile_file(path, "sm_90", options)
    assert list(compiled.stages) == ["tile-opt", "gpu", "nvvm", "llvm", "ptx", "cubin"]
    assert compiled.stages["ptx"] == launcher.asm["ptx"]


def test_linalg_codegen_still_builds(monkeypatch):
    monkeypatch.setenv("TILE_TARGET", "sm_90")
    launcher = _vector_add().compile(*_args(), BLOCK=1024)
    path = os.path.join(launcher.metadata["cache_path"], "stage-tile-opt.mlir")
    compiled = compile_file(path, "sm_90", {"codegen": "linalg"})
    assert "linalg" in compiled.stages and "scf.for" in compiled.stages["gpu"]
    assert compiled.stages["ptx"].count(".entry") == 1


def test_tile_too_large_for_the_target(monkeypatch):
    monkeypatch.setenv("TILE_TARGET", "sm_90")
    with pytest.raises(tile.TileError, match="tile too large"):
        _vector_add().compile(*_args(), BLOCK=1 << 18)  # (2048 registers a thread at 4 warps)


def test_runtime_runs_from_cache_without_compiler(monkeypatch):
    """A host with torch alone: MLIR, lark and llvmlite cannot be imported."""
    monkeypatch.setenv("TILE_TARGET", "sm_90")
    _vector_add().compile(*_args(), BLOCK=1024)  # fill the cache first
    script = textwrap.dedent(f"""
        import sys
        for m in ("mlir", "lark", "llvmlite", "triton"):
            sys.modules[m] = None
        sys.path.insert(0, {os.path.join(ROOT, "examples")!r})
        import torch, tile, vector_add
        try:
            vector_add.add_kernel[(1,)](torch.rand(8), torch.rand(8), torch.empty(8), 8, BLOCK=1024)
        except tile.DeviceUnavailableError as e:
            print("OK", e)
    """)
    env = {**os.environ, "TILE_TARGET": "sm_90"}
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert r.stdout.startswith("OK"), r.stderr


SEED_GPU_BUILDS = {
    # example module: (launch thunk on CPU tensors shaped like the benchmark's, expected vector loads:
    # `.nc` for the weights every layer norm program rereads; plain where w and b are one tensor)
    "vector_add": (lambda m: m.add(torch.empty(1 << 16), torch.empty(1 << 16)), "ld.global.v4.b32"),
    "fused_softmax": (lambda m: m.softmax(torch.empty(64, 4096), BLOCK=4096), "ld.global.v4.b32"),
    "layer_norm": (lambda m: m.layer_norm(torch.empty(64, 8192, dtype=torch.float16), torch.empty(8192, dtype=torch.float16),
                                          torch.empty(8192, dtype=torch.float16), BLOCK=2048), "ld.global.nc.v4.b32"),
    "add_relu_layernorm": (lambda m: m.add_relu_layernorm(*[torch.empty(64, 1024, dtype=torch.float16)] * 2,
                                                          *[torch.empty(1024, dtype=torch.float16)] * 2), "ld.global.v4.b32"),
    # channels-last video, 16 x 16 patches of 3 channels: whole patch rows (96 bytes) read as 16-byte vectors
    "patch_gather": (lambda m: m.patch_gather(torch.empty(2, 4, 32, 32, 3, dtype=torch.float16).permute(0, 1, 4, 2, 3),
                                              pt=2, st=2, ph=16, pw=16), "ld.global.v4.b32"),
    # 64 queries x 64 keys of D = 64 in f16: both dots on tensor cores, the row statistics reduced
    "flash_attention": (lambda m: m.attention(*[torch.empty(1, 2, 256, 64, dtype=torch.float16)] * 3), "mma.sync.aligned"),
    # keys and values of 64 f16 (the defaults there: 64-token steps in 2 stages) copied ahead as 16-byte
    # cp.async, the page numbers of the step ahead read for their addresses
    "paged_attention": (lambda m: m.paged_attention(torch.empty(2, 4, 64, dtype=torch.float16),
                                                    *[torch.empty(8, 16, 4, 64, dtype=torch.float16)] * 2,
                                                    torch.zeros(2, 4, dtype=torch.int32), torch.ones(2, dtype=torch.int32)),
                        "cp.async.cg.shared.global"),
    # bf16 activations against int4 weights unpacked in registers: both dots on tensor cores
    "int4_matmul": (lambda m: m.int4_matmul(torch.empty(128, 128, dtype=torch.bfloat16), torch.empty(64, 128, dtype=torch.int8),
                                            torch.empty(4, 128, dtype=torch.bfloat16), 32), "mma.sync.aligned.m16n8k16"),
}
# What a seed kernel's PTX must not hold. INT4: the nibbles, (byte & 15) - 8, become f32 through the
# float's bits (`tile-small-int-to-float`), not through a conversion; the K loop's copies (weights,
# 4 bytes a thread in their readers' layout, and 1 x 128 bf16 rows of scales, 2) are 16-byte chunks
# of their own (`cp.async.cg`), none through registers (`ld.global.b16`) or narrower (`.ca`)
SEED_GPU_ABSENT = {"int4_matmul": ("cvt.rn.f32.s32", "ld.global.b16", "cp.async.ca")}


@pytest.mark.parametrize("name", sorted(SEED_GPU_BUILDS))
def test_seed_kernels_vectorize_without_spills(name, monkeypatch):
    """sm_90 builds of the seed kernels: 16-byte global accesses, no local memory."""
    import importlib

    monkeypatch.setenv("TILE_TARGET", "sm_90")
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    module = importlib.import_module(name)
    launch, wanted = SEED_GPU_BUILDS[name]
    kernel = next(v for v in vars(module).values() if isinstance(v, tile.Kernel))
    kernel._launchers.clear()
    launch(module)
    (launcher,) = kernel._launchers.values()
    ptx = launcher.asm["ptx"]
    assert wanted in ptx
    assert ".local" not in ptx
    assert not [absent for absent in SEED_GPU_ABSENT.get(name, ()) if absent in ptx]
    if "__dynamic_shmem__0" in ptx:  # the dynamic shared memory itself, no static byte besides (48 KB then fits)
        assert ".extern .shared .align 1024 .b8 __dynamic_shmem__0[];" in ptx
    info = launcher.metadata["ptxas"]
    assert info["registers"] > 0
    assert info["stack_frame"] == info["spill_stores"] == info["spill_loads"] == 0, info


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_matmul_uses_tensor_cores(dtype, target, monkeypatch):
    import matmul

    monkeypatch.setenv("TILE_TARGET", target)
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    matmul.matmul_kernel._launchers.clear()
    a, b, bias = torch.empty(64, 80, dtype=dtype), torch.empty(96, 80, dtype=dtype).t(), torch.empty(96, dtype=dtype)
    matmul.matmul(a, b, bias, BM=64, BN=64, BK=32)
    (launcher,) = matmul.matmul_kernel._launchers.values()
    kind = "bf16.bf16" if dtype == torch.bfloat16 else "f16.f16"
    # 4 warps in a 2 x 2 grid, each 32 x 32: 2 x 4 fragments, 2 steps of K per 32-wide tile.
    assert launcher.asm["ptx"].count(f"mma.sync.aligned.m16n8k16.row.col.f32.{kind}.f32") == 16
    assert "#tile.mma<[2, 2]>" in launcher.asm["tile-opt"]
    info = launcher.metadata["ptxas"]
    assert info["spill_stores"] == info["stack_frame"] == 0, info


def test_division_and_masks_are_cheap(monkeypatch):
    """f32 division is `div.full.f32` (as Triton's), not the IEEE slow path; a mask proven
    equal along each thread's 16-byte run is compared once per run, not once per element."""
    import fused_softmax

    monkeypatch.setenv("TILE_TARGET", "sm_90")
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    fused_softmax.softmax_kernel._launchers.clear()
    fused_softmax.softmax(torch.empty(64, 4096), BLOCK=4096)
    (launcher,) = fused_softmax.softmax_kernel._launchers.values()
    ptx = launcher.asm["ptx"]
    assert "div.full.f32" in ptx and "div.rn.f32" not in ptx
    assert "ex2.approx.f32" in ptx  # exp on the SFU, as Triton's
    # 4096 f32 over 4 warps: 32 per thread, 8 runs of 4; one compare per run for the mask.
    assert len(re.findall(r"setp\.\w+\.s32", ptx)) <= 10, ptx  # one per element would be 32


@pytest.mark.parametrize("registers, threads, blocks, cap", [
    (52, 512, 2, 40),    # 56 allocated: 2 blocks of 512; at 40, 3 fit
    (40, 512, 3, 32),    # a 4th block needs 32
    (30, 1024, 2, None),  # 2048 threads: the SM is full
    (120, 512, 1, None),  # a 2nd block needs 64: far below 120, it would only spill
    (80, 256, 3, 64),
])
def test_occupancy_cap(registers, threads, blocks, cap):
    from tile.codegen.backend.cubin import blocks_per_sm, occupancy_cap

    assert blocks_per_sm(registers, threads) == blocks
    assert occupancy_cap(registers, threads) == cap


def test_register_cap_reaches_ptxas(monkeypatch):
    """A layer norm of 4096 f16 with 4 warps takes 64 registers (8 blocks of 128 threads an
    SM); capped at 56 it fits 9 without spills. The cap is a `.maxnreg` directive:
    ptxas ignores -maxrregcount for a kernel with `.maxntid`, as every kernel has."""
    import layer_norm

    monkeypatch.setenv("TILE_TARGET", "sm_90")
    layer_norm.layer_norm_kernel._launchers.clear()
    x, w = torch.empty(64, 4096, dtype=torch.float16), torch.empty(4096, dtype=torch.float16)
    launcher = layer_norm.layer_norm_kernel.compile(x, w, w.clone(), torch.empty_like(x), 4096, 4096, 4096, 1e-5,
                                                    BLOCK=4096, ONE_BLOCK=True, num_warps=4)
    info = launcher.metadata["ptxas"]
    assert info["registers"] == 56 and info["spill_stores"] == info["stack_frame"] == 0, info


def test_row_accesses_share_one_address(monkeypatch):
    """A layer-norm row (8192 f16, 8 warps: 4 runs of 16 bytes a thread, 4096 bytes apart)
    is addressed from one register: the runs after the first are it plus 4096, 8192 and
    12288 bytes (immediate offsets in the SASS), and the row's four loads are issued before
    any of their data is used."""
    import layer_norm
    from test_matmul_codegen import _sass

    monkeypatch.setenv("TILE_TARGET", "sm_90a")
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    x, w = torch.empty(64, 8192, dtype=torch.float16), torch.empty(8192, dtype=torch.float16)
    launcher = layer_norm.layer_norm_kernel.compile(x, w, w, torch.empty_like(x), 8192, 8192, 8192, 1e-5,
                                                    BLOCK=8192, ONE_BLOCK=True, num_warps=8)
    sass = _sass(launcher.asm["cubin"])
    loads = [i for i, line in enumerate(sass) if "LDG.E.128" in line]
    first = [re.search(r"\[(R\d+)\.64(\+0x\w+)?\]", sass[i]).groups() for i in loads[:4]]
    assert len({reg for reg, _ in first}) == 1 and [off for _, off in first] == [None, "+0x1000", "+0x2000", "+0x3000"]
    assert not any("HADD2.F32" in line for line in sass[: loads[3]])  # f16 -> f32 of the data comes after


@pytest.mark.parametrize("kernel", ["softmax", "layer_norm"])
def test_row_statistics_stay_in_registers(kernel, monkeypatch):
    """16 short rows a program as a 16 x 256 tile (the rows kernels): each row's statistics
    are reduced along the lanes and read back along the row from the registers that reduced
    them (slice layouts, codegen/gpu/held_registers.py), and so are layer norm's weights: no
    shared memory and no barrier, 16-byte global accesses, no spills."""
    import fused_softmax
    import layer_norm

    monkeypatch.setenv("TILE_TARGET", "sm_90a")
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    dt = torch.float32 if kernel == "softmax" else torch.float16
    x = torch.empty(1024, 256, dtype=dt)
    if kernel == "softmax":
        launcher = fused_softmax.softmax_rows_kernel.compile(x, torch.empty_like(x), 1024, 256, 256, 256, ROWS=16,
                                                             BLOCK=256, num_warps=4)
    else:
        w = torch.empty(256, dtype=dt)
        launcher = layer_norm.layer_norm_rows_kernel.compile(x, w, w.clone(), torch.empty_like(x), 1024, 256, 256, 256,
                                                             1e-5, ROWS=16, BLOCK=256, num_warps=4)
    ptx = launcher.asm["ptx"]
    assert "bar.sync" not in ptx and ".shared" not in ptx
    assert "shfl.sync.bfly" in ptx and "st.global.v4" in ptx
    info = launcher.metadata["ptxas"]
    assert info["spill_stores"] == info["stack_frame"] == 0, info


def _quantized_launcher(monkeypatch, name, **tiles):
    """The sm_90a launcher of a quantized example's kernel at M = 256 (its prefill tiles,
    or `tiles`), compiled only."""
    example = importlib.import_module(name)
    monkeypatch.setenv("TILE_TARGET", "sm_90a")
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    kernel = getattr(example, name + "_kernel")
    kernel._launchers.clear()
    a = torch.empty(256, 512, dtype=torch.bfloat16)
    if name == "fp8_matmul":
        example.fp8_matmul(a, torch.empty(512, 256, dtype=torch.float8_e4m3fn), torch.empty(256, dtype=torch.bfloat16),
                           **tiles)
    else:
        example.int4_matmul(a, torch.empty(256, 256, dtype=torch.int8), torch.empty(4, 256, dtype=torch.bfloat16), 128,
                            **tiles)
    (launcher,) = kernel._launchers.values()
    return launcher


def _assert_no_spills(launcher):
    info = launcher.metadata["ptxas"]
    assert info["stack_frame"] == info["spill_stores"] == info["spill_loads"] == 0, info


@pytest.mark.parametrize("name, groups", [("fp8_matmul", 1), ("int4_matmul", 2)])
def test_decoded_weight_dot_stays_in_flight(monkeypatch, name, groups):
    """The quantized examples' prefill tiles on sm_90a: the decoded weights go to rings of
    two slots, so the wgmma of one K step runs while the next decodes (`wgmma.wait_group`
    for all but this step's groups in the loop: FP8's one dot, INT4's two chained on one
    accumulator; 0 only after it), with no spills; FP8's K-loop loads by TMA."""
    launcher = _quantized_launcher(monkeypatch, name)
    ptx = launcher.asm["ptx"]
    assert ptx.count(f"wgmma.wait_group.sync.aligned {groups};") == 1 and ptx.count("wgmma.wait_group.sync.aligned 0;") == 1
    assert ptx.count("wgmma.wait_group") == 2
    if name == "fp8_matmul":  # every K-loop load by TMA
        assert "cp.async.bulk.tensor" in ptx and "cp.async.cg" not in ptx and "cp.async.ca" not in ptx
    assert launcher.asm["tile-opt"].count('"tile.local_store"') == groups
    _assert_no_spills(launcher)


def _staging_slots(tile_opt: str) -> set:
    """The slot counts of the rings `tile.local_store` writes in the tile-opt IR."""
    return {int(m) for m in re.findall(r'"tile.local_store".*?memref<(\d+)x', tile_opt)}


@pytest.mark.parametrize("name", ["fp8_matmul", "int4_matmul"])
def test_third_staging_slot_drops_the_top_barrier(monkeypatch, name):
    """At the prefill tiles (one program an SM whatever the slots) the decoded weights are
    staged in three slots, and the K loop keeps no barrier of its own after the mbarrier
    wait (the one after the stores guards every slot: `_staging_slots` in tile_pipeline)."""
    opt = _quantized_launcher(monkeypatch, name).asm["tile-opt"]
    assert _staging_slots(opt) == {3} and "gpu.barrier" not in opt


def test_third_staging_slot_not_at_the_cost_of_a_program(monkeypatch):
    """FP8 at 128x128x64, 8 warps, 3 stages: 104 KB of shared memory, two programs an SM; a
    third slot (120 KB) would leave one (measured 0.597x -> 0.344x torch on an H100), so
    the decoded weights keep two slots and the loop its barrier after the mbarrier wait."""
    opt = _quantized_launcher(monkeypatch, "fp8_matmul", BM=128, BN=128, BK=64, num_warps=8, num_stages=3).asm["tile-opt"]
    assert _staging_slots(opt) == {2} and opt.count("gpu.barrier") == 1


@pytest.mark.parametrize("name", ["fp8_matmul", "int4_matmul"])
def test_prefill_tiles_fit(monkeypatch, name):
    """The quantized examples' default prefill tiles (`PREFILL_TILES`) compile for sm_90a
    with no spills, in the shared memory an H100/H200 block has."""
    launcher = _quantized_launcher(monkeypatch, name)
    assert launcher.metadata["num_threads"] == 32 * importlib.import_module(name).PREFILL_TILES["num_warps"]
    _assert_no_spills(launcher)


def test_loads_split_from_shared_groups_go_by_tma(monkeypatch):
    """The INT4 example masks each K-loop load at its tensor's bounds. Where a load's mask
    bounds a row vector computed in a fusion group beside other loads, `tile-pipeline`
    splits it out of every group it reads, once for the offsets and the mask together (one
    row vector in both, a block): so on sm_90a all five loads of each K step are TMA
    copies, none `cp.async`. The scale rows' 1-row tiles go unswizzled: the hardware
    swizzles by address, and their ring's second slot starts 256 bytes in, not on the
    128-byte swizzle's 1024-byte period (swizzled, the GPU read them permuted). The high
    half's block start, `KH + k0`, is computed inside a fusion group: the copy clones it
    at the issue point (before, the compiler aborted). (On the CPU and the GPU the example matches torch: test_examples, run_on_device.sh.)"""
    launcher = _quantized_launcher(monkeypatch, "int4_matmul")
    ptx = launcher.asm["ptx"]
    assert ptx.count("cp.async.bulk.tensor") >= 5 and "cp.async.cg" not in ptx and "cp.async.ca" not in ptx
    maps = [(e["arg"], e["box"], e["swizzle"]) for e in launcher.metadata["abi"] if e["part"] == "tma"]
    # a: 256 x 32 bf16 (64-byte rows), w: 32 x 128 bytes, scales: 1 x 128 bf16 in two 128-byte panels
    assert sorted(maps) == [(0, [256, 32], 64)] * 2 + [(1, [32, 128], 128)] + [(2, [1, 64], 0)] * 2, maps
    _assert_no_spills(launcher)
