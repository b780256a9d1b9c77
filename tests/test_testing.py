"""tile.testing on the CPU: do_bench's wall-clock fallback and Triton's summaries, the
roofline's arithmetic against measured peaks, and tile.profile's ncu command line and
CSV parsing, through a stand-in `ncu` (TILE_NCU) that prints what Nsight Compute prints."""

import os
import stat
import sys
import time

import pytest
import torch

import tile
from tile.runtime import testing


def test_do_bench_times_the_function_on_the_wall_clock():
    calls = []

    def fn():
        calls.append(1)
        time.sleep(0.002)

    ms = tile.testing.do_bench(fn, warmup=4, rep=20)
    assert 1.9 < ms < 50
    # 1 first call, 5 for the estimate, ~2 warm-up and ~10 timed ones at ~2 ms each
    assert 6 + 1 + 1 <= len(calls) <= 6 + 4 + 12
    low, mid, high = tile.testing.do_bench(fn, warmup=1, rep=10, quantiles=[0.2, 0.5, 0.8])
    assert low <= mid <= high
    times = tile.testing.do_bench(fn, warmup=1, rep=10, return_mode="all")
    assert isinstance(times, list) and min(times) > 1.9
    with pytest.raises(ValueError, match="return_mode"):
        tile.testing.do_bench(fn, return_mode="p50")


def test_do_bench_clears_gradients_and_runs_a_tile_kernel():
    from vector_add import add

    x = torch.randn(1000, requires_grad=True)
    x.grad = torch.ones(1000)
    out = []
    ms = tile.testing.do_bench(lambda: out.append(add(x.detach(), x.detach())), warmup=1, rep=5, grad_to_none=[x])
    assert ms > 0 and x.grad is None
    torch.testing.assert_close(out[-1], 2 * x.detach())


@pytest.mark.parametrize("quantiles, mode, want", [
    ([0.5], "mean", 2.5), ([0.0, 1.0], "mean", [1.0, 4.0]), ([0.25], "mean", 1.75),
    (None, "min", 1.0), (None, "max", 4.0), (None, "mean", 2.5), (None, "median", 2.5), (None, "all", [4.0, 1.0, 3.0, 2.0]),
])
def test_summaries_are_tritons(quantiles, mode, want):
    from triton.testing import _summarize_statistics

    times = [4.0, 1.0, 3.0, 2.0]
    assert testing.summarize(times, quantiles, mode) == want == _summarize_statistics(times, quantiles, mode)


def test_roofline_against_the_peaks(monkeypatch):
    monkeypatch.setitem(testing._PEAKS, ("cpu", "copy"), 100.0)
    monkeypatch.setitem(testing._PEAKS, ("cpu", torch.float32), 2.0)
    r = tile.testing.roofline(0.5, bytes=25_000_000, flops=200_000_000, device="cpu")
    assert r.gbps == pytest.approx(50.0) and r.bandwidth_fraction == pytest.approx(0.5)
    assert r.tflops == pytest.approx(0.4) and r.compute_fraction == pytest.approx(0.2)
    assert r.bound == "memory"
    assert str(r) == "500.0 us, 50 GB/s (50% of 100), 0.4 TFLOP/s (20% of 2)"
    only = tile.testing.roofline(0.5, flops=2e9, device="cpu")
    assert only.gbps is None and only.bound == "compute" and "GB/s" not in str(only)
    with pytest.raises(ValueError, match="positive"):
        tile.testing.roofline(0.0, bytes=1, device="cpu")


def test_roofline_measures_the_peaks_once(monkeypatch):
    monkeypatch.setattr(testing, "_PEAKS", {})
    peak = testing.peak_bandwidth("cpu")
    assert peak > 0.1 and testing._PEAKS == {("cpu", "copy"): peak}
    assert testing.peak_bandwidth("cpu") == peak  # (kept)
    n = 1 << 22
    x = torch.randn(n)
    r = tile.testing.roofline(lambda: x.clone(), bytes=8 * n, device="cpu", warmup=1, rep=5)
    assert 0 < r.bandwidth_fraction < 10 and r.ms > 0


NCU_CSV = '''==PROF== Connected to process 4242 (/usr/bin/python3)
==PROF== Profiling "add_kernel" - 0: 0%....50%....100% - 1 pass
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__throughput.avg.pct_of_peak_sustained_elapsed","gpu__time_duration.sum","sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"
"","","","","","","","","","","","%","usecond","%"
"0","4242","python3","host","add_kernel","1","7","(128, 1, 1)","(97, 1, 1)","0","9.0","88.31","1,234.50","0"
"1","4242","python3","host","matmul_kernel","1","7","(256, 1, 1)","(132, 1, 1)","0","9.0","12.5","310.2","71.25"
==PROF== Disconnected from process 4242
'''


def test_parse_ncu_csv():
    launches = testing.parse_ncu_csv(NCU_CSV)
    assert launches == [
        {"kernel": "add_kernel", "dram__throughput.avg.pct_of_peak_sustained_elapsed": 88.31,
         "gpu__time_duration.sum": 1234.5, "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active": 0.0},
        {"kernel": "matmul_kernel", "dram__throughput.avg.pct_of_peak_sustained_elapsed": 12.5,
         "gpu__time_duration.sum": 310.2, "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active": 71.25},
    ]
    assert testing.parse_ncu_csv("==PROF== nothing profiled\n") == []


def _fake_ncu(tmp_path, output, rc=0):
    """An executable that records its arguments and prints `output` as ncu would."""
    data = tmp_path / "ncu_output.txt"
    data.write_text(output)
    path = tmp_path / "ncu"
    path.write_text(f"#!{sys.executable}\nimport sys\nopen({str(tmp_path / 'args.txt')!r}, 'w').write('\\n'.join(sys.argv[1:]))\n"
                    f"sys.stdout.write(open({str(data)!r}).read())\nsys.stderr.write('ncu: boom\\n')\nsys.exit({rc})\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_profile_runs_ncu_on_the_script(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE_NCU", str(_fake_ncu(tmp_path, NCU_CSV)))
    launches = tile.profile("bench.py", 4096, kernel="add_kernel", launch_count=1)
    assert [l["kernel"] for l in launches] == ["add_kernel", "matmul_kernel"]
    args = (tmp_path / "args.txt").read_text().split("\n")
    assert args[:6] == ["--clock-control", "none", "--csv", "--page", "raw", "--metrics"]
    assert args[6] == ",".join(testing.METRICS) and "dram__throughput.avg.pct_of_peak_sustained_elapsed" in args[6]
    assert args[7:] == ["--kernel-name", "regex:add_kernel", "--launch-count", "1", sys.executable, "bench.py", "4096"]


def test_profile_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE_NCU", str(_fake_ncu(tmp_path, "==PROF== ERR_NVGPUCTRPERM\n", rc=1)))
    with pytest.raises(testing.ProfilerUnavailable, match="exited 1 with no profiled launch:\nncu: boom"):
        tile.profile("bench.py")
    monkeypatch.delenv("TILE_NCU")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(testing.ProfilerUnavailable, match="TILE_NCU"):
        tile.profile("bench.py")


def test_testing_and_torch_load_lazily():
    """`import tile` imports no torch: tile.torch's and tile.testing's modules load at their first
    use (`import tile.torch` is one)."""
    import subprocess

    code = ("import sys, tile; print('torch' in sys.modules); import tile.torch, tile.testing; "
            "print(callable(tile.torch.op), callable(tile.testing.do_bench), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=os.path.dirname(os.path.abspath(__file__)))
    assert out.stdout.split() == ["False", "True", "True", "True"], out.stderr
