#!/usr/bin/env bash
# Compile, for sm_90a on this machine, what benchmarks/checks_on_device.sh runs on the GPU:
# every example, the benchmark's kernels (harness.py at its smoke shapes), the GPU halves of the tests (regressions, language, Triton ports), Triton's tutorials. Faster than
# build_for_device.sh, which also builds every benchmark point. Then carry $DEVICE_DIR (.device).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
D=${DEVICE_DIR:-.device}
bash benchmarks/snapshot.sh . "$D"
export TILE_TARGET=sm_90a TILE_COMPILE_ONLY=1 TILE_CACHE_DIR=$PWD/$D/cache PYTHONPATH=$PWD/$D/src
"$PY" "$D"/src/tile/benchmarks/run_examples.py --device cpu --compile-only
"$PY" "$D"/src/tile/benchmarks/harness.py --compile-only --smoke  # the benchmark's kernels, for the sanitizers
for script in regressions_on_device language_on_device triton_ports_on_device tutorials_on_device "$@"; do
    "$PY" "$D"/src/tile/benchmarks/$script.py --compile-only
done
# The GPU machine has no parser (lark): replayed without it, every tutorial point must load from the cache
# (an autotune config that failed in a helper was once not kept, and the GPU run tried to compile it).
"$PY" -c "import runpy, sys; sys.modules['lark'] = None; sys.argv = ['t', '--compile-only']
runpy.run_path('$D/src/tile/benchmarks/tutorials_on_device.py', run_name='__main__')"
find "$D/cache" -name 'stage-*' ! -name 'stage-ptx.ptx' -delete
du -sh "$D"
