"""tile.profile(kernel, grid, *args, bytes=, flops=, ncu=) and tile.profile.compare on the CPU:
the time and roofline of a launch, an autotuned kernel at its chosen config, the ncu child
process (through a stand-in `ncu` that runs the command it is given and prints a CSV, as
Nsight Compute does), and the bar chart. The real ncu runs in benchmarks/torch_on_device.py."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap

import pytest
import torch

import tile
from tile.runtime import testing


@tile.kernel
def scale_kernel(x, out, n, alpha, BLOCK: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    tile.store(out + offs, tile.load(x + offs, mask=offs < n) * alpha, mask=offs < n,)


@tile.autotune(configs=[tile.Config({"BLOCK": 64}), tile.Config({"BLOCK": 128})], key=["n"])
@tile.kernel
def tuned_scale_kernel(x, out, n, alpha, BLOCK: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    tile.store(out + offs, tile.load(x + offs, mask=offs < n) * alpha, mask=offs < n)


@pytest.fixture
def peaks(monkeypatch):
    monkeypatch.setitem(testing._PEAKS, ("cpu", "copy"), 100.0)
    monkeypatch.setitem(testing._PEAKS, ("cpu", torch.float32), 2.0)


def test_profile_times_a_launch(peaks):
    n = 1000
    x, out = torch.randn(n), torch.empty(n)
    p = tile.profile(scale_kernel, (tile.cdiv(n, 128),), x, out, n, 3.0, BLOCK=128, bytes=8 * n, warmup=1, rep=5)
    torch.testing.assert_close(out, 3 * x)
    assert p.name == "scale_kernel" and p.ms > 0 and p.ncu is None
    assert p.gbps == pytest.approx(8 * n / (p.ms * 1e-3) / 1e9)
    assert p.roofline.peak_gbps == 100.0 and p.tflops is None
    assert "scale_kernel:" in str(p)


def test_profile_of_an_autotuned_kernel_uses_its_choice(peaks):
    n = 777
    x, out = torch.randn(n), torch.empty(n)
    p = tile.profile(tuned_scale_kernel, lambda meta: (tile.cdiv(n, meta["BLOCK"]),), x, out, n, 2.0,
                     flops=n, warmup=1, rep=5)
    torch.testing.assert_close(out, 2 * x)
    assert p.name == "tuned_scale_kernel" and p.tflops is not None and p.gbps is None


def test_profile_rejects_what_is_not_a_kernel():
    with pytest.raises(tile.LaunchError, match="not a tile kernel"):
        tile.profile(lambda: None, (1,), torch.empty(1))
    with pytest.raises(tile.LaunchError, match="grid is missing"):
        tile.profile(scale_kernel)


FAKE_NCU = '''\
#!{python}
"""A stand-in for ncu: record the arguments, run the profiled command, print ncu's CSV."""
import json, subprocess, sys
argv = sys.argv[1:]
json.dump(argv, open({record!r}, "w"))
command = argv[argv.index("--launch-count") + 2:]
done = subprocess.run(command)
if done.returncode:
    sys.exit(done.returncode)
metrics = argv[argv.index("--metrics") + 1].split(",")
values = {{"gpu__time_duration.sum": "250000", "dram__bytes.sum.per_second": "3,010,000,000,000",
          "launch__registers_per_thread": "32"}}
print("==PROF== Connected to process 1")
print(",".join('"%s"' % h for h in ["ID", "Kernel Name"] + metrics))
print(",".join('""' for _ in range(len(metrics) + 2)))
print(",".join('"%s"' % v for v in ["0", "scale_kernel"] + [values.get(m, "0") for m in metrics]))
'''


def test_profile_under_ncu_runs_the_launch_in_a_child(tmp_path, monkeypatch, peaks):
    record = tmp_path / "argv.json"
    ncu = tmp_path / "ncu"
    ncu.write_text(FAKE_NCU.format(python=sys.executable, record=str(record)))
    ncu.chmod(ncu.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("TILE_NCU", str(ncu))
    # the child process must find this test module's kernel: it imports it by its module name
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")]))
    n = 300
    x, out = torch.randn(n), torch.empty(n)
    p = tile.profile(scale_kernel, (3,), x, out, n, 0.5, BLOCK=128, bytes=8 * n, ncu=True, warmup=1, rep=3)
    argv = json.loads(record.read_text())
    assert argv[:2] == ["--clock-control", "none"] and "--print-units" in argv
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--section"] == list(
        __import__("tile.runtime.profiling", fromlist=["SECTIONS"]).SECTIONS)
    assert argv[argv.index("--kernel-name") + 1] == "regex:^scale_kernel$"
    assert argv[argv.index("--launch-skip") + 1] == "1"
    assert p.ncu["dram_gbps"] == pytest.approx(3010.0) and p.ncu["time_ms"] == pytest.approx(0.25)
    assert p.ncu["registers"] == 32.0


def test_profile_under_ncu_loads_a_script_kernel(tmp_path, monkeypatch, peaks):
    """A kernel of a script (run as __main__ there) is loaded from its file, not imported."""
    script = tmp_path / "my_script.py"
    script.write_text(textwrap.dedent('''\
        import tile

        @tile.kernel
        def neg_kernel(x, out, n, BLOCK: tile.constexpr):
            offs = tile.arange(0, BLOCK)
            tile.store(out + offs, -tile.load(x + offs, mask=offs < n), mask=offs < n)

        if __name__ == "__main__":
            raise SystemExit("the child must not run the script's main part")
        '''))
    record, ncu = tmp_path / "argv.json", tmp_path / "ncu"
    ncu.write_text(FAKE_NCU.format(python=sys.executable, record=str(record)))
    ncu.chmod(ncu.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("TILE_NCU", str(ncu))
    namespace = {"__name__": "__main__"}
    monkeypatch.setitem(sys.modules, "__main__", type(sys)("__main__"))
    code = compile(script.read_text().split("if __name__")[0], str(script), "exec")
    exec(code, namespace)  # noqa: S102  (as `python my_script.py` defines it)
    x, out = torch.randn(10), torch.empty(10)
    p = tile.profile(namespace["neg_kernel"], (1,), x, out, 10, BLOCK=16, ncu=True, warmup=1, rep=3)
    torch.testing.assert_close(out, -x)
    assert p.ncu["dram_gbps"] == pytest.approx(3010.0)


def test_compare_draws_the_bars(tmp_path, peaks):
    n = 1000
    x, out = torch.randn(n), torch.empty(n)
    profiles = {f"BLOCK {b}": tile.profile(scale_kernel, (tile.cdiv(n, b),), x, out, n, 1.0, BLOCK=b, bytes=8 * n,
                                           warmup=1, rep=3) for b in (64, 256)}
    path = tile.profile.compare(profiles, str(tmp_path / "bars.svg"))
    svg = open(path).read()
    assert svg.count('class="bar"') == 2 and 'class="peak"' in svg and "BLOCK 64" in svg
    png = tile.profile.compare(profiles, str(tmp_path / "bars.png"))
    assert os.path.exists(png) and png.endswith((".png", ".svg"))
    with pytest.raises(ValueError, match="no flops"):
        tile.profile.compare(profiles, str(tmp_path / "x.svg"), metric="tflops")
    with pytest.raises(ValueError, match="no profiles"):
        tile.profile.compare({}, str(tmp_path / "y.svg"))
