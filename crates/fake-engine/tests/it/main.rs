//! Integration tests of the fake BreadBoard engine over HTTP: fidelity to the captures of
//! the real engine, the documented routes and errors, and injected faults.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod faults;
mod observed;
mod protocol;
mod replays;
mod support;
