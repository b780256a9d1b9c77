#!/usr/bin/env bash
# After an `ncu -o DIR/NAME` run on the GPU machine: its report as text (DIR/ncu_NAME.txt), its
# SASS with stall samples (DIR/src_NAME.csv.gz) summed up by ncu_stalls.py (DIR/stalls_NAME.txt),
# and the report itself removed (too large to carry back).
#   bash benchmarks/ncu_summarize.sh DIR NAME
set -uo pipefail
OUT=$1 n=$2
ncu -i "$OUT/$n.ncu-rep" > "$OUT/ncu_$n.txt" 2>&1
ncu -i "$OUT/$n.ncu-rep" --page source --print-source sass --csv > "$OUT/src_$n.csv" 2>&1
python3 "$(dirname "$0")"/ncu_stalls.py "$OUT/src_$n.csv" > "$OUT/stalls_$n.txt" 2>&1
gzip -f "$OUT/src_$n.csv"
rm -f "$OUT/$n.ncu-rep"
