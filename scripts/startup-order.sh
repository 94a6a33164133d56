#!/usr/bin/env bash
# Regenerates apps/sidecar/startup-order.txt: the functions a sidecar runs from its start to
# idle after `bb.init` on the demo engine and those it runs while it streams (a `bench-e2e`
# sparse run and 10-session perSession runs on the Kilo and BreadBoard shapes), in three
# blocks: idle only, both, streaming only.
# The release link of `bb-sidecar` places them first in .text in that order
# (apps/sidecar/build.rs), so the kernel's 64 KiB fault-around maps a compact block of code
# instead of windows all over the binary: the idle resident set is ~3 MB smaller, and a
# streaming one keeps its hot code in one block after the start-up code (BENCHMARKS.md).
#
# The names are mangled and carry hashes that change with Cargo.lock, the compiler, features
# and `[profile.release]` settings: rerun this after any of these changes (or when
# `bench-e2e`'s idle RSS creeps up). A stale list is harmless: missing names are skipped,
# and the binary only loses the compact layout for the functions it no longer names.
#
# usage: scripts/startup-order.sh [--check]
#   --check: only count how many of the listed names the release sidecar has (building it
#   if needed, as the VS Code package does), and fail when fewer than 95 % are: CI runs this,
#   because a list gone stale costs the user's idle resident set silently (a commit that
#   moved a type between crates renamed ~700 functions: 67 % listed, idle RSS 5.3 → 7.4 MB).
# Needs valgrind (callgrind). Builds the release sidecar first (~5 min from scratch).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

list=apps/sidecar/startup-order.txt
bin="${CARGO_TARGET_DIR:-target}/release/bb-sidecar"
runs=3

die() { echo "startup-order: $*" >&2; exit 1; }

if [ "${1:-}" = --check ]; then
  # Only the sidecar, exactly as `npm run package` builds it (a no-op after that build).
  cargo build --release --locked -p bb-sidecar >&2
  [ -x "$bin" ] || die "no binary at $bin"
  total=$(grep -cv '^#' "$list")
  found=$(nm --defined-only "$bin" | awk '{print $3}' | LC_ALL=C sort -u |
    LC_ALL=C comm -12 - <(grep -v '^#' "$list" | LC_ALL=C sort -u) | wc -l)
  echo "startup-order: $found of $total listed functions are in $bin"
  [ $((found * 100)) -ge $((total * 95)) ] ||
    die "the list is stale (fewer than 95 % of its functions are in the binary): run scripts/startup-order.sh and commit apps/sidecar/startup-order.txt"
  exit 0
fi

cargo build --release --locked -p bb-sidecar -p bb-harness >&2
[ -x "$bin" ] || die "no binary at $bin"
harness="${CARGO_TARGET_DIR:-target}/release/bb-harness"

command -v valgrind >/dev/null || die "valgrind is needed"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One run: start the demo sidecar under callgrind with the log filter a user's sidecar has
# (`RUST_LOG` unset, as the VS Code extension spawns it, so the log lines' code is packed
# too), send bb.init, wait for the response, stay idle for 2 s (the measurement reads the
# resident set after 1 s), then close stdin so it exits in order and callgrind writes its
# profile.
profile() {
  mkdir -p "$tmp/ws$1"
  coproc SIDECAR {
    exec env -u RUST_LOG valgrind --tool=callgrind --demangle=no \
      --callgrind-out-file="$tmp/cg.$1" "$bin" --engine demo --workspace "$tmp/ws$1" 2>/dev/null
  }
  local pid=$SIDECAR_PID in=${SIDECAR[1]} out
  echo '{"v":1,"kind":"req","id":"init","method":"bb.init","params":{}}' >&"$in"
  read -r -t 120 out <&"${SIDECAR[0]}" || die "no bb.init response"
  grep -q '"ok":true' <<<"$out" || die "bb.init failed: $out"
  sleep 2
  exec {in}>&-
  wait "$pid" || die "the sidecar exited with $?"
}
for i in $(seq "$runs"); do profile "$i"; done

# The streaming runs: bench-e2e drives the sidecar under callgrind (slow, so few events).
mkdir -p "$tmp/stream"
printf '#!/bin/sh\nexec valgrind --tool=callgrind --demangle=no --callgrind-out-file=%s/stream/cg.%%p %s "$@" 2>/dev/null\n' \
  "$tmp" "$(realpath "$bin")" >"$tmp/callgrind.sh"
chmod +x "$tmp/callgrind.sh"
"$harness" bench-e2e --sidecar "$tmp/callgrind.sh" --only sparse,perSession --sessions 10 \
  --seconds 3 --shapes kilo,breadboard >&2 || die "the streaming runs failed"

# The functions of the sidecar's own object with a cost in any run. callgrind compresses
# repeated names to "(id)"; a recursion level shows as a "'N" suffix.
names() {
awk '
  function name(s, map,   id) {
    if (match(s, /^\([0-9]+\)/)) {
      id = substr(s, 2, RLENGTH - 2)
      if (length(s) > RLENGTH) map[id] = substr(s, RLENGTH + 2)
      return map[id]
    }
    return s
  }
  /^ob=/  { ob = name(substr($0, 4), obs); next }
  /^cob=/ { name(substr($0, 5), obs); next }
  /^cfn=/ { name(substr($0, 5), fns); next }
  /^fn=/  {
    f = name(substr($0, 4), fns)
    sub(/'\''[0-9]+$/, "", f)
    if (ob ~ /\/bb-sidecar$/ && f !~ /^(0x|\()/) print f
  }
' "$@" | LC_ALL=C sort -u
}
# Three blocks, so that neither kind of sidecar maps the other's code: the functions only an
# idle demo sidecar runs, then those both run, then those only a streaming sidecar runs. An
# idle sidecar touches the first two blocks, a streaming one the last two.
names "$tmp"/cg.* >"$tmp/idle"
names "$tmp"/stream/cg.* >"$tmp/stream.all"
LC_ALL=C comm -23 "$tmp/idle" "$tmp/stream.all" >"$tmp/idle.only"
LC_ALL=C comm -12 "$tmp/idle" "$tmp/stream.all" >"$tmp/both"
LC_ALL=C comm -13 "$tmp/idle" "$tmp/stream.all" >"$tmp/streaming"

{
  echo "# Functions a release bb-sidecar runs only from start to idle after bb.init on the demo"
  echo "# engine, then those it runs there and while it streams (bench-e2e sparse and perSession,"
  echo "# Kilo and BreadBoard), then those it runs only while it streams, placed first in .text in"
  echo "# this order by the linker (apps/sidecar/build.rs). Generated by scripts/startup-order.sh;"
  echo "# do not edit by hand."
  cat "$tmp/idle.only" "$tmp/both" "$tmp/streaming"
} >"$list"
echo "startup-order: $(wc -l <"$tmp/idle.only") idle-only + $(wc -l <"$tmp/both") shared + $(wc -l <"$tmp/streaming") streaming-only functions written to $list" >&2
