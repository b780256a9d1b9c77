#!/usr/bin/env bash
# On the GPU machine, with .device and .deviceA carried (build_ab.sh): BENCH (a script in
# benchmarks/ and its arguments, default `matmul_sweep.py --configs 128,256,64,8,4`) with
# A's compiler (.deviceA) and B's (.device) in turn, ROUNDS times (default 2), each output
# checked against torch before timing; the log and each run's files go to $OUT (default
# ./ab-out). BUILDS (default "A B") names the builds: A is .deviceA, B .device, any other X
# .deviceX (a third build: snapshot.sh and a compile into .deviceX/cache, as build_ab.sh does).
#   bash benchmarks/ab_on_device.sh [BENCH ARGS...]
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- matmul_sweep.py --configs 128,256,64,8,4
OUT=${OUT:-$PWD/ab-out}
mkdir -p "$OUT"
for r in $(seq 1 "${ROUNDS:-2}"); do
    for X in ${BUILDS:-A B}; do
        D=.device$X; [ "$X" = B ] && D=.device
        echo "== $X round $r: $*" >> "$OUT/ab.log"
        TILE_CACHE_DIR=$PWD/$D/cache PYTHONPATH=$PWD/$D/src python3 "$D"/src/tile/benchmarks/"$@" \
            --out "$OUT/$X$r" >> "$OUT/ab.log" 2>&1 || echo "$X round $r failed" >> "$OUT/ab.log"
    done
done
grep -v '^\s*$' "$OUT/ab.log"
