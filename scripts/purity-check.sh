#!/usr/bin/env bash
# STYLE.md rule 5: the pure core crates must not depend (normally) on an async runtime, an
# HTTP stack or a process API. Fails listing the offending dependency path.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pure=(bb-payload bb-protocol bb-normalize bb-host)
banned='^(tokio|reqwest|hyper|mio|axum|async-std|smol|tokio-tungstenite) '
status=0
for krate in "${pure[@]}"; do
  deps=$(cargo tree -p "$krate" -e normal --prefix none --no-dedupe --locked)
  if bad=$(grep -E "$banned" <<<"$deps"); then
    echo "purity: $krate depends on:" >&2
    sort -u <<<"$bad" >&2
    status=1
  else
    echo "purity: $krate is free of IO runtimes ($(sort -u <<<"$deps" | wc -l) crates checked)"
  fi
done
exit $status
