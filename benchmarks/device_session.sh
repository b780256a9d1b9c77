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

sanitize() {  # SECONDS: every example and the tests' GPU halves under the three tools -> san.tgz
    OUT=$WORK/san ONE_PROCESS=1 SCRIPTS="regressions_on_device language_on_device" timeout "$1" \
        bash benchmarks/sanitize_on_device.sh || status=1
    tar czf "$FINAL/san.tgz" -C "$WORK" san
}
debug_check() {  # SECONDS: TILE_DEBUG's bounds check -> debug.tgz
    OUT=$WORK/run bash benchmarks/perf_on_device.sh debug_bounds_on_device:"$1" || status=1
    tar czf "$FINAL/debug.tgz" -C "$WORK" run
}
sanitize_bench() {  # SECONDS: the benchmark's kernels at their smoke shapes -> san-bench.tgz
    OUT=$WORK/san-bench SCRIPTS=harness timeout "$1" bash benchmarks/sanitize_on_device.sh none || status=1
    tar czf "$FINAL/san-bench.tgz" -C "$WORK" san-bench
}
tutorials() {  # SECONDS -> tutorials/perf.tgz
    OUT=$FINAL/tutorials bash benchmarks/perf_on_device.sh tutorials_on_device:"$1" || status=1
}

case "${1:?usage: device_session.sh checks|perf|all|short}" in
checks) sanitize 260; debug_check 60; sanitize_bench 150 ;;
all) sanitize 220; debug_check 40; tutorials 200; sanitize_bench 100 ;;  # one call where a second may not come
short) sanitize 150; debug_check 40; sanitize_bench 80; tutorials 100 ;;  # a session's last device minutes
perf)
    tutorials 300
    OUT=$FINAL/rest bash benchmarks/perf_on_device.sh attention_bwd_on_device:80 triton_ports_on_device:130 || status=1 ;;
esac
exit $status
