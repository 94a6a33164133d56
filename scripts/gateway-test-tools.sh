#!/usr/bin/env bash
# Installs what the gateway's browser and conformance tests need (apps/gateway/tests/it):
# Debian's Chromium, playwright-core from npm (never a browser download) and kosoku from
# PyPI in a venv under target/tools. Idempotent. A failure is reported and not fatal here:
# the tests then fail and say what is missing.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

status=0
if [ ! -x /usr/bin/chromium ] && [ -z "${BB_CHROMIUM:-}" ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && sudo="sudo"
  if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq chromium >/dev/null; }; then
    echo "gateway-test-tools: could not install chromium (apt-get install -y chromium)" >&2
    status=1
  fi
fi

browser=apps/gateway/tests/browser
if [ ! -d "$browser/node_modules/playwright-core" ]; then
  # playwright-core downloads no browser; the tests launch /usr/bin/chromium.
  if ! npm ci --prefix "$browser" --no-audit --no-fund >/dev/null; then
    echo "gateway-test-tools: npm ci in $browser failed" >&2
    status=1
  fi
fi

venv=target/tools/kosoku
if [ ! -x "$venv/bin/kosoku" ]; then
  if ! { python3 -m venv "$venv" && "$venv/bin/pip" install -q kosoku; }; then
    echo "gateway-test-tools: could not install kosoku into $venv" >&2
    status=1
  fi
fi
exit $status
