#!/usr/bin/env bash
# The project's test command (README.md): makes sure what the tests need is installed, then
# runs every test of the workspace with cargo-nextest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

command -v cargo-nextest >/dev/null || cargo install cargo-nextest --locked

# The real Kilo engine for the end-to-end tests (installed under target/engines/kilo). A
# failure here is not fatal by itself: the real-engine tests then fail and say why, unless
# BB_SKIP_REAL_ENGINE=1 opts out explicitly (CI never sets it).
if BB_KILO_BIN="$(bash scripts/engine.sh)"; then
  export BB_KILO_BIN
else
  echo "test.sh: the Kilo engine could not be installed; real-engine tests will fail" >&2
fi
# opencode, whose `opencode acp` the ACP tests drive as a second real agent.
if BB_OPENCODE_BIN="$(bash scripts/engine.sh opencode)"; then
  export BB_OPENCODE_BIN
else
  echo "test.sh: opencode could not be installed; its ACP tests will fail" >&2
fi

# The gateway's browser test (Debian's Chromium + playwright-core) and WebSocket conformance
# suite (kosoku); like the engine, a failed install makes those tests fail and say why.
bash scripts/gateway-test-tools.sh || echo "test.sh: gateway test tools incomplete; see above" >&2

# Doc examples first (nextest does not run them), then every other test.
cargo test --workspace --doc --quiet
cargo nextest run --workspace --all-targets --no-fail-fast "$@"

# The VS Code extension: unit tests, the .vsix as `npm ci && npm run package` builds it (with
# the release sidecar), and its end-to-end run in code-server. Not with a nextest filter
# (a targeted run), which this says.
if [ "$#" -eq 0 ]; then
  bash editors/vscode/test/run.sh
else
  echo "test.sh: a filtered run ($*): the VS Code extension's tests were not run"
fi
