#!/usr/bin/env bash
# On the GPU machine: ncu of each tile-against-Triton pair of ncu_pair.py (cases as arguments,
# default "t03 moe"; also rms), from the cache of checks_for_device.sh: per kernel its sections
# (ncu_<case>_<impl>.txt) and its stall samples per SASS instruction, summed up by
# ncu_stalls.py (stalls_<case>_<impl>.txt).
#   OUT=dir bash benchmarks/ncu_pairs_on_device.sh [CASE ...]
set -uo pipefail
cd "$(dirname "$0")/.."
D=${DEVICE_DIR:-.device}
OUT=${OUT:-$PWD/ncu-out}
mkdir -p "$OUT"
export TILE_CACHE_DIR=$PWD/$D/cache PYTHONPATH=$PWD/$D/src:$PWD/tests:$PWD/examples
B=$D/src/tile/benchmarks
cases=("$@")
[ ${#cases[@]} -eq 0 ] && cases=(t03 moe)
declare -A KERNEL=([t03]=matmul [moe]=fused_moe [rms]=rms_norm_backward)
for case in "${cases[@]}"; do
    for impl in tile triton; do
        n=${case}_$impl
        ncu --clock-control none --profile-from-start off --kernel-name "regex:${KERNEL[$case]}" --launch-count 1 \
            --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
            --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section SourceCounters \
            --import-source no -o "$OUT/$n" -f python3 "$B"/ncu_pair.py "$case" "$impl" > "$OUT/ncu_$n.log" 2>&1
        bash benchmarks/ncu_summarize.sh "$OUT" "$n"
    done
done
