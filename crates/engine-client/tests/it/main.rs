//! Integration tests of `bb-engine-client`: real Kilo captures, a fake HTTP engine (faults),
//! the real Kilo engine, and the BreadBoard client against its captures and fake engine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod breadboard;
mod captures;
mod http_faults;
mod real_engine;
mod rest_captures;
