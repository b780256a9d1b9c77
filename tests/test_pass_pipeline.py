"""`tile.Pipeline`, out-of-tree passes and the cache keys they go into.

A plugin pass here rewrites `arith.addf` into another op in the tile stage, so
that which pipeline a kernel was compiled by shows in its results: a stale
cache entry (a pipeline or a pass source that is not in the key) gives a wrong
answer."""

import importlib
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import tile
import vector_add
from tile.codegen import pipelines
from tile.passes import plugins

PLUGIN = '''\
"""`swap-add`: every float add becomes an arith.{new} (a test pass)."""

from dataclasses import dataclass

from mlir import ir
from mlir.rewrite import RewritePatternSet, apply_patterns_and_fold_greedily

from tile.passes.registry import register_pass


def swap(op, rewriter):
    with rewriter.ip:
        new = ir.Operation.create("arith.{new}", results=[op.result.type], operands=list(op.operands))
    rewriter.replace_op(op, new)


@register_pass("swap-add")
@dataclass
class SwapAdd:
    def run(self, module):
        patterns = RewritePatternSet()
        patterns.add("arith.addf", swap)
        apply_patterns_and_fold_greedily(module, patterns.freeze())
'''


@pytest.fixture
def swap_add(tmp_path, monkeypatch):
    """Writes the plugin (`new`: the op an addf becomes) and imports it; again to edit it."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(new="mulf"):
        path = tmp_path / "swap_add_plugin.py"
        path.write_text(PLUGIN.replace("{new}", new))
        module = sys.modules.get("swap_add_plugin")
        if module is None or os.path.dirname(module.__file__) != str(tmp_path):
            sys.modules.pop("swap_add_plugin", None)
            return importlib.import_module("swap_add_plugin")
        importlib.invalidate_caches()
        return importlib.reload(module)  # (re-registers the same class: allowed)

    yield write
    tile.pipeline_edits.clear()


_add = vector_add.add_kernel.fn  # (a Kernel of its own here, and fresh ones: their caches start empty)
add_kernel = tile.kernel(_add)


def _run(kernel, n=300, **meta):
    x, y = torch.randn(n), torch.randn(n)
    out = torch.empty(n)
    kernel[(tile.cdiv(n, 128),)](x, y, out, n, BLOCK=128, **meta)
    return x, y, out


# ---- the object -----------------------------------------------------------------------
def test_default_pipeline_is_pipelines_lists():
    options = {"target": "sm_90a", "num_warps": 8, "num_stages": 3, "divisible_args": "0,1"}
    p = tile.Pipeline("sm_90a", num_warps=8, num_stages=3, divisible_args="0,1")
    assert p.stages() == pipelines.stage_passes(options)
    assert list(p.stage("tile-opt")) == pipelines.tile_opt(options)
    assert str(p).splitlines()[0] == f"tile-opt: builtin.module({', '.join(pipelines.tile_opt(options))})"
    assert [line.split(":")[0] for line in tile.Pipeline().text().splitlines()] == ["tile-opt", "linalg", "llvm"]


def test_edits_by_anchor_and_stage():
    p = (tile.Pipeline()
         .insert_after("tile-fuse", "my-pass{opt=1}")
         .insert_before("tile-verify", "first")
         .replace("tile-small-int-to-float", "a", "b")
         .remove("tile-induction-offsets"))
    p.stage("linalg").append("last-linalg", missing_ok=True)  # (sm_90a's default codegen has no linalg stage)
    p.stage("tile-opt").insert_after("cse", "after-cse")
    opt = list(p.stage("tile-opt"))
    assert opt == ["first", "tile-verify", "canonicalize", "cse", "after-cse", "tile-canonicalize{merge=0}", "a", "b",
                   "tile-fuse", "my-pass{opt=1}"]
    assert p.stage("linalg")[-1] == "last-linalg" and "my-pass" in p.stage("tile-opt")
    assert "tile-opt: builtin.module(first, tile-verify," in p.text()
    # The same edits, applied to sm_90a's pipeline: after its tile-fuse, before its layouts.
    gpu = p.stages("sm_90a", num_stages=3)["tile-opt"]
    assert gpu[gpu.index("tile-fuse") + 1] == "my-pass{opt=1}"
    assert gpu[gpu.index("my-pass{opt=1}") + 1].startswith("tile-assign-layouts")


def test_edit_errors_name_the_anchor():
    with pytest.raises(tile.TileError, match="'tile-pipeline' is not in the cpu pipeline.*missing_ok"):
        tile.Pipeline().insert_after("tile-pipeline", "x")
    with pytest.raises(tile.TileError, match=r"'canonicalize' occurs 2 times .*tile-opt\[2\], linalg\[4\].*stage="):
        tile.Pipeline().insert_after("canonicalize", "x")
    with pytest.raises(tile.TileError, match="no stage 'gpu'.*tile-opt, linalg, llvm"):
        tile.Pipeline().stage("gpu")
    with pytest.raises(tile.TileError, match="textual spec"):
        tile.Pipeline().insert_after("tile-fuse", 3)
    # An edit for GPUs only: skipped on the CPU with missing_ok, an error at the CPU launch without it.
    p = tile.Pipeline("sm_90a", num_stages=3).insert_after("tile-pipeline", "cse", missing_ok=True)
    assert p.stages("cpu") == tile.Pipeline().stages()
    strict = tile.Pipeline("sm_90a", num_stages=3).insert_after("tile-pipeline", "cse")
    kernel = tile.kernel(pipeline=strict)(_add)
    with pytest.raises(tile.TileError, match="'tile-pipeline' is not in the cpu pipeline"):
        _run(kernel)


# ---- plugins, and the cache keys ------------------------------------------------------
def test_stale_cache_plugin_pass_and_its_source(swap_add):
    """Compiled with a pass that changes results, then without it, then with its source
    edited: each build gives its own answer, in memory and on disk."""
    swap_add("mulf")
    x, y, out = _run(add_kernel, passes=["swap-add"])
    torch.testing.assert_close(out, x * y)
    x, y, out = _run(add_kernel)  # (the same kernel object: its in-memory caches too)
    torch.testing.assert_close(out, x + y)
    x, y, out = _run(tile.kernel(_add))  # (a new kernel object: the disk cache alone)
    torch.testing.assert_close(out, x + y)
    swap_add("subf")
    x, y, out = _run(add_kernel, passes=["swap-add"])
    torch.testing.assert_close(out, x - y)
    x, y, out = _run(tile.kernel(_add), passes=["swap-add"])
    torch.testing.assert_close(out, x - y)
    paths = {add_kernel.compile(*_run(add_kernel)[:2], torch.empty(300), 300, BLOCK=128, **m).metadata["cache_path"]
             for m in ({}, {"passes": ["swap-add"]})}
    assert len(paths) == 2


def test_kernel_pipeline_and_global_edits(swap_add):
    swap_add("mulf")
    kernel = tile.kernel(pipeline=tile.Pipeline().insert_before("tile-fuse", "swap-add"))(_add)
    x, y, out = _run(kernel)
    torch.testing.assert_close(out, x * y)
    launcher = kernel.compile(x, y, out, 300, BLOCK=128)
    assert "tile-small-int-to-float, swap-add, tile-fuse" in launcher.metadata["pipeline"]
    # Global edits reach a kernel already launched through its fast path, and leave with clear().
    for _ in range(2):
        x, y, out = _run(add_kernel)
    torch.testing.assert_close(out, x + y)
    tile.pipeline_edits.insert_after("tile-fuse", "swap-add")
    x, y, out = _run(add_kernel)
    torch.testing.assert_close(out, x * y)
    tile.pipeline_edits.clear()
    x, y, out = _run(add_kernel)
    torch.testing.assert_close(out, x + y)


def test_launch_passes_as_a_pipeline(swap_add):
    swap_add("mulf")
    edits = tile.Pipeline().replace("tile-fuse", "swap-add", "tile-fuse")
    x, y, out = _run(add_kernel, passes=edits)
    torch.testing.assert_close(out, x * y)
    with pytest.raises(tile.TileError, match="'no-such-pass' does not refer to a registered pass.*TILE_PASS_PLUGINS"):
        _run(add_kernel, passes=["no-such-pass"])


def test_plugins_from_env_and_entry_points(tmp_path, monkeypatch):
    """TILE_PASS_PLUGINS (a path) and the `tile.passes` entry point group (a module) load
    before the first compilation; a plugin may add its pass to every kernel."""
    (tmp_path / "env_plugin.py").write_text(PLUGIN.replace("{new}", "mulf").replace("swap-add", "env-swap-add")
                                            + "\nimport tile\ntile.pipeline_edits.stage('tile-opt').append('env-swap-add')\n")
    (tmp_path / "ep_plugin.py").write_text(PLUGIN.replace("{new}", "subf").replace("swap-add", "ep-swap-add"))
    dist = tmp_path / "ep_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[tile.passes]\nswap = ep_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(plugins, "_entry_points_loaded", False)
    monkeypatch.setattr(plugins, "_env_loaded", set())
    monkeypatch.setenv("TILE_PASS_PLUGINS", str(tmp_path / "env_plugin.py"))
    try:
        x, y, out = _run(add_kernel)
        torch.testing.assert_close(out, x * y)
        assert "ep-swap-add" in plugins.PASSES and "ep_plugin" in sys.modules
        tile.pipeline_edits.clear()
        x, y, out = _run(add_kernel, passes=["ep-swap-add"])
        torch.testing.assert_close(out, x - y)
    finally:
        tile.pipeline_edits.clear()


def test_tile_opt_loads_a_plugin_file(tmp_path):
    plugin = tmp_path / "swap_add_plugin.py"
    plugin.write_text(PLUGIN.replace("{new}", "mulf"))
    src = tmp_path / "in.mlir"
    src.write_text("func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n"
                   "  %c = arith.addf %a, %b : tensor<4xf32>\n  return %c : tensor<4xf32>\n}\n")
    run = subprocess.run([sys.executable, "-m", "tile.passes.tile_opt", str(src), f"--load-pass-plugin={plugin}",
                          "--pass-pipeline=builtin.module(swap-add, canonicalize)"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "arith.mulf %arg0, %arg1" in run.stdout and "addf" not in run.stdout
    missing = subprocess.run([sys.executable, "-m", "tile.passes.tile_opt", str(src), "--load-pass-plugin=no_such_mod"],
                             capture_output=True, text=True)
    assert missing.returncode == 1 and "cannot load the pass plugin 'no_such_mod'" in missing.stderr


# ---- the GPU path -------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_gpu_build_runs_the_plugin_pass(swap_add, gpu_target, target):
    swap_add("mulf")
    gpu_target(target)
    n = 1000
    x, y, out = (torch.empty(n, device="meta") for _ in range(3))
    edits = tile.Pipeline().insert_after("tile-fuse", "swap-add")  # (written for the CPU, applied to the GPU's)
    plain = add_kernel.compile(x, y, out, n, BLOCK=256)
    swapped = add_kernel.compile(x, y, out, n, BLOCK=256, passes=edits)
    assert "tile-fuse, swap-add, tile-assign-layouts" in swapped.metadata["pipeline"]
    assert "add.f32" in plain.asm["ptx"] and "mul.f32" not in plain.asm["ptx"]
    assert "mul.f32" in swapped.asm["ptx"] and "add.f32" not in swapped.asm["ptx"]
    assert plain.metadata["cache_path"] != swapped.metadata["cache_path"]


def test_restart_from_a_stage_file_through_a_pipeline(swap_add, tmp_path):
    from tile.codegen.compiler import compile_file

    swap_add("mulf")
    x, y, out = _run(add_kernel)
    path = tmp_path / "01-stage-tile.mlir"
    path.write_text(add_kernel.compile(x, y, out, 300, BLOCK=128).asm["tile"])
    edited = compile_file(str(path), "cpu", pipeline=tile.Pipeline().insert_after("tile-fuse", "swap-add"))
    assert "arith.mulf" in edited.stages["tile-opt"] and "swap-add" in edited.pipeline
    assert "arith.mulf" not in compile_file(str(path), "cpu").stages["tile-opt"]


def test_plugin_file_named_as_an_imported_module(tmp_path):
    (tmp_path / "json.py").write_text("")
    with pytest.raises(tile.TileError, match="module 'json': a module of that name is imported already"):
        plugins.load_plugin(str(tmp_path / "json.py"))
