#!/usr/bin/env bash
# Compile the examples for the H200 (sm_90a) on a machine without a GPU, into
# .device/ (git-ignored): a snapshot of the package sources in .device/src/tile
# and the cubins in .device/cache. Then carry .device to the GPU machine and run
#   bash benchmarks/run_on_device.sh      # the examples against torch
#   bash benchmarks/bench_on_device.sh    # the benchmarks, into $OUT
# there (they need only torch, plus Triton for the comparison).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
D=${DEVICE_DIR:-.device}  # another folder name lets two builds coexist
# A snapshot, so that the cache keys (which hash the compiler sources) match on the device.
bash benchmarks/snapshot.sh . "$D"
export TILE_TARGET=sm_90a TILE_COMPILE_ONLY=1 TILE_CACHE_DIR=$PWD/$D/cache PYTHONPATH=$PWD/$D/src
"$PY" "$D"/src/tile/benchmarks/run_examples.py --device cpu --compile-only "$@"
# The launches bench_on_device.sh makes, same shapes and configs, on 'meta' tensors.
"$PY" "$D"/src/tile/benchmarks/harness.py --compile-only
"$PY" "$D"/src/tile/benchmarks/launch_overhead.py --compile-only
"$PY" "$D"/src/tile/benchmarks/matmul_sweep.py --compile-only
"$PY" "$D"/src/tile/benchmarks/matmul_k_probe.py --compile-only
# The GPU halves of the tests: fuzz regressions, and the language's kernels (from tests/).
"$PY" "$D"/src/tile/benchmarks/regressions_on_device.py --compile-only
"$PY" "$D"/src/tile/benchmarks/language_on_device.py --compile-only
# CUDA graphs of every example's launches, torch.compile, several GPUs (tile.torch).
"$PY" "$D"/src/tile/benchmarks/torch_on_device.py --compile-only
# The device needs only the cubins and their metadata (the IR of every stage would
# take the carry past its 64 MiB): keep those and the PTX.
find "$D/cache" -name 'stage-*' ! -name 'stage-ptx.ptx' -delete
ls "$D/cache" | wc -l
