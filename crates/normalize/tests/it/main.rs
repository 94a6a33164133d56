//! Integration tests of `bb-normalize` over the real engine captures in `fixtures/engine/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod captures;
mod fixtures;
mod updates;
