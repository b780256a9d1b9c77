#!/usr/bin/env bash
# On the GPU machine: run every example from the cache built by build_for_device.sh,
# importing only the runtime (no MLIR, lark or llvmlite there).
set -euo pipefail
cd "$(dirname "$0")/.."
D=${DEVICE_DIR:-.device}
TILE_CACHE_DIR=$PWD/$D/cache PYTHONPATH=$PWD/$D/src python3 "$D"/src/tile/benchmarks/run_examples.py --device cuda "$@"
