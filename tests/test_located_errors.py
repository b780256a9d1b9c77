"""The issue's bar: no internal error without a user location over the Triton tutorials and
the fuzz corpus. Every kernel specialization the fuzz tests (tests/test_fuzz_*.py) and the
tutorials' main()s launch on the CPU is compiled for sm_90a too (tests/sm90a_probe.py, in a
pytest of its own), and every tutorial's benchmark launches are; whatever a build raises must
be a `CompilationError` at the user's line (or a `LaunchError` naming an argument), never an
internal error, an error without a location, or a crash."""

import glob
import json
import os
import subprocess
import sys

import pytest

import tile

from sm90a_probe import classify

HERE = os.path.dirname(os.path.abspath(__file__))


def test_probe_classifies():
    assert classify(tile.CompilationError("bad", "/x/k.py", 3, 1)) == "located"
    assert classify(tile.CompilationError("k: internal compiler error compiling k for sm_90a: ...", "/x/k.py", 3)) == "unlocated"
    assert classify(tile.CompilationError("bad")) == classify(tile.TileError("bad")) == classify(KeyError(1)) == "unlocated"
    assert classify(tile.LaunchError("argument 'x'")) == "launch"
    assert classify(tile.CompilationError("the source of kernel k cannot be read (defined by exec ...)")) == "sourceless"
    assert classify(tile.CompilationError("the source of h cannot be read (defined by exec ...)")) == "unlocated"


def test_cpu_launches_compile_for_sm90a_or_say_where(tmp_path):
    out = tmp_path / "probe.json"
    files = sorted(glob.glob(os.path.join(HERE, "test_fuzz_*.py")))
    tutorials = os.path.join(HERE, "test_triton_tutorials.py") + "::test_port_runs_on_the_cpu"
    env = {**os.environ, "SM90A_PROBE_OUT": str(out), "PYTHONPATH": os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")])}
    env.pop("TILE_TARGET", None)
    env.pop("TILE_COMPILE_ONLY", None)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "sm90a_probe", "-p", "no:cacheprovider", *files, tutorials],
                         env=env, capture_output=True, text=True, timeout=1800, cwd=os.path.dirname(HERE))
    assert run.returncode in (0, 1) and out.exists(), run.stdout[-3000:] + run.stderr[-3000:]  # (not a crash)
    records = json.loads(out.read_text())
    assert len({r["kernel"] for r in records}) > 50  # (the probe saw the corpus)
    bad = [r for r in records if r["kind"] == "unlocated"]
    assert not bad, "\n".join(f"{r['test']}: {r['kernel']}: {r['error']}" for r in bad)


PORTS = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(os.path.dirname(HERE), "examples", "triton_tutorials", "t*.py")))


@pytest.mark.parametrize("port", PORTS)
def test_tutorial_benchmark_launches_build_or_say_where(port, gpu_target):
    import importlib

    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples", "triton_tutorials"))
    gpu_target("sm_90a")
    for kernel, args, meta in importlib.import_module(port).benchmark_launches():
        kernel = getattr(kernel, "kernel", kernel)
        try:
            kernel.compile(*args, **meta)
        except Exception as e:
            assert classify(e) != "unlocated", f"{kernel.name}: {type(e).__name__}: {e}"
