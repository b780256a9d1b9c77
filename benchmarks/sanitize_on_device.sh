#!/usr/bin/env bash
# On the GPU machine: every example, and the GPU halves of the tests (regressions_on_device.py,
# language_on_device.py, triton_ports_on_device.py), under compute-sanitizer's memcheck, racecheck
# (shared memory) and synccheck, from the cache built by build_for_device.sh (carry .device).
# Fails on any error a tool reports or any check that fails. One line per (tool, program) in
# $OUT/sanitize.txt, the tools' own reports in $OUT/sanitize-<tool>.log.
#   bash benchmarks/sanitize_on_device.sh [EXAMPLE ...]     # default: every example; `none`: no example
# TOOLS (default "memcheck racecheck synccheck") and SCRIPTS (default "harness regressions_on_device
# language_on_device"; harness: every benchmark kernel once at its smoke shape; empty for examples only) narrow a run that must fit a short device call;
# ONE_PROCESS=1 runs the examples in one process a tool (one torch start-up under the tool, not one
# an example; the tool's report still names each kernel).
set -uo pipefail
cd "$(dirname "$0")/.."
D=${DEVICE_DIR:-.device}
OUT=${OUT:-$PWD/sanitize-out}
mkdir -p "$OUT"
export TILE_CACHE_DIR=$PWD/$D/cache PYTHONPATH=$PWD/$D/src PYTHONUNBUFFERED=1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [ -z "$CS" ]; then echo "no compute-sanitizer on this machine"; exit 2; fi
"$CS" --version | tail -1 | tee "$OUT/sanitize.txt"
names=("$@")
if [ "${1-}" = none ]; then
    names=()  # the scripts only
elif [ ${#names[@]} -eq 0 ]; then
    mapfile -t names < <(python3 -c "import sys; sys.path.insert(0, '$D/src/tile/examples'); from seeds import SEEDS; print('\n'.join(SEEDS))")
fi
status=0
run() {  # tool, label, command...
    local tool=$1 label=$2; shift 2
    local flags=(--tool "$tool" --error-exitcode 99 --print-limit 20)
    [ "$tool" = racecheck ] && flags+=(--racecheck-report hazard)
    "$CS" "${flags[@]}" "$@" >>"$OUT/sanitize-$tool.log" 2>&1
    local rc=$?
    local errors
    errors=$(grep -Eo "ERROR SUMMARY: [0-9]+ error|RACECHECK SUMMARY: [0-9]+ hazard" "$OUT/sanitize-$tool.log" | tail -1)
    printf '%-10s %-28s rc=%-3s %s\n' "$tool" "$label" "$rc" "$errors" | tee -a "$OUT/sanitize.txt"
    [ "$rc" -ne 0 ] && status=1
}
for tool in ${TOOLS:-memcheck racecheck synccheck}; do
    if [ ${#names[@]} -eq 0 ]; then
        :
    elif [ "${ONE_PROCESS:-0}" = 1 ]; then
        echo "=== ${names[*]}" >>"$OUT/sanitize-$tool.log"
        run "$tool" "examples (${#names[@]})" python3 "$D"/src/tile/benchmarks/run_examples.py --device cuda "${names[@]}"
    else
        for name in "${names[@]}"; do
            echo "=== $name" >>"$OUT/sanitize-$tool.log"
            run "$tool" "$name" python3 "$D"/src/tile/benchmarks/run_examples.py --device cuda "$name"
        done
    fi
    for script in ${SCRIPTS-harness regressions_on_device language_on_device}; do
        echo "=== $script" >>"$OUT/sanitize-$tool.log"
        args=()
        [ "$script" = harness ] && args=(--check-only --smoke)  # each benchmark kernel at its smallest shape, untimed
        run "$tool" "$script" python3 "$D"/src/tile/benchmarks/$script.py "${args[@]}"
    done
done
exit $status
