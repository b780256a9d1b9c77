#!/usr/bin/env bash
# Build two versions of the compiler for an A/B run on the H200, here (no GPU needed):
#   bash benchmarks/build_ab.sh COMMIT [BENCH ARGS...]
# compiles what BENCH (a script in benchmarks/, default `matmul_sweep.py --configs
# 128,256,64,8,4`) launches with COMMIT's compiler into .deviceA (a git worktree of COMMIT,
# snapshot and cache as build_for_device.sh makes them) and the working tree's everything
# into .device. Carry both (carry: [".device", ".deviceA"]) and run ab_on_device.sh there
# with the same BENCH.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
COMMIT=${1:?usage: build_ab.sh COMMIT [BENCH ARGS...]}
shift
[ $# -gt 0 ] || set -- matmul_sweep.py --configs 128,256,64,8,4
WT=$(mktemp -d)/a
git worktree add -f --detach "$WT" "$COMMIT" >/dev/null
trap 'git worktree remove --force "$WT"' EXIT
bash benchmarks/snapshot.sh "$WT" .deviceA
TILE_TARGET=sm_90a TILE_COMPILE_ONLY=1 TILE_CACHE_DIR=$PWD/.deviceA/cache PYTHONPATH=$PWD/.deviceA/src \
    "$PY" .deviceA/src/tile/benchmarks/"$@" --compile-only
find .deviceA/cache -name 'stage-*' ! -name 'stage-ptx.ptx' -delete
PY=$PY bash benchmarks/build_for_device.sh
