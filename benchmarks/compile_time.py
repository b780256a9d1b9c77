"""Cold compile time of the seed kernels, stage by stage, on the CPU and sm_90a targets.

Each (kernel, target) compiles in a fresh process with an empty kernel cache: the wall time
of the whole process (interpreter start and `import tile` included), the compiler's own
imports (MLIR, lark, llvmlite: made by a first cache miss), the compile's time, and its split as the compiler recorded it (`launcher.metadata["compile_seconds"]`: parse,
emit, then each stage: tile-opt ... llvm and the JIT at the first launch on the CPU, ...
ptx, cubin (ptxas) on sm_90a).
Every run uses one cache folder whose grammar tables a warm-up run wrote, as any process
after the first finds them (`<TILE_CACHE_DIR>/parser/`); before each run the folder is
emptied of everything else (kernels, parse trees). The folder is not copied: lark's cache
check hashes the table file's path with the grammar, so a copy elsewhere is rebuilt. Medians of --repeats runs; JSON to --out.

    python benchmarks/compile_time.py --out benchmarks/results/DATE-compile-time.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (name, code run in the child: compiles one specialization with `launcher = ...`)
CASES = {
    "vector_add": """
import vector_add
x = torch.empty(98432, device=DEV)
launcher = vector_add.add_kernel.compile(x, x, x, 98432, BLOCK=1024)
""",
    "layer_norm": """
import layer_norm
x = torch.empty(29, 700, device=DEV); w = torch.empty(700, device=DEV)
launcher = layer_norm.layer_norm_kernel.compile(x, w, w, x, 700, 700, 700, 1e-5, BLOCK=256, ONE_BLOCK=False, STAGES=1)
""",
    "flash_attention": """
import flash_attention
q = torch.empty(1, 2, 256, 64, device=DEV, dtype=torch.float16 if DEV == "meta" else torch.float32)
launcher = flash_attention.attention_kernel.compile(
    q, q, q, q, 256, 0.125, 2, *q.stride(), *q.stride(), *q.stride(), *q.stride(),
    BLOCK_M=64, BLOCK_N=64, D=64, CAUSAL=False, lse=None, group=1)
""",
}

CHILD = """
import json, sys, time
began = time.perf_counter()
import torch
import tile
imported = time.perf_counter()
from tile.runtime.cache import compiler_entry  # (MLIR, lark, llvmlite: a first compile's imports)
compiler_entry()
ready = time.perf_counter()
sys.path.insert(0, {examples!r})
DEV = {device!r}
{code}
stages = dict(launcher.metadata.get("compile_seconds", {{}}))
if DEV == "cpu":  # (the CPU target JITs the LLVM dialect at the first launch)
    jit = time.perf_counter()
    launcher.engine()
    stages["jit"] = time.perf_counter() - jit
done = time.perf_counter()
print("RESULT", json.dumps({{"import_s": imported - began, "compiler_import_s": ready - imported,
                             "compile_s": done - ready, "stages": stages}}))
"""


def cold_cache(cache: str) -> None:
    """Empty cache of all but the grammar's tables: no kernel, no parse tree."""
    for entry in os.listdir(cache):
        path = os.path.join(cache, entry)
        if entry != "parser":
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
            continue
        for name in os.listdir(path):
            if not name.endswith(".cache"):
                os.remove(os.path.join(path, name))


def run_case(name: str, target: str, cache: str) -> dict:
    cold_cache(cache)
    env = {**os.environ, "TILE_CACHE_DIR": cache, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    device = "cpu"
    if target != "cpu":
        env.update(TILE_TARGET=target, TILE_COMPILE_ONLY="1")
        device = "meta"
    code = CHILD.format(examples=os.path.join(ROOT, "examples"), device=device, code=CASES[name])
    began = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - began
    if proc.returncode:
        raise RuntimeError(f"{name} on {target} failed:\n{proc.stderr[-3000:]}")
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    return {"process_s": wall, **json.loads(line[len("RESULT "):])}


def warm_parser() -> str:
    """A cache folder holding the grammar's tables, from one throwaway compile."""
    cache = tempfile.mkdtemp(prefix="tile-compile-time-")
    env = {**os.environ, "TILE_CACHE_DIR": cache}
    code = CHILD.format(examples=os.path.join(ROOT, "examples"), device="cpu", code=CASES["vector_add"])
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, timeout=600)
    return cache


def median_of(runs: list[dict]) -> dict:
    out = {k: statistics.median(r[k] for r in runs) for k in ("process_s", "import_s", "compiler_import_s", "compile_s")}
    stages = runs[0]["stages"].keys()
    out["stages"] = {s: statistics.median(r["stages"].get(s, 0.0) for r in runs) for s in stages}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", default="cpu,sm_90a")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args()
    cache = warm_parser()
    results = {"host_cpus": os.cpu_count(), "load_average": os.getloadavg(), "repeats": args.repeats, "cases": {}}
    for target in args.targets.split(","):
        for name in args.cases.split(","):
            runs = [run_case(name, target, cache) for _ in range(args.repeats)]
            m = median_of(runs)
            results["cases"][f"{name}/{target}"] = m
            split = ", ".join(f"{s} {t:.2f}" for s, t in m["stages"].items())
            print(f"{name:16s} {target:7s} process {m['process_s']:.2f} s  import tile {m['import_s']:.2f} s  "
                  f"compiler {m['compiler_import_s']:.2f} s  compile {m['compile_s']:.2f} s  ({split})", flush=True)
    shutil.rmtree(cache, ignore_errors=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
