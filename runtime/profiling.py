"""`tile.profile`: one kernel's launch measured against the device's roofline, optionally
under Nsight Compute, and `tile.profile.compare`, the bar chart of several versions.

    p = tile.profile(add_kernel, grid, x, y, out, n, BLOCK=1024, bytes=3 * x.nbytes)
    p.ms, p.gbps, p.roofline.bandwidth_fraction        # do_bench's median; the copy ceiling's share
    p = tile.profile(..., ncu=True)
    p.ncu["dram_gbps"], p.ncu["registers"], ...        # that one launch under ncu
    tile.profile.compare({"v1": p1, "v2": p2}, "bars.png")

The time is `tile.testing.do_bench`'s median of launches with the L2 flushed between
them, `bytes` (read plus written) and `flops` turn it into GB/s and TFLOP/s, and the peaks
are the device's measured copy and matmul rates (`tile.testing.roofline`). Registers,
spills and shared memory come from ptxas's report of the launched kernel.

With `ncu=True` the launch runs once more, in a child process under Nsight Compute
(`--clock-control none`, the SpeedOfLight, MemoryWorkloadAnalysis and
ComputeWorkloadAnalysis sections, base units): ncu profiles processes, not launches, so
the child loads the arguments (saved with `torch.save`) and the kernel (imported from its
module, or its file when that is a script) and launches it twice, the second launch
profiled. A kernel must therefore be defined at the top level of an importable module or
file. An autotuned kernel runs at the config its autotuner chose for these arguments.

`tile.profile(script, *args, kernel=...)` with a script's path is `tile.testing.profile`:
every launch of the script's kernels under ncu.
"""

from __future__ import annotations

import html
import importlib
import os
import sys
import tempfile
from dataclasses import dataclass, field

from ..frontend.errors import LaunchError
from . import testing
from .autotune import Autotuner, Heuristics
from .kernel import Kernel

# ncu's raw metrics a profile returns, by the name it gives them (base units: bytes, seconds, %)
NCU_METRICS = {
    "time_ms": "gpu__time_duration.sum",
    "dram_gbps": "dram__bytes.sum.per_second",
    "dram_pct_of_peak": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "tensor_pipe_pct": "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
    "mma_pipe_pct": "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "registers": "launch__registers_per_thread",
    "occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "local_bytes": "launch__stack_size",
}
SCALE = {"time_ms": 1e-6, "dram_gbps": 1e-9}  # ns -> ms, bytes/s -> GB/s
SECTIONS = ("SpeedOfLight", "MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis")


@dataclass
class Profile:
    """One kernel launch's measurements."""

    name: str
    ms: float
    roofline: testing.Roofline
    ptxas: dict = field(default_factory=dict)  # registers, spill_stores, spill_loads, stack_frame
    shared_bytes: int | None = None
    ncu: dict | None = None  # NCU_METRICS' names -> values, where ncu=True

    @property
    def gbps(self):
        return self.roofline.gbps

    @property
    def tflops(self):
        return self.roofline.tflops

    def __str__(self):
        text = f"{self.name}: {self.roofline}"
        if self.ptxas:
            text += f"; {self.ptxas.get('registers')} registers, {self.ptxas.get('spill_stores', 0)} bytes spilled"
        if self.ncu:
            text += "; ncu: " + ", ".join(f"{k} {v:.4g}" for k, v in self.ncu.items() if isinstance(v, float))
        return text


def _inner_kernel(kernel, args, meta):
    """(the plain Kernel, its launch keywords): an autotuner's at the config it chose for these
    arguments (it must have launched with them); heuristics' values added."""
    if isinstance(kernel, Heuristics):
        return _inner_kernel(kernel.kernel, args, kernel.with_values(args, meta))
    if isinstance(kernel, Autotuner):
        config = kernel.best_config(*args, **meta)
        if config is None:
            raise LaunchError(f"tile.profile: {kernel.kernel.name} has no autotuned config for these arguments yet")
        return kernel.kernel, {**meta, **config.all_kwargs()}
    return kernel, meta


def _launched(kernel, args, meta):
    """The launcher a launch of these arguments uses (the launch just made compiled it)."""
    try:
        return kernel.compile(*args, **meta)
    except Exception:  # noqa: BLE001  (only the report's registers are lost)
        return None


class _Profiler:
    Profile = Profile  # (tile.profile.Profile: a row of `compare` measured some other way)

    def __call__(self, kernel, /, *args, bytes: int | None = None, flops: int | None = None, ncu: bool = False,
                 warmup: float = 25, rep: float = 100, dtype=None, **meta):
        if isinstance(kernel, (str, os.PathLike)):
            return testing.profile(kernel, *args, **meta)
        if not args:
            raise LaunchError("tile.profile(kernel, grid, *args, ...): the grid is missing")
        if not isinstance(kernel, (Kernel, Autotuner, Heuristics)):
            raise LaunchError(f"tile.profile: {kernel!r} is not a tile kernel (a @tile.kernel, @tile.autotune or @tile.heuristics object)")
        grid, args = args[0], args[1:]
        device = next((a.device for a in args if hasattr(a, "device") and hasattr(a, "data_ptr")), None)

        def launch():
            kernel[grid](*args, **meta)

        launch()  # (compiles, and an autotuner chooses its config)
        inner, inner_meta = _inner_kernel(kernel, args, meta)
        ms = testing.do_bench(launch, warmup=warmup, rep=rep, return_mode="median", device=device)
        roof = testing.roofline(ms, bytes=bytes, flops=flops, device=device, dtype=dtype)
        launcher = _launched(inner, args, inner_meta)
        metadata = getattr(launcher, "metadata", None) or {}
        result = Profile(inner.name, ms, roof, dict(metadata.get("ptxas") or {}), metadata.get("shared_bytes"))
        if ncu:
            result.ncu = _under_ncu(inner, grid, args, inner_meta)
        return result

    def compare(self, profiles: dict, path: str, metric: str | None = None, title: str | None = None) -> str:
        """A bar chart of `profiles` (name -> Profile) at `path`: achieved GB/s (or TFLOP/s where
        the profiles have flops and no bytes, or `metric="tflops"`), the device's measured peak
        drawn as a line. A PNG through matplotlib where it is installed; otherwise, or for a
        path ending in .svg, an SVG. Returns the path written (its suffix .svg where it fell back)."""
        if not profiles:
            raise ValueError("tile.profile.compare: no profiles")
        metric = metric or ("gbps" if all(p.gbps is not None for p in profiles.values()) else "tflops")
        if metric not in ("gbps", "tflops"):
            raise ValueError(f"tile.profile.compare: metric must be 'gbps' or 'tflops', got {metric!r}")
        values = {name: getattr(p, metric) for name, p in profiles.items()}
        missing = [name for name, v in values.items() if v is None]
        if missing:
            raise ValueError(f"tile.profile.compare: {', '.join(missing)} measured no "
                             f"{'bytes' if metric == 'gbps' else 'flops'}")
        peak = max((p.roofline.peak_gbps if metric == "gbps" else p.roofline.peak_tflops) or 0
                   for p in profiles.values())
        unit = "GB/s" if metric == "gbps" else "TFLOP/s"
        title = title or f"achieved {unit} (line: the device's measured peak, {peak:.0f})"
        if not path.endswith(".svg"):
            try:
                return _png(values, peak, unit, title, path)
            except ImportError:
                path = os.path.splitext(path)[0] + ".svg"
        return _svg(values, peak, unit, title, path)


profile = _Profiler()


def _under_ncu(kernel, grid, args, meta) -> dict:
    """The NCU_METRICS of one launch of kernel[grid](*args, **meta), made by a child process."""
    import torch

    fn = kernel.fn
    module = fn.__module__
    source = fn.__code__.co_filename
    if callable(grid):
        grid = grid(dict(meta))
    with tempfile.TemporaryDirectory(prefix="tile-profile-") as tmp:
        saved = os.path.join(tmp, "launch.pt")
        torch.save({"module": module, "file": source, "name": fn.__name__, "grid": tuple(grid), "args": list(args),
                    "meta": meta}, saved)
        cmd = testing.ncu_command(
            "-c", "import sys; from tile.runtime.profiling import _child; _child(sys.argv[1])", saved,
            kernel=f"^{kernel.name}$", metrics=NCU_METRICS.values(), launch_skip=1, launch_count=1,
            extra=["--print-units", "base", *[a for s in SECTIONS for a in ("--section", s)]])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        raw = testing.run_ncu(cmd, env=env)[-1]
    return {name: raw[metric] * SCALE.get(name, 1) if isinstance(raw.get(metric), float) else raw.get(metric)
            for name, metric in NCU_METRICS.items() if metric in raw}


def _load_kernel(module: str, path: str, name: str):
    """The kernel `name` of `module` (imported), or of the file at `path` run as a module
    that is not __main__ (a script's kernel)."""
    if module != "__main__":
        try:
            obj = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            obj = None
        if obj is not None:
            return getattr(obj, "kernel", obj)  # (an autotuner's kernel)
    spec = importlib.util.spec_from_file_location("tile_profiled_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    obj = getattr(mod, name)
    return getattr(obj, "kernel", obj)


def _child(saved: str) -> None:
    """Under ncu: two launches of the saved one (the first loads the module; ncu skips it)."""
    import torch

    launch = torch.load(saved, weights_only=False)
    kernel = _load_kernel(launch["module"], launch["file"], launch["name"])
    for _ in range(2):
        kernel[launch["grid"]](*launch["args"], **launch["meta"])
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _png(values: dict, peak: float, unit: str, title: str, path: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(values) + 2), 4))
    ax.bar(list(values), list(values.values()), color="#4878a8")
    if peak:
        ax.axhline(peak, color="#c44e52", linestyle="--")
    ax.set_ylabel(unit)
    ax.set_title(title, fontsize=9)
    for i, v in enumerate(values.values()):
        ax.text(i, v, f"{v:.0f}" + (f" ({100 * v / peak:.0f}%)" if peak else ""), ha="center", va="bottom", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _svg(values: dict, peak: float, unit: str, title: str, path: str) -> str:
    """The chart as a self-contained SVG (no plotting library needed)."""
    width, height, left, top, bottom, bar = 120 * len(values) + 80, 320, 60, 40, 60, 70
    top_value = max([peak, *values.values()]) * 1.1 or 1.0

    def y(v):
        return top + (height - top - bottom) * (1 - v / top_value)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
             f'font-size="11">', f'<text x="{left}" y="20">{html.escape(title)}</text>',
             f'<text x="8" y="{top - 8}">{html.escape(unit)}</text>',
             f'<line x1="{left}" y1="{height - bottom}" x2="{width - 10}" y2="{height - bottom}" stroke="black"/>']
    for i, (name, v) in enumerate(values.items()):
        x = left + 20 + 120 * i
        parts.append(f'<rect class="bar" x="{x}" y="{y(v):.1f}" width="{bar}" height="{y(0) - y(v):.1f}" '
                     f'fill="#4878a8"><title>{html.escape(name)}: {v:.1f}</title></rect>')
        parts.append(f'<text x="{x + bar / 2}" y="{y(v) - 4:.1f}" text-anchor="middle">{v:.0f}'
                     + (f" ({100 * v / peak:.0f}%)" if peak else "") + "</text>")
        parts.append(f'<text x="{x + bar / 2}" y="{height - bottom + 16}" text-anchor="middle">{html.escape(name)}</text>')
    if peak:
        parts.append(f'<line class="peak" x1="{left}" y1="{y(peak):.1f}" x2="{width - 10}" y2="{y(peak):.1f}" '
                     f'stroke="#c44e52" stroke-dasharray="6,4"/>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")
    return path
