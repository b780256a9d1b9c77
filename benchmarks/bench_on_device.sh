#!/usr/bin/env bash
# On the GPU machine: benchmark the seed kernels (tile vs Triton vs torch) and the
# launch overhead, with tile kernels from the cache built by build_for_device.sh
# (carry .device). Results go to $OUT (default ./bench-out): per-kernel JSON,
# bench.png, summary.md, launch_overhead.json. Extra arguments go to harness.py
# (e.g. --smoke, --only softmax, --group main).
set -uo pipefail
cd "$(dirname "$0")/.."
D=${DEVICE_DIR:-.device}
OUT=${OUT:-$PWD/bench-out}
mkdir -p "$OUT"
export TILE_CACHE_DIR=$PWD/$D/cache PYTHONPATH=$PWD/$D/src
status=0
# One failing benchmark must not cost the other's results: run both, then report.
python3 "$D"/src/tile/benchmarks/harness.py --out "$OUT" "$@" || status=$?
python3 "$D"/src/tile/benchmarks/launch_overhead.py --out "$OUT" || status=$?
exit $status
