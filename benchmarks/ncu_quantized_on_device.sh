#!/usr/bin/env bash
# On the GPU machine: profile the FP8 and INT4 matmuls at their prefill tiles with ncu
# (quantized_profile.py, the cache of build_for_device.sh plus `decode_probe.py --compile-only`):
# each kernel's sections (ncu_<kind>.txt), and its SASS with stall samples per instruction
# (src_<kind>.csv.gz) summed up by ncu_stalls.py (stalls_<kind>.txt).
#   OUT=dir bash benchmarks/ncu_quantized_on_device.sh
set -uo pipefail
cd "$(dirname "$0")/.."
D=${DEVICE_DIR:-.device}
OUT=${OUT:-$PWD/ncu-out}
mkdir -p "$OUT"
export TILE_CACHE_DIR=$PWD/$D/cache PYTHONPATH=$PWD/$D/src
B=$D/src/tile/benchmarks
for kind in fp8 int4; do
    ncu --clock-control none --kernel-name "regex:${kind}_matmul" --launch-skip 1 --launch-count 1 \
        --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
        --section SourceCounters --import-source no -o "$OUT/$kind" -f python3 "$B"/quantized_profile.py > "$OUT/ncu_$kind.log" 2>&1
    bash benchmarks/ncu_summarize.sh "$OUT" "$kind"
done
