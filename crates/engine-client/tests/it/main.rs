//! Integration tests of bb-engine-client.
#![allow(clippy::unwrap_used, clippy::expect_used)]
