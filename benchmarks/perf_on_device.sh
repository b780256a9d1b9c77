#!/usr/bin/env bash
# On the GPU machine, from a cache built by checks_for_device.sh (carry it, DEVICE_DIR names it):
# the timed scripts first, each under its own time limit so that one slow or hung script
# leaves the others their time; logs and JSON into $OUT/perf.tgz (the device tool returns at
# most 8 files). Arguments: SCRIPT:SECONDS ... (benchmarks/SCRIPT.py), run in that order.
#   DEVICE_DIR=.device2 bash benchmarks/perf_on_device.sh warp_specialize_on_device:180 fp8_gemm_on_device:120
set -uo pipefail
cd "$(dirname "$0")/.."
D=${DEVICE_DIR:-.device}
FINAL=${OUT:-$PWD/perf-out}
WORK=$(mktemp -d)
export TILE_CACHE_DIR=$PWD/$D/cache PYTHONPATH=$PWD/$D/src PYTHONUNBUFFERED=1 OUT=$WORK
mkdir -p "$FINAL"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$WORK/device.txt" 2>&1
cat "$WORK/device.txt"
status=0
for spec in "$@"; do
    script=${spec%%:*}; limit=${spec##*:}
    began=$(date +%s)
    args=()  # (the others read $OUT)
    [[ "$script" = triton_ports_on_device || "$script" = tutorials_on_device ]] && args=(--out "$WORK")
    [ "$script" = run_examples ] && args=(--device cuda --out "$WORK")
    timeout "$limit" python3 "$D/src/tile/benchmarks/$script.py" "${args[@]}" > "$WORK/$script.log" 2>&1
    rc=$?
    echo "$script: rc=$rc in $(( $(date +%s) - began )) s"
    grep -E "FAIL|Error|TFLOP|ratio|x Triton|vs|timeout" "$WORK/$script.log" | tail -12
    [ "$rc" -ne 0 ] && status=1
done
tar czf "$FINAL/perf.tgz" -C "$WORK" .
exit $status
