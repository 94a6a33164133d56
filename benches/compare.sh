#!/usr/bin/env bash
# Runs `bb-harness ingest` (the sidecar's stages as tasks, and `--serial`: the same stages on
# one thread) and the Node peer side by side on the same 100,000-event Kilo capture (the
# fixtures/engine/kilo/*.sse events cycled), ROUNDS times each, alternating; then the median
# of each. First it checks that both send the webview the same messages (`check-peer.py`).
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
"$target/release/bb-harness" ingest --engine kilo --out "$prefix/bridge.jsonl" "$capture" >/dev/null
node "$prefix/peer.mjs" --out "$prefix/node.jsonl" "$capture" >/dev/null
python3 "$root/benches/check-peer.py" "$prefix/bridge.jsonl" "$prefix/node.jsonl"
rm -f "$prefix/bridge.jsonl" "$prefix/node.jsonl"
echo "node $(node --version), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$rounds"); do
  printf 'rust %s\n' "$("$target/release/bb-harness" ingest --engine kilo "$capture")"
  printf 'serial %s\n' "$("$target/release/bb-harness" ingest --serial --engine kilo "$capture")"
  printf 'node %s\n' "$(node "$prefix/peer.mjs" "$capture")"
done | tee "$prefix/runs"
python3 - "$prefix/runs" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, report = line.split(" ", 1)
    runs.setdefault(name, []).append(json.loads(report))
med = {n: {k: statistics.median(r[k] for r in rs) for k in ("seconds", "cpuSeconds")} for n, rs in runs.items()}
for n, m in med.items():
    print(f"median {n}: {m['seconds']:.3f} s wall, {m['cpuSeconds']:.3f} s CPU")
for n in ("rust", "serial"):
    print(f"node / {n}: {med['node']['seconds'] / med[n]['seconds']:.2f}x wall, "
          f"{med['node']['cpuSeconds'] / med[n]['cpuSeconds']:.2f}x CPU")
PY
