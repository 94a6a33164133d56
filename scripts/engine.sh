#!/usr/bin/env bash
# Makes sure the pinned Kilo CLI (@kilocode/cli-linux-x64@7.7.9) is installed under
# <repo>/target/engines/kilo (npm --prefix, nothing saved outside it) and prints the path of
# its `kilo` binary on stdout. Skips npm when the right version is already there.
# `engine.sh opencode` does the same for opencode (opencode-linux-x64@1.18.34, under
# target/engines/opencode), whose `opencode acp` the ACP tests also drive.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

case "${1:-kilo}" in
  kilo) pkg="@kilocode/cli-linux-x64"; version="7.7.9"; name=kilo ;;
  opencode) pkg="opencode-linux-x64"; version="1.18.34"; name=opencode ;;
  *) echo "engine.sh: unknown engine ${1}; use kilo or opencode" >&2; exit 2 ;;
esac
prefix="$PWD/target/engines/$name"
bin="$prefix/node_modules/$pkg/bin/$name"
manifest="$prefix/node_modules/$pkg/package.json"

die() { echo "engine.sh: $*" >&2; exit 1; }

[ "$(uname -s)" = Linux ] && [ "$(uname -m)" = x86_64 ] ||
  die "$pkg@$version exists for linux x86_64 only (this is $(uname -s) $(uname -m))"

have=""
if [ -f "$manifest" ]; then
  have="$(sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$manifest" | head -1)"
fi
if [ ! -x "$bin" ] || [ "$have" != "$version" ]; then
  command -v npm >/dev/null || die "npm is needed to install $pkg@$version"
  mkdir -p "$prefix"
  echo "engine.sh: installing $pkg@$version into $prefix" >&2
  timeout 600 npm install --prefix "$prefix" --no-save --no-package-lock --no-audit --no-fund \
    "$pkg@$version" >&2 || die "npm install of $pkg@$version failed"
fi
[ -x "$bin" ] || die "the engine binary is missing after install: $bin"
echo "$bin"
