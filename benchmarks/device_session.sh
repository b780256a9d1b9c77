#!/usr/bin/env bash
# One device session's calls, from a cache built by checks_for_device.sh (DEVICE_DIR names it),
# each step's outputs tarred into $OUT as it ends (the device tool returns at most 8 files, and
# what is there when a call runs out of time):
#   checks: the TILE_DEBUG check, then memcheck, racecheck and synccheck over every example
#           (memcheck's run checks each against torch), the GPU halves of the tests, and the
#           benchmark's kernels at their smoke shapes (harness.py --check-only);
#           -> san.tgz, debug.tgz, san-bench.tgz
#   perf:   the tutorials beside their Triton twins, tutorial 03's forms, the attention backward;
#           -> tutorials/perf.tgz, rest/perf.tgz
#   all:    checks and the tutorials in one call, each step under a shorter limit
#   short:  the checks under tighter limits, then the tutorials (a session's last device minutes)
#   DEVICE_DIR=.device14 bash benchmarks/device_session.sh checks
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL=${OUT:-$PWD/session-out}
WORK=$(mktemp -d)
mkdir -p "$FINAL"
status=0
case "${1:?usage: device_session.sh checks|perf|all|short}" in
checks)
    OUT=$WORK/san ONE_PROCESS=1 SCRIPTS="regressions_on_device language_on_device" timeout 260 \
        bash benchmarks/sanitize_on_device.sh || status=1
    tar czf "$FINAL/san.tgz" -C "$WORK" san
    OUT=$WORK/run bash benchmarks/perf_on_device.sh debug_bounds_on_device:60 || status=1
    tar czf "$FINAL/debug.tgz" -C "$WORK" run
    OUT=$WORK/san-bench SCRIPTS=harness timeout 150 bash benchmarks/sanitize_on_device.sh none || status=1
    tar czf "$FINAL/san-bench.tgz" -C "$WORK" san-bench ;;
all)  # one call where a second may not come: the checks, the tutorials between them
    OUT=$WORK/san ONE_PROCESS=1 SCRIPTS="regressions_on_device language_on_device" timeout 220 \
        bash benchmarks/sanitize_on_device.sh || status=1
    tar czf "$FINAL/san.tgz" -C "$WORK" san
    OUT=$WORK/run bash benchmarks/perf_on_device.sh debug_bounds_on_device:40 || status=1
    tar czf "$FINAL/debug.tgz" -C "$WORK" run
    OUT=$FINAL/tutorials bash benchmarks/perf_on_device.sh tutorials_on_device:200 || status=1
    OUT=$WORK/san-bench SCRIPTS=harness timeout 100 bash benchmarks/sanitize_on_device.sh none || status=1
    tar czf "$FINAL/san-bench.tgz" -C "$WORK" san-bench ;;
short)  # a session's last minutes of device time: the checks under tighter limits, then the tutorials
    OUT=$WORK/san ONE_PROCESS=1 SCRIPTS="regressions_on_device language_on_device" timeout 150 \
        bash benchmarks/sanitize_on_device.sh || status=1
    tar czf "$FINAL/san.tgz" -C "$WORK" san
    OUT=$WORK/run bash benchmarks/perf_on_device.sh debug_bounds_on_device:40 || status=1
    tar czf "$FINAL/debug.tgz" -C "$WORK" run
    OUT=$WORK/san-bench SCRIPTS=harness timeout 80 bash benchmarks/sanitize_on_device.sh none || status=1
    tar czf "$FINAL/san-bench.tgz" -C "$WORK" san-bench
    OUT=$FINAL/tutorials bash benchmarks/perf_on_device.sh tutorials_on_device:100 || status=1 ;;
perf)
    OUT=$FINAL/tutorials bash benchmarks/perf_on_device.sh tutorials_on_device:300 || status=1
    OUT=$FINAL/rest bash benchmarks/perf_on_device.sh attention_bwd_on_device:80 triton_ports_on_device:130 || status=1 ;;
esac
exit $status
