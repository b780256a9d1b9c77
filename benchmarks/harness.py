"""Seed-kernel benchmark: tile, Triton and torch side by side on one GPU.

    python benchmarks/harness.py [--out DIR] [--only KERNEL ...] [--smoke]
    python benchmarks/harness.py --compile-only       # CPU machine: fill the tile cache for sm_90a
    python benchmarks/harness.py --check-only --smoke # GPU: each tile launch once, checked (sanitizers)

Every output is checked against a torch reference before it is timed, so a
fast wrong kernel is reported as a failure, never as a number. Bandwidth is
the bytes each kernel must move (inputs read once, output written once,
computed from the shapes) over the median time of many CUDA-event-timed runs,
and is also given as a share of a device-to-device copy measured in the same
run, the practical ceiling for these memory-bound kernels. The matmul points
(group "matmul") are compute-bound instead: their metric is TFLOP/s
(2*M*N*K / time), given as a share of torch.matmul's (cuBLAS) TFLOP/s measured
in the same run, and their timing is capped so the group stays well under a
minute however slow an implementation is. Triton's matmul is timed at each of
its tutorial's autotuning configs and reported at its best, as its autotuner
would pick; tile's at its one config, one program per output tile and as a
persistent grid (one program per SM), reported at the better.

The GPU machine has no MLIR, so tile kernels run there from a cache compiled
beforehand: `--compile-only` makes the same tile launches on 'meta' tensors
with TILE_TARGET=sm_90a TILE_COMPILE_ONLY=1. Both passes take their launch
parameters from `tile_config` (implementations.py), so they ask for the same
specializations.
Specializations see dtypes, ranks, constexprs, int arguments' divisibility by
16 (and == 1) and 16-byte alignment of data pointers; 'meta' tensors have
data_ptr() == 0, aligned like fresh CUDA allocations.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

import report
from implementations import MATMUL_KERNELS, PATCH, choices, make_inputs, reference, tile_impl, torch_impl, triton_impl
from matmul_rounds import epilogue_cost, interleaved_launches, paired_matmul, ratio_summary
from timing import COPY_BYTES, MATMUL_TIMING, ROUNDS, copy_ceiling_gbs, same_size_copy, time_ms  # noqa: F401 (the other scripts' too)

SWEEP_COLS = [1 << p for p in range(8, 16)]  # 256 .. 32768
SWEEP_BYTES = 256 << 20
TOLERANCES = {"float32": {"rtol": 1e-5, "atol": 1e-5}, "float16": {"rtol": 1e-2, "atol": 1e-2}}
EXACT = {"patch_gather"}  # pure data movement: every element must match bit for bit
# Matmul: bf16 in, f32 accumulation, bf16 out. Inputs are scaled so outputs are O(1),
# so one absolute tolerance fits every size.
MATMUL_SIZES = (4096, 8192)  # M = N = K
MATMUL_TOL = {"rtol": 2e-2, "atol": 2e-2}


def cases(smoke: bool = False) -> list[dict]:
    """The benchmark points. --smoke divides the row (or batch) count only, which no
    specialization sees, so a smoke run needs no more compiled kernels."""
    main = [("vector_add", (1 << 26,), "float32"),
            ("softmax", (16384, 4096), "float32"), ("softmax", (4096, 32768), "float32"),
            ("layer_norm", (16384, 8192), "float16"), ("add_relu_layernorm", (16384, 8192), "float16"),
            # A batch of 32 16-frame 224x224 clips: 154 MB in, 154 MB out, well past the 50 MB L2.
            ("patch_gather", (32, 16, 3, 224, 224), "float16")]
    out = [{"kernel": k, "shape": s, "dtype": d, "group": "main"} for k, s, d in main]
    for kernel, dtype, size in (("softmax", "float32", 4), ("layer_norm", "float16", 2)):
        for cols in SWEEP_COLS:
            out.append({"kernel": kernel, "shape": (SWEEP_BYTES // (size * cols), cols), "dtype": dtype, "group": "sweep"})
    for kernel in MATMUL_KERNELS:
        for n in MATMUL_SIZES:
            out.append({"kernel": kernel, "shape": (n, n, n), "dtype": "bfloat16", "group": "matmul"})
    if smoke:
        for c in out:
            s = c["shape"]
            if c["kernel"] in MATMUL_KERNELS:  # fewer rows of A (M stays a multiple of 16)
                c["shape"] = (s[0] // 64, *s[1:])
                continue
            c["shape"] = (s[0] // 64,) if len(s) == 1 else (1, *s[1:]) if len(s) == 5 else (max(s[0] // 64, 1), s[1])
    return out


def nbytes(kernel: str, shape, itemsize: int) -> int:
    """Bytes a kernel must move at least: each input element read once, each output written once."""
    if kernel == "vector_add":
        return 3 * shape[0] * itemsize
    if kernel == "softmax":
        return 2 * shape[0] * shape[1] * itemsize
    if kernel == "layer_norm":
        return (2 * shape[0] + 2) * shape[1] * itemsize
    if kernel == "add_relu_layernorm":
        return (3 * shape[0] + 2) * shape[1] * itemsize
    if kernel == "patch_gather":
        B, T, C, H, W = shape
        n_t = (T - PATCH["pt"]) // PATCH["st"] + 1
        return 2 * B * n_t * (H // PATCH["ph"]) * (W // PATCH["pw"]) * C * PATCH["pt"] * PATCH["ph"] * PATCH["pw"] * itemsize
    if kernel in MATMUL_KERNELS:
        M, N, K = shape
        return (M * K + K * N + M * N + N) * itemsize
    raise KeyError(kernel)


def flops(kernel: str, shape) -> int | None:
    """Floating-point operations of a compute-bound kernel (its metric is then TFLOP/s); None for the others."""
    if kernel in MATMUL_KERNELS:
        M, N, K = shape
        return 2 * M * N * K
    return None


def tolerance(kernel: str, dtype: str) -> dict:
    """assert_close's rtol and atol for a kernel's output against torch's."""
    return {"rtol": 0, "atol": 0} if kernel in EXACT else MATMUL_TOL if kernel in MATMUL_KERNELS else TOLERANCES[dtype]


def tile_once(selected: list[dict], overrides: dict, device: str = "meta") -> int:
    """Every tile launch of the GPU pass, once each: on 'meta' tensors (the CPU machine: it
    compiles into the cache), or on cuda, checked against torch and untimed (a run under
    compute-sanitizer: `--check-only --smoke`)."""
    import torch

    failures = 0
    t_all = time.perf_counter()
    for c in selected:
        t0 = time.perf_counter()
        dtype = getattr(torch, c["dtype"])
        try:
            torch.manual_seed(0)
            inputs = make_inputs(c["kernel"], c["shape"], dtype, device)
            expected = None if device == "meta" else reference(c["kernel"], inputs)
            for w in choices("tile", c["kernel"], c["shape"], overrides):
                run, cfg = tile_impl(c["kernel"], c["shape"], w, overrides)
                out = run(*inputs)
                if expected is not None:
                    torch.testing.assert_close(out, expected, **tolerance(c["kernel"], c["dtype"]))
            status = "compiled" if expected is None else "matches torch"
        except Exception as e:  # noqa: BLE001  (report every config, whatever fails)
            failures += 1
            cfg, status = {}, "FAIL " + "".join(traceback.format_exception_only(type(e), e)).strip()[:1500]
        print(f"{c['kernel']:20s} {str(c['shape']):24s} {c['dtype']:8s} {time.perf_counter() - t0:6.2f}s {cfg} {status}",
              flush=True)
    print(f"{device}: {len(selected)} points, {failures} failed, {time.perf_counter() - t_all:.1f}s", flush=True)
    return 1 if failures else 0


def too_large(run: dict) -> bool:
    """Whether a config failed for want of shared memory (a tutorial config of Triton's matmul
    that does not fit the GPU), which is skipped rather than counted as a failure."""
    return run["status"] == "error" and "OutOfResources" in run.get("detail", "")


def reported_run(runs: list[dict]) -> dict:
    """The run an implementation is reported with, of those of its configs at one point: the
    failure that ended them, or else the fastest, with every timed config's time (`tried`)
    and those skipped as too large for the shared memory (`skipped`)."""
    ok = [x for x in runs if x["status"] == "ok"]
    r = runs[-1] if runs[-1]["status"] not in ("ok", "skipped") or not ok else min(ok, key=lambda x: x["ms"])
    if len(ok) > 1:
        r["tried"] = {report.config_label(x["config"]): x["ms"] for x in ok}
    skipped = [report.config_label(x["config"]) for x in runs if x["status"] == "skipped"]
    if skipped:
        r["skipped"] = skipped
    return r


def _check_and_time(fn, inputs, expected, tol, sync, timing=None) -> dict:
    import torch

    # Poison: the caching allocator hands the freed NaN block to the implementation's
    # output next, so an element it never writes fails the check instead of passing on stale data.
    poison = torch.full_like(expected, float("nan")) if expected.is_floating_point() else torch.full_like(expected, -1)
    del poison
    try:
        out = fn(*inputs)
        sync()
    except Exception as e:  # noqa: BLE001  (a failing implementation is a result, not the end of the run)
        return {"status": "error", "detail": "".join(traceback.format_exception_only(type(e), e)).strip()[:2000]}
    try:
        torch.testing.assert_close(out, expected, **tol)
    except AssertionError as e:
        return {"status": "mismatch", "detail": str(e)[:2000]}
    del out
    try:
        ms, reps = time_ms(lambda: fn(*inputs), sync, **(timing or {}))
    except Exception as e:  # noqa: BLE001
        return {"status": "error", "detail": "timing: " + repr(e)[:2000]}
    return {"status": "ok", "ms": ms, "reps": reps}


def benchmark(selected: list[dict], out_dir: str, command: str, overrides: dict) -> int:
    import torch

    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    sync = torch.cuda.synchronize
    ceiling = copy_ceiling_gbs()
    print(f"copy ceiling: {ceiling:.0f} GB/s ({COPY_BYTES >> 20} MiB device-to-device, read + write)", flush=True)
    steps = len(selected) * 3
    bar = tqdm(total=steps, unit="run", dynamic_ncols=True) if tqdm else None
    results = []
    matmul_choice = {}  # (impl, size) -> the choice its plain matmul was fastest with
    for c in selected:
        kernel, shape, dtype = c["kernel"], c["shape"], getattr(torch, c["dtype"])
        entry = {**c, "shape": list(shape), "bytes": nbytes(kernel, shape, dtype.itemsize), "impls": {}}
        n_flops = flops(kernel, shape)
        if n_flops:
            entry["flops"] = n_flops
        try:
            torch.manual_seed(0)
            inputs = make_inputs(kernel, shape, dtype, "cuda")
            expected = reference(kernel, inputs)
        except Exception as e:  # noqa: BLE001
            entry["error"] = "inputs/reference: " + repr(e)[:2000]
            results.append(entry)
            if bar:
                bar.update(3)
            continue
        tol = tolerance(kernel, c["dtype"])
        timing = MATMUL_TIMING if kernel in MATMUL_KERNELS else None
        chosen = {}  # impl -> its fastest config's function
        for impl in ("tile", "triton", "torch"):
            if bar:
                bar.set_description(f"{kernel} {'x'.join(map(str, shape))} {impl}")
            runs, fns, picks = [], [], []
            for w in choices(impl, kernel, shape, overrides):
                picks.append(w)
                try:
                    fn, cfg = (tile_impl(kernel, shape, w, overrides) if impl == "tile" else triton_impl(kernel, shape, w)
                               if impl == "triton" else (torch_impl(kernel), {}))
                    runs.append({"config": cfg, **_check_and_time(fn, inputs, expected, tol, sync, timing)})
                    fns.append(fn)
                except Exception as e:  # noqa: BLE001
                    runs.append({"status": "error", "detail": "setup: " + "".join(traceback.format_exception_only(type(e), e)).strip()[:2000]})
                    fns.append(None)
                if too_large(runs[-1]):
                    runs[-1]["status"] = "skipped"  # as Triton's autotuner skips it
                elif runs[-1]["status"] != "ok":  # every config must pass its check: a failure is the result
                    break
            r = reported_run(runs)
            if r["status"] == "ok":
                chosen[impl] = fns[runs.index(r)]
                if kernel == "matmul" and impl != "torch":
                    matmul_choice[impl, shape[0]] = picks[runs.index(r)]
            entry["impls"][impl] = r
            if bar:
                bar.update(1)
            elif r["status"] != "ok":
                print(f"{kernel} {shape} {impl}: {r['status']}", flush=True)
        # Clocks drift (under a long tensor-core load most): more rounds, the implementations in turn, each
        # at its best round. A memory-bound point also times a copy of its own bytes in each round: what a
        # kernel that only moves them reaches at this size (the 1 GiB ceiling hides launch and tail costs).
        copy = None if n_flops else same_size_copy(entry["bytes"])
        copy_ms = [time_ms(copy, sync)[0]] if copy else []
        for _ in range(ROUNDS - 1):
            for impl, fn in chosen.items():
                r = entry["impls"][impl]
                r.setdefault("round_ms", [r["ms"]]).append(time_ms(lambda: fn(*inputs), sync, **(timing or {}))[0])
            if copy:
                copy_ms.append(time_ms(copy, sync)[0])
        for impl in chosen:
            r = entry["impls"][impl]
            r["ms"] = min(r.get("round_ms", [r["ms"]]))
        if not n_flops and "tile" in chosen and "triton" in chosen:
            # Best-of-rounds figures differ by tenths of a percent at the memory's limit: tile and
            # Triton (each at its fastest config) also launched in turn, the median of their ratios.
            steps = interleaved_launches({k: chosen[k] for k in ("tile", "triton")}, inputs)
            entry["interleaved"] = {"launches": len(steps), "vs_triton": ratio_summary(steps, "triton", "tile")}
        if copy:
            entry["copy_gbs"] = entry["bytes"] / (min(copy_ms) * 1e-3) / 1e9
            del copy
        for r in entry["impls"].values():
            if r["status"] == "ok":
                r["gbs"] = entry["bytes"] / (r["ms"] * 1e-3) / 1e9
                if n_flops:
                    r["tflops"] = n_flops / (r["ms"] * 1e-3) / 1e12
                else:
                    r["pct_of_copy"] = 100 * r["gbs"] / ceiling
                    r["pct_of_same_size_copy"] = 100 * r["gbs"] / entry["copy_gbs"]
        if n_flops:  # compute-bound: the reference is cuBLAS (torch) in this run, not the copy ceiling
            ref = entry["impls"].get("torch", {})
            for r in entry["impls"].values():
                if r["status"] == "ok" and ref.get("status") == "ok":
                    r["pct_of_torch"] = 100 * r["tflops"] / ref["tflops"]
        del inputs, expected
        results.append(entry)
    if bar:
        bar.close()
    meta = report.run_metadata(command, ceiling, COPY_BYTES)
    sizes = sorted({e["shape"][0] for e in results if e["kernel"] == "matmul_bias_gelu" and "error" not in e})
    if sizes:
        meta["epilogue"] = epilogue_cost(sizes, overrides, matmul_choice)
    sizes = sorted({e["shape"][0] for e in results if e["kernel"] == "matmul" and "error" not in e})
    if sizes:
        meta["paired"] = paired_matmul(sizes, overrides, matmul_choice)
    report.write_all(out_dir, results, meta)
    bad = [(e["kernel"], e["shape"], i) for e in results for i, r in e["impls"].items() if r["status"] != "ok"]
    bad += [(e["kernel"], e["shape"], "all") for e in results if "error" in e]
    print(f"wrote {out_dir}; {len(bad)} failed: {bad}", flush=True)
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--compile-only", action="store_true", help="CPU machine: compile the tile launches for sm_90a, run nothing")
    ap.add_argument("--out", default=os.environ.get("OUT"), help="output folder (default $OUT)")
    ap.add_argument("--only", nargs="*", help="kernels to run (default: all)")
    ap.add_argument("--group", choices=["main", "sweep", "matmul"], help="only the main points, the sweep or the matmuls")
    ap.add_argument("--smoke", action="store_true", help="fewer rows, same specializations: a quick end-to-end check")
    ap.add_argument("--check-only", action="store_true", help="GPU: each tile launch once, checked, untimed (for compute-sanitizer)")
    ap.add_argument("--set", nargs="*", default=[], metavar="NAME=INT",
                    help="tile launch parameters instead of tile_config's, e.g. --set NP=4 (with --only)")
    args = ap.parse_args()
    overrides = {k: int(v) for k, v in (x.split("=", 1) for x in args.set)}
    selected = [c for c in cases(args.smoke) if (not args.only or c["kernel"] in args.only)
                and (not args.group or c["group"] == args.group)]
    if args.compile_only:
        os.environ.setdefault("TILE_TARGET", "sm_90a")
        os.environ["TILE_COMPILE_ONLY"] = "1"
        return tile_once(selected, overrides)
    if args.check_only:
        return tile_once(selected, overrides, "cuda")
    out_dir = args.out or os.path.join(os.getcwd(), "bench-out")
    os.makedirs(out_dir, exist_ok=True)
    command = " ".join([os.path.basename(sys.executable), *sys.argv])
    return benchmark(selected, out_dir, command, overrides)


if __name__ == "__main__":
    sys.exit(main())
