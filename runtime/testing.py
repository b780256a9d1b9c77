"""`tile.testing`: timing and profiling kernels.

- `do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean")`:
  Triton's `triton.testing.do_bench`, same arguments and results: `fn` timed with CUDA
  events, a 256 MB buffer zeroed before each run so the L2 holds none of its inputs,
  ~`warmup` ms of warm-up and ~`rep` ms of timed runs. Without a GPU (or `device="cpu"`)
  the wall clock times it (no flush).
- `roofline(fn_or_ms, bytes=None, flops=None)`: achieved GB/s and TFLOP/s against the
  device's peaks, each measured once per device and dtype (a device-to-device copy for the
  bandwidth, counting bytes read plus written; a large matmul, torch's, for the FLOP/s).
- `profile(script, *args, kernel=None)` (also `tile.profile`): runs a script under Nsight
  Compute (`ncu --clock-control none --metrics ... --csv`) and returns each kernel launch's
  metrics (by default DRAM throughput and tensor-pipe utilization). Needs `ncu` (CUDA
  toolkit) on PATH or named by the TILE_NCU environment variable, a GPU, and the rights to
  read its counters (root, or the driver's NVreg_RestrictProfilingToAdminUsers=0).
"""

from __future__ import annotations

import csv
import io
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

_RETURN_MODES = ("min", "max", "mean", "median", "all")


def _on_gpu(device) -> bool:
    import torch

    if device is None:
        return torch.cuda.is_available()
    return torch.device(device).type == "cuda"


def do_bench(fn, warmup: float = 25, rep: float = 100, grad_to_none=None, quantiles=None, return_mode: str = "mean",
             device=None):
    """`fn`'s time in ms, as `triton.testing.do_bench` measures and summarizes it (see the module)."""
    if return_mode not in _RETURN_MODES:
        raise ValueError(f"return_mode must be one of {', '.join(_RETURN_MODES)}, got {return_mode!r}")
    import torch

    if _on_gpu(device):
        cache = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int, device="cuda")
        sync, flush = torch.cuda.synchronize, cache.zero_

        def event():
            return torch.cuda.Event(enable_timing=True)
    else:
        sync, flush = (lambda: None), (lambda: None)

        class event:  # noqa: N801  (a CUDA event's part that do_bench uses, on the wall clock)
            def record(self):
                self.t = time.perf_counter()

            def elapsed_time(self, end):
                return (end.t - self.t) * 1e3

    fn()
    sync()
    start, end = event(), event()
    start.record()
    for _ in range(5):
        flush()
        fn()
    end.record()
    sync()
    estimate = start.elapsed_time(end) / 5
    n_warmup = max(1, int(warmup / estimate)) if estimate > 0 else 1000
    n_repeat = max(1, int(rep / estimate)) if estimate > 0 else 1000
    starts, ends = [event() for _ in range(n_repeat)], [event() for _ in range(n_repeat)]
    for _ in range(n_warmup):
        fn()
    for s, e in zip(starts, ends):
        for x in grad_to_none or ():
            x.grad = None
        flush()
        s.record()
        fn()
        e.record()
    sync()
    return summarize([s.elapsed_time(e) for s, e in zip(starts, ends)], quantiles, return_mode)


def summarize(times: list[float], quantiles=None, return_mode: str = "mean"):
    """Triton's summary of run times: the quantiles (linear interpolation; one is a float), or
    by `return_mode` the min, max, mean, median or the list itself."""
    if quantiles is not None:
        ordered = sorted(times)
        out = []
        for q in quantiles:
            if not 0 <= q <= 1:
                raise ValueError("Quantiles must be in the range [0, 1]")
            point = q * (len(ordered) - 1)
            lo, hi = math.floor(point), math.ceil(point)
            out.append((1 - (point - lo)) * ordered[lo] + (point - lo) * ordered[hi])
        return out[0] if len(out) == 1 else out
    if return_mode == "all":
        return times
    return {"min": min, "max": max, "mean": statistics.mean, "median": statistics.median}[return_mode](times)


# ---- roofline ---------------------------------------------------------------------------
_PEAKS: dict = {}  # (device, what) -> measured peak


def peak_bandwidth(device=None) -> float:
    """GB/s of a 1 GiB copy on `device` (a GPU's device-to-device copy; the CPU's memcpy, 256 MiB),
    counting bytes read plus written; measured once per device."""
    import torch

    dev = torch.device("cuda" if _on_gpu(device) else "cpu") if device is None else torch.device(device)
    key = (str(dev), "copy")
    if key not in _PEAKS:
        nbytes = (1 << 30) if dev.type == "cuda" else (1 << 28)
        src = torch.empty(nbytes // 2, dtype=torch.uint8, device=dev).fill_(1)
        dst = torch.empty_like(src)
        ms = do_bench(lambda: dst.copy_(src), warmup=5, rep=50, return_mode="median", device=dev)
        _PEAKS[key] = nbytes / (ms * 1e-3) / 1e9
    return _PEAKS[key]


def peak_flops(device=None, dtype=None) -> float:
    """TFLOP/s of torch's matmul of `dtype` (bf16 on a GPU, f32 on the CPU), 8192 (CPU: 1024)
    square; measured once per device and dtype."""
    import torch

    dev = torch.device("cuda" if _on_gpu(device) else "cpu") if device is None else torch.device(device)
    dtype = dtype or (torch.bfloat16 if dev.type == "cuda" else torch.float32)
    key = (str(dev), dtype)
    if key not in _PEAKS:
        n = 8192 if dev.type == "cuda" else 1024
        a, b = torch.randn(n, n, device=dev).to(dtype), torch.randn(n, n, device=dev).to(dtype)
        ms = do_bench(lambda: a @ b, warmup=10, rep=100 if dev.type == "cuda" else 20, return_mode="median", device=dev)
        _PEAKS[key] = 2 * n**3 / (ms * 1e-3) / 1e12
    return _PEAKS[key]


@dataclass
class Roofline:
    """Where one kernel's time stands against the device's measured peaks."""

    ms: float
    gbps: float | None
    tflops: float | None
    peak_gbps: float | None
    peak_tflops: float | None

    @property
    def bandwidth_fraction(self) -> float | None:
        return None if self.gbps is None else self.gbps / self.peak_gbps

    @property
    def compute_fraction(self) -> float | None:
        return None if self.tflops is None else self.tflops / self.peak_tflops

    @property
    def bound(self) -> str | None:
        """'memory' or 'compute': the peak it is nearer (None without bytes and flops)."""
        fractions = {k: v for k, v in (("memory", self.bandwidth_fraction), ("compute", self.compute_fraction))
                     if v is not None}
        return max(fractions, key=fractions.get) if fractions else None

    def __str__(self):
        parts = [f"{self.ms * 1e3:.1f} us"]
        if self.gbps is not None:
            parts.append(f"{self.gbps:.0f} GB/s ({100 * self.bandwidth_fraction:.0f}% of {self.peak_gbps:.0f})")
        if self.tflops is not None:
            parts.append(f"{self.tflops:.1f} TFLOP/s ({100 * self.compute_fraction:.0f}% of {self.peak_tflops:.0f})")
        return ", ".join(parts)


def roofline(fn_or_ms, bytes: int | None = None, flops: int | None = None, *, device=None, dtype=None,
             **bench) -> Roofline:
    """A kernel's achieved GB/s (`bytes` moved: read plus written) and TFLOP/s (`flops`) against
    the device's peaks; `fn_or_ms` is its time in ms or a function to time (`do_bench`, with
    `bench`'s arguments, median). `dtype` picks the matmul peak (bf16 by default on a GPU)."""
    ms = fn_or_ms if isinstance(fn_or_ms, (int, float)) else do_bench(fn_or_ms, device=device,
                                                                         **{"return_mode": "median", **bench})
    if not ms > 0:
        raise ValueError(f"a time in ms must be positive, got {ms}")
    gbps = None if bytes is None else bytes / (ms * 1e-3) / 1e9
    tflops = None if flops is None else flops / (ms * 1e-3) / 1e12
    return Roofline(ms, gbps, tflops, None if bytes is None else peak_bandwidth(device),
                    None if flops is None else peak_flops(device, dtype))


# ---- Nsight Compute -----------------------------------------------------------------------
METRICS = (
    "gpu__time_duration.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes.sum.per_second",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",  # mma.sync (sm_80 on)
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",  # wgmma (sm_90)
)


class ProfilerUnavailable(RuntimeError):
    """No `ncu` to run (set TILE_NCU to its path), or it failed."""


def ncu_path() -> str:
    path = os.environ.get("TILE_NCU") or shutil.which("ncu")
    if not path:
        raise ProfilerUnavailable("tile.profile needs Nsight Compute: put `ncu` on PATH or set TILE_NCU to its path")
    return path


def ncu_command(script: str, *args, kernel: str | None = None, metrics=METRICS, launch_skip: int = 0,
                launch_count: int | None = None, python: str | None = None, extra=()) -> list[str]:
    """The `ncu` command line that profiles `python script args` (`kernel`: a regex of kernel names;
    `extra`: more ncu options)."""
    cmd = [ncu_path(), "--clock-control", "none", "--csv", "--page", "raw", "--metrics", ",".join(metrics), *extra]
    if kernel:
        cmd += ["--kernel-name", f"regex:{kernel}"]
    if launch_skip:
        cmd += ["--launch-skip", str(launch_skip)]
    if launch_count is not None:
        cmd += ["--launch-count", str(launch_count)]
    return cmd + [python or sys.executable, script, *map(str, args)]


def parse_ncu_csv(text: str) -> list[dict]:
    """Per profiled launch: {"kernel": name, metric: value, ...} from ncu's `--csv --page raw`
    output (one row a launch, after a units row; ncu's own `==PROF==` lines skipped). Values
    are floats where they read as numbers (thousands separators dropped), else text."""
    rows = list(csv.reader(io.StringIO("\n".join(line for line in text.splitlines() if line.startswith('"')))))
    if not rows:
        return []
    header, out = rows[0], []
    for row in rows[1:]:
        record = dict(zip(header, row))
        if record.get("ID", "").strip() == "" and "Kernel Name" in record:  # (the units row)
            continue
        launch = {"kernel": record.get("Kernel Name", "")}
        for name, value in record.items():
            if "__" in name:
                try:
                    launch[name] = float(value.replace(",", ""))
                except ValueError:
                    launch[name] = value
        out.append(launch)
    return out


def profile(script: str, *args, kernel: str | None = None, metrics=METRICS, timeout: float = 600, **options) -> list[dict]:
    """Run `python script args` under ncu and return each profiled launch's metrics (see
    `parse_ncu_csv`); `options`: `ncu_command`'s (launch_skip, launch_count, python)."""
    return run_ncu(ncu_command(script, *args, kernel=kernel, metrics=metrics, **options), timeout)


def run_ncu(cmd: list[str], timeout: float = 600, env=None) -> list[dict]:
    """Each profiled launch's metrics (`parse_ncu_csv`) from running `ncu_command`'s `cmd`;
    ProfilerUnavailable if ncu failed or profiled nothing."""
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    launches = parse_ncu_csv(done.stdout)
    if done.returncode != 0 or not launches:
        raise ProfilerUnavailable(f"{' '.join(cmd)} exited {done.returncode} with "
                                  f"{'no profiled launch' if not launches else 'an error'}:\n"
                                  f"{(done.stderr or done.stdout)[-2000:]}")
    return launches
