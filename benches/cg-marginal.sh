#!/usr/bin/env bash
# Marginal instructions and allocation calls per streamed event of a `bb-sidecar`, start-up
# left out: the sidecar runs under callgrind for a `--seconds 10` and a `--seconds 20`
# `perSession` run at 100 sessions, and each figure is (20 s run − 10 s run) / 10,000 events.
# Also prints the socket reads per event: the figure holds only while the slowed sidecar keeps
# up with the bench's writes (2.01 reads per BreadBoard event); on a loaded machine a read
# finds two events and the count per event drops (BENCHMARKS.md, twenty-second round).
#   benches/cg-marginal.sh SIDECAR SHAPE [HARNESS] [OUTDIR]     (SHAPE: kilo or breadboard)
# SIDECAR `floor`: the floor relay (`HARNESS floor-relay`, paced as the sidecar with
# BB_GATHER_MS=33) in the sidecar's place.
set -euo pipefail
shape=$2
harness=$(realpath "${3:-target/release/bb-harness}"); out=${4:-$(mktemp -d)}; mkdir -p "$out"
if [ "$1" = floor ]; then
  sidecar="$harness floor-relay"; export BB_GATHER_MS=33
else
  sidecar=$(realpath "$1")
fi
here=$(dirname "$(realpath "$0")")
for s in 10 20; do
  printf '#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file=%s/cg-%s.out %s "$@" 2>/dev/null\n' \
    "$out" "$s" "$sidecar" > "$out/wrap-$s.sh"
  chmod +x "$out/wrap-$s.sh"
  "$harness" bench-e2e --sidecar "$out/wrap-$s.sh" --only perSession --sessions 100 \
    --shapes "$shape" --seconds "$s" > "$out/run-$s.json" 2>/dev/null
done
python3 "$here/cg-marginal.py" "$out/cg-10.out" "$out/cg-20.out" "$out/run-10.json" "$out/run-20.json"
