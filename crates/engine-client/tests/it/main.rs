//! Integration tests of `bb-engine-client`: real Kilo captures, a fake HTTP engine (faults),
//! and the real Kilo engine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod captures;
mod http_faults;
mod real_engine;
mod rest_captures;
