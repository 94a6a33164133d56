//! Integration tests of `bb-host` over the real engine captures in `fixtures/engine/`: the
//! updates a webview receives rebuild the host's view however they are delivered.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod captures;
mod updates;
