#!/usr/bin/env bash
# On the GPU machine, from the cache checks_for_device.sh built (carry .device): every example,
# the GPU halves of the tests and the Triton ports against torch, then the Triton-port timings.
# Logs and JSON into $OUT; exits non-zero if any check failed. Extra scripts (built by
# checks_for_device.sh with the same names) may follow as arguments.
set -uo pipefail
cd "$(dirname "$0")/.."
D=${DEVICE_DIR:-.device}
OUT=${OUT:-$PWD/checks-out}
mkdir -p "$OUT"
export TILE_CACHE_DIR=$PWD/$D/cache PYTHONPATH=$PWD/$D/src PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/device.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/device.txt"
status=0
python3 "$D"/src/tile/benchmarks/run_examples.py --device cuda --out "$OUT" > "$OUT/examples.log" 2>&1 || status=1
grep -c " ok " "$OUT/examples.log" | sed 's/^/examples ok: /'; grep FAIL "$OUT/examples.log"
for script in regressions_on_device language_on_device "$@"; do
    python3 "$D"/src/tile/benchmarks/$script.py > "$OUT/$script.log" 2>&1 || status=1
    echo "$script: $(grep -c 'matches torch' "$OUT/$script.log") match, $(grep -c FAIL "$OUT/$script.log") fail"
    grep FAIL "$OUT/$script.log" | head -5
done
python3 "$D"/src/tile/benchmarks/triton_ports_on_device.py --out "$OUT" > "$OUT/triton_ports.log" 2>&1 || status=1
grep -c "matches torch" "$OUT/triton_ports.log" | sed 's/^/triton ports match: /'; grep FAIL "$OUT/triton_ports.log" | head
tail -40 "$OUT/triton_ports.log"
exit $status
