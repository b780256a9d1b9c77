"""Fuzzing the runtime and the tooling around the compiler: launch-time validation, the
disk cache, autotune and tile-opt. Each test is an input that answered wrong, crashed or
escaped as a non-tile error, and now runs right or raises a `tile.TileError`."""

import pytest
import torch

import tile
from test_launch_path import driver  # noqa: F401  (the fake CUDA driver)


@tile.kernel
def scaled_arange_kernel(out, C: tile.constexpr):
    o = tile.arange(0, 4)
    tile.store(out + o, (o * C).to(tile.float32))


@pytest.mark.parametrize("grid", [(1,), [1]])  # the binder, and the general path a list grid takes
def test_equal_constexprs_of_other_types(grid):
    """The general path keyed constexprs and options by value alone: C=2**30 after C=2.0**30
    reused the float build (no int32 wrap), and num_warps=4.0 or True after 4 or 1 skipped
    the option check (on the binder's path too)."""
    scaled_arange_kernel._fast.clear()
    a, b = torch.zeros(4), torch.zeros(4)
    scaled_arange_kernel[grid](a, C=2.0**30)
    scaled_arange_kernel[grid](b, C=2**30)
    assert a.tolist() == [0.0, 2.0**30, 2.0**31, 3 * 2.0**30]
    assert b.tolist() == [0.0, 2.0**30, -(2.0**31), -(2.0**30)]  # int32 wraps
    for good, bad in ((4, 4.0), (1, True)):
        scaled_arange_kernel[grid](a, C=1, num_warps=good)
        with pytest.raises(tile.LaunchError, match="num_warps must be"):
            scaled_arange_kernel[grid](a, C=1, num_warps=bad)


@tile.kernel
def fill_kernel(out, n, BLOCK: tile.constexpr):
    tile.store(out + tile.arange(0, BLOCK), tile.full((BLOCK,), n, tile.int64))


def test_general_path_keys_device_and_int64_range():
    """The general path (a list grid) keyed a tensor by `is_cuda`: a meta tensor after a CPU
    launch reached the kernel as a null pointer (a segfault); and an int past int64 after
    2**40 took 2**40's launch, wrapped."""
    out = torch.zeros(4, dtype=torch.int64)
    fill_kernel[[1]](out, 2**40, BLOCK=4)
    with pytest.raises(tile.LaunchError, match="argument 'out' is on meta"):
        fill_kernel[[1]](torch.zeros(4, dtype=torch.int64, device="meta"), 2**40, BLOCK=4)
    with pytest.raises(tile.LaunchError, match="which does not fit in 64 bits"):
        fill_kernel[[1]](out, 2**64 + 2**40, BLOCK=4)
    assert out.tolist() == [2**40] * 4


@pytest.mark.parametrize("grid", [(1,), [1]])
def test_sparse_tensor_argument(grid):
    """A sparse or mkldnn tensor escaped as torch's RuntimeError (no data pointer)."""
    out = torch.zeros(4, dtype=torch.int64)
    with pytest.raises(tile.LaunchError, match="argument 'out' is a torch.sparse_coo tensor"):
        fill_kernel[grid](out.to_sparse(), 3, BLOCK=4)


def _forget(kernel):
    """Drop a kernel's in-memory launchers, so that its next launch reads the disk cache."""
    kernel._launchers.clear()
    kernel._fast.clear()
    kernel._bound.clear()


@pytest.mark.parametrize("damage", ["truncated metadata", "other artifact", "no artifact"])
def test_damaged_cache_entry_is_rebuilt(damage, monkeypatch, tmp_path):
    """A truncated metadata.json escaped as JSONDecodeError, a damaged kernel.mlir as an
    MLIRError, and the entry stayed damaged: it is now rebuilt and replaced."""
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    _forget(fill_kernel)
    out = torch.zeros(4, dtype=torch.int64)
    fill_kernel[[1]](out, 5, BLOCK=4)
    (entry,) = [p for p in tmp_path.iterdir() if p.name != "parser"]
    good = (entry / "kernel.mlir").read_bytes()
    if damage == "truncated metadata":
        (entry / "metadata.json").write_text((entry / "metadata.json").read_text()[:40])
    elif damage == "other artifact":
        (entry / "kernel.mlir").write_text("garbage")
    else:
        (entry / "kernel.mlir").unlink()
    _forget(fill_kernel)
    fill_kernel[[1]](out, 7, BLOCK=4)
    assert out.tolist() == [7] * 4 and (entry / "kernel.mlir").read_bytes() == good


def test_unwritable_cache_dir(monkeypatch, tmp_path):
    """A cache dir that cannot be written (here a file in its place; read-only for a user)
    failed the launch with FileExistsError after compiling: the kernel now runs, with a warning."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("TILE_CACHE_DIR", str(blocker))
    _forget(fill_kernel)
    out = torch.zeros(4, dtype=torch.int64)
    with pytest.warns(UserWarning, match="cannot write the cache entry"):
        launcher = fill_kernel.compile(out, 9, BLOCK=4)
    assert "llvm" in launcher.asm
    fill_kernel[[1]](out, 9, BLOCK=4)
    assert out.tolist() == [9] * 4


SCALE = 2.0
helpers = None  # a module of @tile.func helpers, written by the test


@tile.kernel
def global_scale_kernel(out, B: tile.constexpr):
    tile.store(out + tile.arange(0, B), helpers.bump(tile.full((B,), 1.0, tile.float32)) * SCALE)


def test_cache_key_has_global_constants_and_module_helpers(monkeypatch, tmp_path):
    """The disk cache's key hashed the kernel's source and helpers named directly: a changed
    global constant, or a helper reached through a module (`helpers.bump`), reused the
    stale entry (in another process; here, once the in-memory launchers are dropped)."""
    import importlib
    import sys

    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(tmp_path))
    source = "import tile\n\n@tile.func\ndef bump(v):\n    return v + {}\n"
    (tmp_path / "fuzz_tooling_helpers.py").write_text(source.format("1.0"))
    monkeypatch.setattr(sys.modules[__name__], "helpers", importlib.import_module("fuzz_tooling_helpers"))
    out = torch.zeros(4)
    results = []
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # no .pyc of the old source, same size, same second
    for scale, bump in ((2.0, "1.0"), (3.0, "1.0"), (3.0, "25.0")):
        monkeypatch.setattr(sys.modules[__name__], "SCALE", scale)
        (tmp_path / "fuzz_tooling_helpers.py").write_text(source.format(bump))
        importlib.reload(helpers)
        _forget(global_scale_kernel)
        global_scale_kernel[(1,)](out, B=4)
        results.append(out[0].item())
    monkeypatch.delitem(sys.modules, "fuzz_tooling_helpers")
    assert results == [4.0, 6.0, 78.0]


@tile.kernel
def double_kernel(x, out, n, BLOCK: tile.constexpr):
    o = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    tile.store(out + o, tile.load(x + o, mask=o < n) * 2.0, mask=o < n)


def _tuner():
    configs = [tile.Config(BLOCK=64), tile.Config(BLOCK=128)]
    return tile.autotune(configs, key=["n"], rep=1, warmup=1, workers=1)(double_kernel)


def _blocks(meta):
    return (tile.cdiv(meta["n"], meta["BLOCK"]),)


def test_autotune_ahead_of_time_saves_no_choice(gpu_target, monkeypatch, tmp_path):
    """An ahead-of-time build (TILE_COMPILE_ONLY) timed launches that run nothing and saved
    the 'winner' on disk, where the GPU host then took it without searching."""
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    gpu_target()
    x = torch.empty(1000, device="meta")
    _tuner()[_blocks](x, torch.empty(1000, device="meta"), 1000)
    assert not (tmp_path / "autotune").exists()
    assert len([p for p in tmp_path.iterdir() if p.name != "parser"]) == 2  # both configs compiled


@pytest.mark.parametrize("record", ["[1]", '{"n=100;target=cpu": "x"}', '{"n=100;target=cpu": {"config": "1"}}'])
def test_autotune_damaged_record(record, monkeypatch, tmp_path):
    """A record file of the wrong shape escaped as AttributeError or TypeError: it is now
    no record, and the search runs again."""
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    path = _tuner()._record_path()
    (tmp_path / "autotune").mkdir()
    with open(path, "w") as f:
        f.write(record)
    x, out = torch.rand(100), torch.zeros(100)
    _tuner()[_blocks](x, out, 100)
    assert torch.equal(out, 2 * x)


def test_pass_option_values():
    """tile-opt read `tile-pipeline{tma}` and `{tma=yes}` as tma=false, silently, and
    `{num-stages=abc}` escaped as int()'s ValueError."""
    from tile.passes.registry import instantiate

    assert instantiate("tile-pipeline{tma}").tma is True
    assert instantiate("tile-pipeline{tma=TRUE num-stages=3}").num_stages == 3
    for bad, message in (("tma=yes", "option 'tma' takes a bool, got 'yes'"),
                         ("num-stages=abc", "option 'num-stages' takes an int, got 'abc'"),
                         ("num-stages", "option 'num-stages' takes an int, got nothing")):
        with pytest.raises(tile.TileError, match=message):
            instantiate(f"tile-pipeline{{{bad}}}")


def test_unwritable_dump_dir(monkeypatch, tmp_path):
    """TILE_DUMP_IR naming a file failed the launch with NotADirectoryError: it now warns."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("TILE_DUMP_IR", str(blocker))
    out = torch.zeros(4, dtype=torch.int64)
    with pytest.warns(UserWarning, match="cannot write the IR dumps"):
        fill_kernel[[1]](out, 6, BLOCK=4)
    assert out.tolist() == [6] * 4


@pytest.mark.parametrize("grid", [(1, 65536), (2, 1, 70000)])
def test_gpu_grid_past_the_y_and_z_limit(driver, grid):  # noqa: F811
    """A grid with y or z past 65535 passed the launch's checks (below 2**31) and failed in
    cuLaunchKernel as a CudaError saying only 'invalid argument', on either path."""
    record = driver._record
    driver._record = lambda *a: 1 if a[3] > 65535 or a[4] > 65535 else record(*a)  # as the driver answers
    x = torch.zeros(4, dtype=torch.int64)
    fill = tile.kernel(fill_kernel.fn)  # its launch functions bound to this test's driver
    for launch in (fill[grid], fill._generic(grid)):
        with pytest.raises(tile.LaunchError, match=r"second and third dims must be at most 65535"):
            launch(x, 3, BLOCK=4)
    fill[(1, 65535)](x, 3, BLOCK=4)
    assert driver.launches[-1]["grid"] == (1, 65535, 1)


def test_tile_opt_python_error_in_one_chunk(tmp_path, capsys):
    """A Python error in a pass on one chunk of --split-input-file (tile-assign-layouts on a
    function declaration) ended tile-opt: the other chunks' output was lost, and the message
    named neither the pass nor the file. It is now that chunk's error."""
    from tile.passes.tile_opt import main

    ok = "func.func @f(%t: tensor<64xf32>) -> tensor<64xf32> {\n  return %t : tensor<64xf32>\n}\n"
    path = tmp_path / "in.mlir"
    path.write_text(f"{ok}// -----\nfunc.func private @sink(tensor<64xf32>)\n// -----\n{ok}")
    assert main([str(path), "--split-input-file", "-p", "builtin.module(tile-assign-layouts)"]) == 1
    out, err = capsys.readouterr()
    assert out.count("func.func @f") == 2
    assert f"{path}: error: internal error in pass 'tile-assign-layouts': IndexError" in err


def test_restarted_stage_with_other_num_warps(gpu_target):
    """A tile-opt stage laid out for 8 warps, restarted from its text at the default 4
    (`compile_file` of a dump), compiled into a 128-thread kernel whose other warps' elements
    were never computed; the layouts' warps are now checked against num_warps."""
    import vector_add
    from tile.codegen.compiler import run_stages

    gpu_target()
    x = torch.empty(4096, device="meta")
    text = vector_add.add_kernel.compile(x, x, x, 4096, BLOCK=1024, num_warps=8).asm["tile-opt"]
    with pytest.raises(tile.CompilationError, match=r"spreads a tile over 8 warps, but the kernel has 4"):
        run_stages(text, "sm_90a", {"num_warps": 4, "num_stages": 2}, "tile-opt", "add_kernel", keep_dumps=False)


@pytest.mark.parametrize("value, runs", [("0", True), ("", True), ("false", True), ("1", False)])
def test_compile_only_flag_values(value, runs, monkeypatch):
    """TILE_COMPILE_ONLY=0 was on: every launch compiled and silently ran nothing."""
    monkeypatch.setenv("TILE_COMPILE_ONLY", value)
    for grid in ((1,), [1]):
        out = torch.zeros(4, dtype=torch.int64)
        fill_kernel[grid](out, 8, BLOCK=4)
        assert out.tolist() == ([8] * 4 if runs else [0] * 4)


@pytest.mark.parametrize("pipeline, message", [
    ("builtin.module(func.func(canonicalize, tile-fuse))", "tile pass 'tile-fuse' nested in 'func.func(canonicalize, tile-fuse)'"),
    ("builtin.module(func.func(nope))", "'nope' does not refer to a registered pass")])
def test_tile_opt_pipeline_errors(pipeline, message, tmp_path, capsys):
    """A tile pass nested in func.func(...) was 'not a registered pass' (MLIR's parser knows
    only C++ passes); a pipeline's error is said once, not as each chunk's internal error."""
    from tile.passes.tile_opt import main

    path = tmp_path / "in.mlir"
    path.write_text("module {}\n// -----\nmodule {}\n")
    assert main([str(path), "--split-input-file", "-p", pipeline]) == 1
    err = capsys.readouterr().err
    assert err.startswith("tile-opt: error: ") and message in err and "internal error" not in err


def test_pass_registered_twice():
    """A user pass given a tile pass's name replaced it, or was dropped, by import order."""
    from dataclasses import dataclass

    from tile.passes.registry import PASSES, load_all, register_pass

    load_all()
    with pytest.raises(tile.TileError, match="pass 'tile-fuse' is registered twice: by tile.passes.tile_fuse.TileFuse"):
        @register_pass("tile-fuse")
        @dataclass
        class MyFuse:
            def run(self, module):
                pass
    assert PASSES["tile-fuse"].__module__ == "tile.passes.tile_fuse"


@tile.kernel
def pad_kernel(x, out, PAD: tile.constexpr):
    o = tile.arange(0, 8)
    tile.store(out + o, tile.load(x + o, mask=o < 4, other=PAD))


@pytest.mark.parametrize("grid", [(1,), [1]])
def test_nan_constexpr_keys_do_not_pile_up(grid):
    """A NaN constexpr (float("nan") a launch) made a key that never equals the next one:
    the launch caches grew by an entry every launch."""
    x, out = torch.rand(8), torch.zeros(8)
    for _ in range(3):
        pad_kernel[grid](x, out, PAD=float("nan"))
    assert len(pad_kernel._bound) == len(pad_kernel._fast) == 0
    assert torch.equal(out[:4], x[:4]) and out[4:].isnan().all()


def test_str_constexpr_after_an_int_one():
    """The in-memory launchers keyed constexprs by str(): BLOCK="4" after BLOCK=4 reused
    the int build instead of saying a str is no arange bound."""
    out = torch.zeros(4, dtype=torch.int64)
    fill_kernel[(1,)](out, 2, BLOCK=4)
    with pytest.raises(tile.CompilationError, match="arange end must be a compile-time integer"):
        fill_kernel[(1,)](out, 2, BLOCK="4")


def test_autotune_record_follows_the_compiler(monkeypatch, tmp_path):
    """The saved choice was keyed by the kernel's source and configs only: after a compiler
    change that made the winner stop compiling, every launch failed on it, never re-tuning."""
    from tile.runtime import cache

    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    x, out = torch.rand(100), torch.zeros(100)
    _tuner()[_blocks](x, out, 100)
    monkeypatch.setattr(cache, "compiler_digest", lambda: "another compiler")
    again = _tuner()
    assert again._saved_choice("n=100;target=cpu") is None
