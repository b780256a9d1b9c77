#!/usr/bin/env bash
# Copy the tile package's sources from the repository at SRC into DEST/src/tile (DEST emptied
# first), the snapshot a device build compiles from: the cache keys hash these sources, so the
# GPU machine, importing the same snapshot, finds the kernels compiled here.
#   bash benchmarks/snapshot.sh SRC DEST
set -euo pipefail
SRC=${1:?usage: snapshot.sh SRC DEST}
DEST=${2:?usage: snapshot.sh SRC DEST}
rm -rf "$DEST" && mkdir -p "$DEST/src/tile"
for d in frontend dialects passes codegen runtime examples benchmarks; do cp -r "$SRC/$d" "$DEST/src/tile/"; done
cp "$SRC/__init__.py" "$DEST/src/tile/"
find "$DEST/src" -name __pycache__ -prune -exec rm -rf {} +
rm -rf "$DEST/src/tile/benchmarks/results"  # dated measurements: not needed to run, megabytes to carry
