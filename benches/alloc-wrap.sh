#!/bin/sh
# A `--sidecar` for `bb-harness bench-e2e` that counts every allocation call of the sidecar:
# it runs BIN (a bb-sidecar built with `--features memdbg`, so `BB_MEMDBG_SYSTEM=1` routes its
# allocations through glibc's malloc) under heaptrack's preload and writes OUT.PID.gz.
# Read the capture with `benches/alloc-calls.py OUT.PID.gz`. BENCHMARKS.md, eighth round.
#   printf '#!/bin/sh\nBIN=%s OUT=%s exec %s "$@"\n' "$PWD/target/release/bb-sidecar" /tmp/cap \
#     "$PWD/benches/alloc-wrap.sh" > /tmp/ht.sh && chmod +x /tmp/ht.sh
BIN=${BIN:?set BIN to a bb-sidecar built with --features memdbg}
OUT=${OUT:?set OUT to the capture path prefix}
rm -f "$OUT.pipe.$$"; mkfifo "$OUT.pipe.$$"
/usr/lib/heaptrack/libexec/heaptrack_interpret < "$OUT.pipe.$$" | gzip > "$OUT.$$.gz" &
BB_MEMDBG_SYSTEM=1 LD_PRELOAD=/usr/lib/heaptrack/libheaptrack_preload.so \
  DUMP_HEAPTRACK_OUTPUT="$OUT.pipe.$$" exec "$BIN" "$@"
