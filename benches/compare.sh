#!/usr/bin/env bash
# Runs `bb-harness ingest` and the Node peer side by side on the same 100,000-event Kilo
# capture (the fixtures/engine/kilo/*.sse events cycled), ROUNDS times each, alternating.
# Usage: benches/compare.sh [ROUNDS]   (from the repository root)
set -euo pipefail
rounds=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
capture=$target/kilo-100k.sse
[ -f "$capture" ] || python3 "$root/benches/make-capture.py" --events 100000 "$capture"
cargo build --release --locked -q -p bb-harness
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cp "$root/benches/node-peer/package.json" "$root/benches/node-peer/peer.mjs" "$prefix/"
(cd "$prefix" && npm install --silent --no-audit --no-fund >/dev/null)
echo "node $(node --version), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$rounds"); do
  printf 'rust %s\n' "$("$target/release/bb-harness" ingest --engine kilo "$capture")"
  printf 'node %s\n' "$(node "$prefix/peer.mjs" "$capture")"
done
