"""Inputs a fuzzer found that crashed the process, hung it or answered wrong; each now
compiles and runs right or raises a `tile.TileError` naming the cause. The GPU-target
cases compile only (meta tensors), as the CPU machine can."""

import pytest
import torch

import tile


@tile.kernel
def small_dot_kernel(a, b, c, BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr):
    rm, rn, rk = tile.arange(0, BM), tile.arange(0, BN), tile.arange(0, BK)
    acc = tile.dot(tile.load(a + rm[:, None] * BK + rk[None, :]), tile.load(b + rk[:, None] * BN + rn[None, :]))
    tile.store(c + rm[:, None] * BN + rn[None, :], acc)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("bm, bn, warps", [(16, 32, 4), (16, 16, 4)])
def test_small_dots(target, bm, bn, warps, gpu_target):
    """16x32 at 4 warps is one m16n8 fragment a warp: its accumulator's 2x2 reshape was left
    unlowered and the translation to LLVM IR segfaulted. 16x16 at 4 warps fits no mma grid
    (it raised a misleading 'needs an f32 accumulator'): it now takes the linalg path."""
    gpu_target(target)
    a = torch.empty(bm, 16, dtype=torch.float16, device="meta")
    b = torch.empty(16, bn, dtype=torch.float16, device="meta")
    c = torch.empty(bm, bn, device="meta")
    launcher = small_dot_kernel.compile(a, b, c, BM=bm, BN=bn, BK=16, num_warps=warps)
    assert (".entry small_dot_kernel" in launcher.asm["ptx"]) and ("mma.sync" in launcher.asm["ptx"]) == (bm * bn > 256)


def test_unlowered_ops_raise_before_translation():
    """An op the nvvm stage left behind is named (MLIR's translation crashes on it)."""
    from mlir import ir

    from tile.codegen.backend.ptx import gpu_module_to_llvm_ir
    from tile.dialects import make_context

    with make_context(), ir.Location.unknown():
        module = ir.Module.parse("""
            gpu.module @k {
              llvm.func @f(%x: f32) -> f32 {
                %y = arith.addf %x, %x : f32
                llvm.return %y : f32
              }
            }""")
        with pytest.raises(tile.CompilationError, match="'arith.addf' .* was not lowered to LLVM"):
            gpu_module_to_llvm_ir(module)


@tile.kernel
def bool_kernel(x, f, out, n, BLOCK: tile.constexpr):
    o = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    b = tile.load(x + o, mask=o < n, other=False)
    tile.store(out + o, b & (tile.load(f + o, mask=o < n, other=0.0) > 0.5), mask=o < n)


def test_bool_tensors_on_the_gpu(gpu_target):
    """A bool tensor's i1 memref aborted MemRefToLLVM: on the GPU too it is read and written
    as bytes (`emulate-i1-memrefs`)."""
    gpu_target()
    x = torch.empty(1000, dtype=torch.bool, device="meta")
    launcher = bool_kernel.compile(x, torch.empty(1000, device="meta"), x, 1000, BLOCK=128)
    assert "ld.global.b8" in launcher.asm["ptx"] and "st.global.b8" in launcher.asm["ptx"]


def test_bool_tensors_on_the_cpu():
    x, f = torch.rand(1000) > 0.5, torch.rand(1000)
    out = torch.zeros(1000, dtype=torch.bool)
    bool_kernel[(8,)](x, f, out, 1000, BLOCK=128)
    assert torch.equal(out, x & (f > 0.5))


@tile.kernel
def float8_dot_kernel(a, c, BLOCK: tile.constexpr):
    r = tile.arange(0, BLOCK)
    x = tile.load(a + r[:, None] * BLOCK + r[None, :])
    tile.store(c + r[:, None] * BLOCK + r[None, :], tile.dot(x, x))


def test_float8_dot():
    """A dot on float8 tiles segfaulted in the GPU lowering (when they were storage only); it
    is a float8 dot now (`tests/test_fp8_dot.py`)."""
    a = torch.randn(32, 32).to(torch.float8_e4m3fn)
    c = torch.zeros(32, 32)
    float8_dot_kernel[(1,)](a, c, BLOCK=32)
    torch.testing.assert_close(c.double(), a.double() @ a.double())


def test_meta_tensor_after_a_cpu_launch():
    """The launch cache's key told a meta tensor from a CPU one only by `is_cuda`: a meta
    tensor after a CPU launch reached the CPU kernel as a null pointer."""
    import vector_add

    x = torch.rand(64)
    vector_add.add_kernel[(1,)](x, x, torch.empty(64), 64, BLOCK=64)
    with pytest.raises(tile.LaunchError, match="argument 'out' is on meta"):
        vector_add.add_kernel[(1,)](x, x, torch.empty(64, device="meta"), 64, BLOCK=64)


@pytest.mark.parametrize("grid", [(2**31,), (1, 2**32 + 1), (1.5,), (2.0,), (), (1, 1, 1, 1)])
def test_bad_grids(grid):
    """A grid past the 32-bit program id wrapped; a float one was truncated."""
    import vector_add

    x = torch.rand(64)
    with pytest.raises(tile.LaunchError, match=r"grid must be 1 to 3 ints in \[0, 2\*\*31\)"):
        vector_add.add_kernel[grid](x, x, torch.empty(64), 64, BLOCK=64)


@pytest.mark.parametrize("option, value", [("num_warps", 0), ("num_warps", 4.0), ("num_warps", 3), ("num_warps", 64),
                                           ("num_stages", 0), ("num_stages", 2.0)])
def test_bad_launch_options(option, value):
    import vector_add

    x = torch.rand(64)
    with pytest.raises(tile.LaunchError, match=f"{option} must be"):
        vector_add.add_kernel[(1,)](x, x, torch.empty(64), 64, BLOCK=64, **{option: value})


@tile.kernel
def wide_literal_kernel(x, out, BLOCK: tile.constexpr):
    o = tile.arange(0, BLOCK)
    v = tile.load(x + o)
    tile.store(out + o, (v + 4294967296) == v)


def test_int_literal_wider_than_the_tile():
    """2**32 next to an int32 tile was truncated to 0 (v + 2**32 == v held)."""
    out = torch.ones(8, dtype=torch.int32)
    wide_literal_kernel[(1,)](torch.arange(8, dtype=torch.int32), out, BLOCK=8)
    assert not out.any()


@tile.kernel
def carried_dtype_kernel(x, out, n, BLOCK: tile.constexpr):
    o = tile.arange(0, BLOCK)
    acc = tile.zeros((BLOCK,), tile.int32)
    for i in range(0, n):
        acc = acc + tile.load(x + o)
    tile.store(out + o, acc)


def test_loop_carried_dtype_change():
    """An int32 accumulator that became float32 inside the loop was cast back each
    iteration (0.75 summed three times gave 0)."""
    with pytest.raises(tile.CompilationError, match="'acc' is tile.int32 before this loop but tile.float32 inside it"):
        carried_dtype_kernel[(1,)](torch.full((8,), 0.75), torch.zeros(8), 3, BLOCK=8)


@tile.kernel
def zero_step_kernel(x, n):
    for i in range(0, n, 0):
        tile.store(x + i, 1.0)


@tile.kernel
def negative_shape_kernel(x, BLOCK: tile.constexpr):
    tile.store(x + tile.arange(0, BLOCK), tile.full((BLOCK, -1), 0.0, tile.float32))


def test_zero_step_and_negative_shape():
    """A zero step never ends; a negative dimension escaped as an MLIRError."""
    with pytest.raises(tile.CompilationError, match="range's step must not be zero"):
        zero_step_kernel[(1,)](torch.zeros(4), 4)
    with pytest.raises(tile.CompilationError, match=r"must be positive, got \(16, -1\)"):
        negative_shape_kernel[(1,)](torch.zeros(16), BLOCK=16)


def test_sm80_shared_memory_limit(gpu_target):
    """sm_80 was held to an H100's 227 KB; an A100 block has 163 KB."""
    import matmul

    gpu_target("sm_80")
    a = torch.empty(1024, 1024, dtype=torch.bfloat16, device="meta")
    with pytest.raises(tile.CompilationError, match="needs 196608 bytes of shared memory, more than the 166912 a sm_80") as e:
        matmul.matmul(a, a, torch.empty(1024, dtype=torch.bfloat16, device="meta"), BM=128, BN=256, BK=64,
                      num_warps=8, num_stages=4)
    # at the pipelined loop whose copies need it, not the kernel's def line (issue 37)
    assert e.value.filename.endswith("matmul.py") and "for k0 in tile.range(0, K, BK" in e.value.source_line


def test_failed_build_still_dumps(gpu_target, monkeypatch, tmp_path):
    """TILE_DUMP_IR wrote nothing when a build failed, where the dumps matter most."""
    import vector_add

    gpu_target("sm_90")
    monkeypatch.setenv("TILE_DUMP_IR", str(tmp_path))
    x = torch.empty(1 << 16, device="meta")
    with pytest.raises(tile.TileError, match="tile too large"):
        vector_add.add_kernel.compile(x, x, x, 1 << 18, BLOCK=1 << 18)
    (folder,) = tmp_path.iterdir()
    assert any(p.name.endswith("stage-tile-opt.mlir") for p in folder.iterdir())


@tile.kernel
def fill_kernel(out, n, BLOCK: tile.constexpr):
    tile.store(out + tile.arange(0, BLOCK), tile.full((BLOCK,), n, tile.int64))


def test_int_argument_past_int64():
    """2**64 + 50 reached the kernel as 50; 2**64 + 2**40, after 2**40 had bound the fast
    path (the same key otherwise: a multiple of 16, past int32), as 2**40."""
    out = torch.zeros(4, dtype=torch.int64)
    fill_kernel[(1,)](out, 2**40, BLOCK=4)
    assert out.tolist() == [2**40] * 4
    for n in (2**64 + 2**40, 2**64 + 50):
        with pytest.raises(tile.LaunchError, match=f"argument 'n' is {n}, which does not fit in 64 bits"):
            fill_kernel[(1,)](out, n, BLOCK=4)


@tile.kernel
def masked_division_kernel(x, y, out, n, BLOCK: tile.constexpr):
    o = tile.arange(0, BLOCK)
    m = o < n
    a, b = tile.load(x + o, mask=m, other=0), tile.load(y + o, mask=m, other=0)
    tile.store(out + o, a // b, mask=m)
    tile.store(out + (BLOCK + o), a % b, mask=m)


def test_integer_division_in_masked_off_lanes():
    """Masked-off lanes divide by `other=0`: LLVM took that as undefined and dropped the
    store's mask (or x86 trapped). Division by 0 and -1 is now guarded in every lane."""
    x = torch.tensor([7, -7, 7, -(2**31), 5, 9, 9, 9], dtype=torch.int32)
    y = torch.tensor([2, 2, -1, -1, 0, 1, 1, 1], dtype=torch.int32)
    out = torch.full((16,), -99, dtype=torch.int32)
    masked_division_kernel[(1,)](x, y, out, 5, BLOCK=8)
    assert out[:8].tolist() == [3, -3, -7, -(2**31), 5, -99, -99, -99]  # C truncation; x // 0 == x
    assert out[8:].tolist() == [1, -1, 0, 0, 0, -99, -99, -99]


def test_dot_accumulator_must_be_float32():
    """An int32 accumulator took float operands' products and answered neither."""
    @tile.kernel
    def int_acc_kernel(a, c, N: tile.constexpr):
        r = tile.arange(0, N)
        x = tile.load(a + r[:, None] * N + r[None, :])
        tile.store(c + r[:, None] * N + r[None, :], tile.dot(x, x, tile.zeros((N, N), tile.int32)))

    with pytest.raises(tile.CompilationError, match="and a tile.int32 accumulator"):
        int_acc_kernel[(1,)](torch.zeros(4, 4), torch.zeros(4, 4), N=4)


@tile.kernel
def bool_ops_kernel(x, y, v, cmp, mx, add, cast, BLOCK: tile.constexpr):
    o = tile.arange(0, BLOCK)
    a, b = tile.load(x + o), tile.load(y + o)
    tile.store(cmp + o, a > b)
    tile.store(mx + o, tile.maximum(a, b))
    tile.store(add + o, a + b)
    tile.store(cast + o, tile.load(v + o).to(tile.int1))


def test_bool_semantics():
    """Bools compared and maxed as signed 1-bit values (True < False), added in 1 bit
    (True + True == 0), and an int's conversion kept its low bit (2 -> False)."""
    x = torch.tensor([True, False, True, False])
    y = torch.tensor([True, True, False, False])
    v = torch.tensor([2, 0, -1, 256], dtype=torch.int32)
    cmp, mx, cast = (torch.zeros(4, dtype=torch.bool) for _ in range(3))
    add = torch.zeros(4, dtype=torch.int32)
    bool_ops_kernel[(1,)](x, y, v, cmp, mx, add, cast, BLOCK=4)
    assert torch.equal(cmp, x > y) and torch.equal(mx, x | y) and torch.equal(cast, v != 0)
    assert add.tolist() == (x.int() + y.int()).tolist()


@tile.kernel
def narrow_reduce_kernel(x, s, m, BLOCK: tile.constexpr):
    v = tile.load(x + tile.arange(0, BLOCK))
    tile.store(s, tile.sum(v, axis=0))
    tile.store(m, tile.max(v, axis=0))


def test_int8_reductions(gpu_target):
    """An int8 sum wrapped in 8 bits (Triton sums narrow ints in int32), and on a GPU any
    int8 reduction failed to compile (an 8-bit shuffle)."""
    x = torch.full((64,), 100, dtype=torch.int8)
    s, m = torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int8)
    narrow_reduce_kernel[(1,)](x, s, m, BLOCK=64)
    assert s.item() == 6400 and m.item() == 100
    gpu_target()
    meta = [t.to("meta") for t in (x, s, m)]
    assert "shfl.sync" in narrow_reduce_kernel.compile(*meta, BLOCK=64).asm["ptx"]


@tile.kernel
def loops_kernel(out, n, BLOCK: tile.constexpr):
    o = tile.arange(0, BLOCK)
    down = tile.zeros((BLOCK,), tile.int32)
    for i in range(n, 0, -1):  # n, ..., 1
        down = down * 10 + i
    nested = tile.zeros((BLOCK,), tile.int32)
    for i in range(n):
        for j in range(n):  # the outer loop's tile handed straight to the inner one
            nested = nested + 1
    steps = tile.zeros((BLOCK,), tile.int32)
    for i in range(10, 0, -3):  # 10, 7, 4, 1
        steps = steps + i
    tile.store(out + o, down)
    tile.store(out + (BLOCK + o), nested)
    tile.store(out + (2 * BLOCK + o), steps)


def test_negative_steps_and_nested_loops():
    """A negative step ran no iteration; two loops nested directly failed to bufferize."""
    out = torch.zeros(12, dtype=torch.int32)
    loops_kernel[(1,)](out, 3, BLOCK=4)
    assert out.tolist() == [321] * 4 + [9] * 4 + [22] * 4


@tile.kernel
def early_return_kernel(out, n, BLOCK: tile.constexpr):
    pid = tile.program_id(0)
    if pid >= n:
        tile.store(out + pid * BLOCK + tile.arange(0, BLOCK), -1.0)
        return
    v = tile.full((BLOCK,), 2.0, tile.float32)
    if pid == 0:
        return
    tile.store(out + pid * BLOCK + tile.arange(0, BLOCK), v)


@tile.kernel
def return_in_loop_kernel(out, n):
    for i in range(n):
        if i > 2:
            return


def test_early_return():
    """`if pid >= n: return` failed in the MLIR verifier; it now ends that program."""
    out = torch.zeros(32)
    early_return_kernel[(4,)](out, 2, BLOCK=8)
    assert out.view(4, 8)[:, 0].tolist() == [0.0, 2.0, -1.0, -1.0]
    with pytest.raises(tile.CompilationError, match="return inside a run-time loop or if is not supported"):
        return_in_loop_kernel[(1,)](out, 4)


@tile.func
def forever(a):
    return forever(a)


@tile.kernel
def recursion_kernel(x, BLOCK: tile.constexpr):
    tile.store(x + tile.arange(0, BLOCK), forever(tile.load(x + tile.arange(0, BLOCK))))


@tile.kernel
def nan_padding_kernel(x, out, PAD: tile.constexpr):
    tile.store_tile(out, (0,), tile.load_tile(x, (0,), (4,), PAD))


def test_recursion_and_bad_padding():
    """Python's RecursionError and ValueError escaped instead of a tile error."""
    with pytest.raises(tile.TileError, match="@tile.func calls nest deeper than 64"):
        recursion_kernel[(1,)](torch.zeros(4), BLOCK=4)
    i = torch.zeros(4, dtype=torch.int32)
    with pytest.raises(tile.CompilationError, match="load_tile's padding must be a number that tile.int32 holds, got nan"):
        nan_padding_kernel[(1,)](i, i, PAD=float("nan"))


@tile.kernel
def gather_int8_kernel(x, idx, out, BLOCK: tile.constexpr):
    o = tile.arange(0, BLOCK)
    tile.store(out + o, tile.gather(tile.load(x + o), tile.load(idx + o), -1))


def test_gather_int8_index_and_negative_axis(gpu_target):
    """An int8 index failed the GPU lowering (truncated to i32); axis -1 was rejected."""
    x, idx = torch.randn(16), torch.randint(0, 16, (16,), dtype=torch.int8)
    out = torch.zeros(16)
    gather_int8_kernel[(1,)](x, idx, out, BLOCK=16)
    assert torch.equal(out, x[idx.long()])
    gpu_target()
    gather_int8_kernel.compile(x.to("meta"), idx.to("meta"), out.to("meta"), BLOCK=16)


@tile.kernel
def chain_kernel(x, out, STEPS: tile.constexpr):
    o = tile.arange(0, 4)
    v = tile.load(x + o)
    acc = v
    for i in tile.static_range(STEPS):
        acc = acc * v + tile.load(x + o + 1)
    tile.store(out + o, acc)


def test_elementwise_chain_compiles_in_linear_time():
    """clone-elementwise-producers counted a converted op's `outs` as a use: the clones
    doubled at every step (12 steps took minutes on the CPU target)."""
    import time

    x, out = torch.rand(8), torch.zeros(4)
    t = time.perf_counter()
    chain_kernel[(1,)](x, out, STEPS=24)
    assert time.perf_counter() - t < 30
    want = x[:4].clone()
    for _ in range(24):
        want = want * x[:4] + x[1:5]
    torch.testing.assert_close(out, want)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_bool_tiles_of_several_elements_a_thread(target, gpu_target):
    """Bool loads of 2+ elements a thread became i1 vector loads, invalid once bools are bytes;
    they are now byte runs of whole words (`distributed_memory._bool_run`: 4 a thread here)."""
    gpu_target(target)
    x = torch.empty(4096, dtype=torch.bool, device="meta")
    launcher = bool_kernel.compile(x, torch.empty(4096, device="meta"), x, 4096, BLOCK=1024)
    ptx = launcher.asm["ptx"]
    assert "ld.global.b32" in ptx and "st.global.b32" in ptx and "ld.global.b8" not in ptx


def test_a_pass_bug_is_a_compilation_error(monkeypatch, tmp_path):
    """A Python exception inside a pass (an AttributeError in convert-tile-to-gpu, found by
    fuzzing) escaped the launch as itself; it is now a CompilationError naming the kernel."""
    from tile.codegen.cpu.tile_cpu_grid import TileCpuGrid

    def broken(self, module_op):
        raise AttributeError("'NoneType' object has no attribute 'width'")

    monkeypatch.setattr(TileCpuGrid, "run", broken)
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))  # a miss: the compiler runs
    fill_kernel._launchers.clear()
    with pytest.raises(tile.CompilationError, match="internal compiler error compiling fill_kernel for cpu: "
                                                    "AttributeError"):
        fill_kernel[(1,)](torch.zeros(8, dtype=torch.int64), 3, BLOCK=8)


@tile.kernel
def table_kernel(x, tab, out, n, B: tile.constexpr, WRITE_TABLE: tile.constexpr):
    o = tile.arange(0, B)
    acc = tile.zeros((B,), tile.float32)
    for i in tile.range(0, n, num_stages=3):
        p = tile.load(tab + i)
        acc += tile.load(x + p * B + o)
        if WRITE_TABLE:
            tile.store(tab + i + 1, p + 1)
    tile.store(out + o, acc)


@pytest.mark.parametrize("write_table", [True, False])
def test_no_copy_ahead_of_the_loops_own_index_writes(write_table, gpu_target):
    """A load whose offsets come from a table the loop itself writes was copied ahead
    (cp.async) from table entries not yet written; it now stays in the loop. A table the
    loop only reads still pipelines."""
    gpu_target()
    m = lambda n, dt=torch.float32: torch.empty(n, dtype=dt, device="meta")  # noqa: E731
    ptx = table_kernel.compile(m(4096), m(64, torch.int32), m(256), 6, B=256, WRITE_TABLE=write_table).asm["ptx"]
    assert ("cp.async" in ptx) != write_table


@tile.kernel
def huge_kernel(out, V: tile.constexpr):
    tile.store(out, tile.sum(tile.zeros((V,), tile.float32), axis=0))


@tile.kernel
def wide_arange_kernel(out, V: tile.constexpr):
    tile.store(out, tile.sum(tile.arange(0, V), axis=0))


@tile.kernel
def semicolon_kernel(x, out, B: tile.constexpr):
    r = tile.arange(0, B); v = tile.load(x + r)  # noqa: E702
    tile.store(out + r, v)


@tile.kernel
def const_kernel(out, V: tile.constexpr):
    tile.store(out + tile.arange(0, 4), tile.full((4,), V, tile.float32))


def test_sizes_and_constexprs():
    """A 2**40-element tile segfaulted the CPU target; arange past int32 failed the op
    verifier; a str or list constexpr escaped as ValueError or TypeError; two statements
    on one line were 'unsupported'."""
    out = torch.zeros(4)
    with pytest.raises(tile.CompilationError, match="tile too large: a tile of shape"):
        huge_kernel[(1,)](out, V=2**40)
    with pytest.raises(tile.CompilationError, match="arange bounds must fit in int32"):
        wide_arange_kernel[(1,)](out, V=2**32)
    with pytest.raises(tile.CompilationError, match="ValueError: could not convert string to float"):
        const_kernel[(1,)](out, V="x")
    with pytest.raises(tile.LaunchError, match="constexpr 'V' must be hashable"):
        const_kernel[(1,)](out, V=[3])
    x = torch.rand(4)
    semicolon_kernel[(1,)](x, out, B=4)
    assert torch.equal(out, x)


def test_autotuned_parameter_passed_again():
    """Passing a tuned constexpr or option at the launch escaped as functools' TypeError."""
    @tile.autotune(configs=[tile.Config(BLOCK=32, num_warps=2)], key=["n"])
    @tile.kernel
    def tuned(x, out, n, BLOCK: tile.constexpr):
        o = tile.arange(0, BLOCK)
        tile.store(out + o, tile.load(x + o, mask=o < n), mask=o < n)

    for extra in ({"BLOCK": 64}, {"num_warps": 4}):
        with pytest.raises(tile.LaunchError, match="set by the autotune configs cannot also be passed"):
            tuned[(1,)](torch.rand(8), torch.zeros(8), 8, **extra)


def test_kernel_without_source():
    """A kernel defined by exec raised OSError from the cache key."""
    scope = {"tile": tile}
    exec("@tile.kernel\ndef k(x):\n    tile.store(x, 1.0)\n", scope)
    with pytest.raises(tile.CompilationError, match="the source of kernel k cannot be read"):
        scope["k"][(1,)](torch.zeros(1))


@tile.kernel
def to_int8_kernel(x, out, n, B: tile.constexpr):
    o = tile.program_id(0) * B + tile.arange(0, B)
    tile.store(out + o, tile.load(x + o, mask=o < n).to(tile.int8), mask=o < n)


@pytest.mark.parametrize("block", [8, 16])
def test_float_to_int8_out_of_range(block):
    """Out-of-range float -> int8 saturated or wrapped with the tile's shape (LLVM's fptosi
    to i8 is poison there); it now goes through int32 and wraps, as torch does."""
    x = torch.tensor([128.0, 255.0, -129.0, 257.0, 70000.0, float("nan"), 1.5, -1.5])
    out = torch.zeros(8, dtype=torch.int8)
    to_int8_kernel[(tile.cdiv(8, block),)](x, out, 8, B=block)
    assert out.tolist() == x.to(torch.int8).tolist()


def test_ahead_of_time_build_of_an_in_place_launch(gpu_target):
    """An ahead-of-time build on meta tensors compiled every launch as `noalias`, so an
    in-place launch on the GPU (one tensor passed twice) found no cache entry."""
    import vector_add

    gpu_target()
    x = torch.empty(1024, device="meta")
    y = torch.empty(1024, device="meta")
    assert not vector_add.add_kernel.compile(x, y, x, 1024, BLOCK=1024).metadata["options"]["noalias"]
    assert vector_add.add_kernel.compile(x, y, torch.empty(1024, device="meta"), 1024, BLOCK=1024).metadata["options"]["noalias"]
