"""Writing a harness run down: per-kernel JSON, a bar chart and a markdown summary.

Kept apart from harness.py so the measuring code stays short; matplotlib is
imported only to draw the chart (it is not needed to fill the cache).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
from collections import defaultdict

IMPLS = ("tile", "triton", "torch")
COLORS = {"tile": "#1f77b4", "triton": "#ff7f0e", "torch": "#7f7f7f"}


def run_metadata(command: str, ceiling_gbs: float, copy_bytes: int) -> dict:
    """Where and how the numbers were taken, so a results folder explains itself."""
    import torch

    try:
        import triton

        triton_version = triton.__version__
    except Exception as e:  # noqa: BLE001  (the report still says what failed)
        triton_version = f"unavailable ({e!r})"[:200]
    return {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "none",
        "torch": torch.__version__, "cuda": torch.version.cuda, "triton": triton_version,
        "python": platform.python_version(), "command": command,
        "copy_ceiling_gbs": ceiling_gbs, "copy_bytes": copy_bytes,
    }


def _is_flops(entry) -> bool:
    """Compute-bound points (matmul) carry a FLOP count: their metric is TFLOP/s, against torch (cuBLAS)."""
    return bool(entry.get("flops"))


def _label(entry) -> str:
    return f"{entry['kernel']} {'x'.join(map(str, entry['shape']))} {entry['dtype'].replace('float', 'f')}"


def _cell(r) -> str:
    if r is None:
        return "-"
    if r["status"] != "ok":
        return f"**{r['status']}**"
    if "tflops" in r:
        pct = f" ({r['pct_of_torch']:.0f}%)" if "pct_of_torch" in r else ""
        return f"{r['tflops']:.0f}{pct}"
    return f"{r['gbs']:.0f} ({r['pct_of_copy']:.0f}%)"


def _ratio(entry) -> str:
    a, b = entry["impls"].get("tile"), entry["impls"].get("triton")
    if a and b and a["status"] == b["status"] == "ok":
        return f"{b['ms'] / a['ms']:.2f}x"
    return "-"


def write_json(out_dir: str, results: list, meta: dict) -> list[str]:
    by_kernel = defaultdict(list)
    for e in results:
        by_kernel[e["kernel"]].append(e)
    paths = []
    for kernel, entries in by_kernel.items():
        path = os.path.join(out_dir, f"{kernel}.json")
        with open(path, "w") as f:
            json.dump({"meta": meta, "results": entries}, f, indent=1)
        paths.append(path)
    return paths


def config_label(cfg: dict) -> str:
    """A matmul config as BMxBNxBK/warps/stages (tile's or Triton's names); otherwise its num_warps."""
    if "BLOCK_M" in cfg or "BM" in cfg:
        bm, bn, bk = (cfg.get(k, cfg.get(k2)) for k, k2 in (("BLOCK_M", "BM"), ("BLOCK_N", "BN"), ("BLOCK_K", "BK")))
        persistent = f", persistent on {cfg['programs']}" if "programs" in cfg else ""
        return f"{bm}x{bn}x{bk}/{cfg['num_warps']}w/{cfg['num_stages']}s{persistent}"
    return str(cfg.get("num_warps"))


def _section(title: str, text: str, columns: list[str]) -> list[str]:
    """A markdown section's lines: its title, its text, and the header of its table."""
    return ["", f"## {title}", "", text, "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def _quartiles(r: dict, digits: int) -> str:
    """A median ratio and its quartiles (`matmul_rounds.ratio_summary`), as two table cells."""
    return f"{r['median']:.{digits}f}x | {r['low']:.{digits}f}x to {r['high']:.{digits}f}x"


def write_markdown(out_dir: str, results: list, meta: dict) -> str:
    bandwidth = [e for e in results if not _is_flops(e)]
    compute = [e for e in results if _is_flops(e)]
    lines = [
        "# Seed kernels: tile vs Triton vs torch", "",
        f"- date: {meta['date_utc']}", f"- device: {meta['device']}",
        f"- torch {meta['torch']} (CUDA {meta['cuda']}), triton {meta['triton']}, python {meta['python']}",
        f"- command: `{meta['command']}`",
        f"- copy ceiling: {meta['copy_ceiling_gbs']:.0f} GB/s ({meta['copy_bytes'] >> 20} MiB device-to-device copy, "
        "bytes read + written)", "",
        "GB/s counts each input read once and the output written once; in parentheses, % of the copy ceiling. "
        "Every output was checked against torch before timing; a failed check is shown instead of a number. "
        "tile vs Triton: Triton's time over tile's (above 1x: tile is faster). At the memory-bound points tile "
        "and Triton are each timed with half, the default and twice the default num_warps, and each is "
        "reported at its best (the warps column: tile / Triton). Each implementation's time is the best of three "
        "medians, taken in turn with the others'. Same-size copy: a device-to-device copy of the point's bytes "
        "(half read, half written), timed in the same rounds, what a kernel that only moves those bytes reaches "
        "at this size; in parentheses, tile's GB/s as a share of it.", "",
    ]

    def table(entries, unit, triton_configs=False):
        extra = " Triton config (of those tried) |" if triton_configs else " same-size copy GB/s (tile's %) |"
        lines.extend([f"| kernel | shape | dtype | tile {unit} | Triton {unit} | torch {unit} | tile vs Triton | warps | tile config |" + extra,
                      "|---|---|---|---|---|---|---|---|---|---|"])
        for e in entries:
            cfg = (e["impls"].get("tile") or {}).get("config", "")
            warps = " / ".join(str((e["impls"].get(i) or {}).get("config", {}).get("num_warps", "-")) for i in ("tile", "triton"))
            cells = [_cell(e["impls"].get(i)) for i in IMPLS] if "error" not in e else ["**error**"] * 3
            row = f"| {e['kernel']} | {'x'.join(map(str, e['shape']))} | {e['dtype']} | " + " | ".join(cells) + f" | {_ratio(e)} | {warps} | `{cfg}` |"
            if triton_configs:
                t = e["impls"].get("triton") or {}
                label = config_label(t["config"]) if t.get("config") else "-"
                row += f" {label} ({len(t.get('tried', {})) or 1} timed, {len(t.get('skipped', []))} too large) |"
            else:
                t = e["impls"].get("tile") or {}
                pct = f" ({t['pct_of_same_size_copy']:.1f}%)" if "pct_of_same_size_copy" in t else ""
                row += f" {e['copy_gbs']:.0f}{pct} |" if "copy_gbs" in e else " - |"
            lines.append(row)

    if bandwidth:
        table(bandwidth, "GB/s")
    if compute:
        lines += ["", "## Matmul (compute-bound)", "",
                  "TFLOP/s = 2*M*N*K over the time (shape = M x N x K; bf16 in, f32 accumulation, bf16 out): the best "
                  "of three medians, the implementations timed in turn (tile, Triton, torch, three times), since "
                  "the clocks drift under a long tensor-core load; "
                  "in parentheses, % of torch.matmul's (cuBLAS) TFLOP/s in the same run, not of the copy ceiling. "
                  "matmul_bias_gelu is gelu_tanh(A @ B + bias): fused in tile and Triton, unfused eager ops in torch. "
                  "The plain tile matmul still adds a zero bias vector (its kernel always does), which costs ~nothing. "
                  "Triton runs at the best of its matmul tutorial's autotuning configs: each checked against torch and "
                  "timed, the fastest then timed in the rounds (those that do not fit the shared memory skipped, "
                  "as its autotuner skips them); tile at its one config, one program per output tile or a "
                  "persistent grid of one program per SM (`programs` in its config), whichever is faster.", ""]
        table(compute, "TFLOP/s", triton_configs=True)
    interleaved = [e for e in bandwidth if "interleaved" in e]
    if interleaved:
        lines += _section("Memory-bound points in interleaved launches",
                          "tile and Triton, each at its fastest config above, launched in turn on the same inputs, one "
                          "launch each per step: the median over the steps of Triton's time over tile's (above 1x: tile "
                          "is faster) and its quartiles, which a best-of-rounds ratio, at the memory's limit within "
                          "tenths of a percent, cannot resolve.",
                          ["kernel", "shape", "launches", "tile vs Triton", "quartiles"])
        for e in interleaved:
            lines.append(f"| {e['kernel']} | {'x'.join(map(str, e['shape']))} | {e['interleaved']['launches']} | "
                         f"{_quartiles(e['interleaved']['vs_triton'], 4)} |")
    if meta.get("paired"):
        lines += _section("Matmul in interleaved launches",
                          "tile's plain matmul (one program per tile, and persistent), Triton's (its fastest config) and "
                          "torch's, launched in turn on the same inputs, one launch each per step, the order rotated "
                          "from step to step, so that clock drift cancels: per size, the median over the steps of the "
                          "other's time over tile's (above 1x: tile is faster), and its quartiles.",
                          ["size", "tile", "launches", "tile vs Triton", "quartiles", "tile vs torch (cuBLAS)", "quartiles"])
        for x in meta["paired"]:
            lines.append(f"| {x['size']}³ | {x['tile_choice']} | {x.get('launches', '')} | {_quartiles(x['vs_triton'], 3)} | "
                         f"{_quartiles(x['vs_torch'], 3)} |")
    if meta.get("epilogue"):
        lines += _section("Epilogue cost (interleaved launches)",
                          "The bias+gelu kernel's time over the plain GEMM's: the two launched in turn on the same "
                          "inputs, one launch each per step, so that clock drift does not count as cost; the cost is the "
                          "median of the steps' ratios (with its quartiles), the times the medians of the launches.",
                          ["implementation", "size", "config", "plain ms", "bias+gelu ms", "cost", "quartiles"])
        for x in meta["epilogue"]:
            low, high = x.get("cost_quartiles_pct", (None, None))
            spread = f"{low:.1f}% to {high:.1f}%" if low is not None else ""
            lines.append(f"| {x['impl']} | {x['size']}³ | {x.get('config', '')} | {x['plain_ms']:.4f} | {x['gelu_ms']:.4f} | "
                         f"{x['cost_pct']:.1f}% | {spread} |")
    failures = [(e, i, r) for e in results for i, r in e["impls"].items() if r["status"] != "ok"]
    failures += [(e, "all", {"status": "error", "detail": e["error"]}) for e in results if "error" in e]
    if failures:
        lines += ["", "## Failures", ""]
        for e, impl, r in failures:
            detail = r.get("detail", "").replace("\n", " ")[:600]
            lines.append(f"- {_label(e)} / {impl}: {r['status']}: {detail}")
    path = os.path.join(out_dir, "summary.md")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def _bars(ax, entries, labels, ceiling, title, metric="gbs", unit="GB/s"):
    """Grouped bars of `metric` per implementation; `ceiling` (GB/s) draws the copy line, None draws none."""
    width = 0.27
    for k, impl in enumerate(IMPLS):
        xs, ys = [], []
        for j, e in enumerate(entries):
            r = e["impls"].get(impl)
            if r and r["status"] == "ok" and metric in r:
                xs.append(j + (k - 1) * width)
                ys.append(r[metric])
        ax.bar(xs, ys, width, label=impl, color=COLORS[impl])
    if ceiling is not None:
        ax.axhline(ceiling, color="black", linestyle="--", linewidth=1, label=f"copy {ceiling:.0f} {unit}")
    ax.set_xticks(range(len(entries)))
    ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=8)
    top = max([ceiling or 1e-9] + [r[metric] for e in entries for r in e["impls"].values()
                                   if r["status"] == "ok" and metric in r])
    ax.set_ylim(0, top * 1.2)  # headroom for the legend above the bars
    ax.set_ylabel(unit)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper right", ncol=4)


def write_chart(out_dir: str, results: list, meta: dict) -> list[str]:
    """bench.png: the main points, then each sweep against row length; and bench-KERNEL.png:
    one kernel's points and sweep alone."""
    paths = [_figure(results, os.path.join(out_dir, "bench.png"), meta)]
    for kernel in dict.fromkeys(e["kernel"] for e in results):
        paths.append(_figure([e for e in results if e["kernel"] == kernel], os.path.join(out_dir, f"bench-{kernel}.png"), meta))
    return paths


def _figure(results: list, path: str, meta: dict) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    main = [e for e in results if e["group"] == "main" and not _is_flops(e)]
    compute = [e for e in results if _is_flops(e)]
    sweeps = defaultdict(list)
    for e in results:
        if e["group"] == "sweep":
            sweeps[(e["kernel"], e["dtype"])].append(e)
    panels = ([("main", main)] if main else []) + ([("matmul", compute)] if compute else []) + list(sweeps.items())
    fig, axes = plt.subplots(len(panels), 1, figsize=(12, 4.2 * len(panels)), squeeze=False)
    ceiling = meta["copy_ceiling_gbs"]
    for ax, (key, entries) in zip(axes[:, 0], panels):
        if key == "main":
            _bars(ax, entries, [_label(e) for e in entries], ceiling, f"{meta['device']}: seed kernels")
        elif key == "matmul":
            _bars(ax, entries, [_label(e) for e in entries], None,
                  f"{meta['device']}: matmul, TFLOP/s (2MNK / time), torch = cuBLAS", metric="tflops", unit="TFLOP/s")
        else:
            labels = [f"{e['shape'][1]} cols\n{e['shape'][0]} rows" for e in entries]
            _bars(ax, entries, labels, ceiling, f"{key[0]} {key[1]}, ~256 MiB, by row length")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_all(out_dir: str, results: list, meta: dict) -> None:
    """Each output on its own, so one failing (say, matplotlib) loses only that file."""
    for writer in (write_json, write_markdown, write_chart):
        try:
            writer(out_dir, results, meta)
        except Exception as e:  # noqa: BLE001
            print(f"{writer.__name__} failed: {e!r}", flush=True)
