#!/usr/bin/env bash
# The project's test command (README.md): makes sure what the tests need is installed, then
# runs every test of the workspace with cargo-nextest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

command -v cargo-nextest >/dev/null || cargo install cargo-nextest --locked

cargo nextest run --workspace --all-targets --no-fail-fast "$@"
# nextest does not run doc tests.
cargo test --workspace --doc --quiet
