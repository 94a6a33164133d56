//! Dev-only helpers every engine's tests share: the repository root, a bounded wait
//! ([`eventually`]), process inspection through `/proc` ([`procfs`]) and the engine captures
//! under `fixtures/engine/` read as data lines or raw events ([`captures`]). What an engine's
//! tests need of their own lives with the engine (`bb_kilo::testing`: the isolated world, the
//! mock LLM, the engine binary).
//!
//! IO contract: reads `/proc` and the capture files; a failure panics with its reason, as a test would. Only ever a
//! `[dev-dependencies]` entry (or the optional dependency of an engine crate's `testing`
//! feature, itself only enabled from `[dev-dependencies]`): no shipped binary links it.

// Test setup: it spawns processes and reads the clock directly, and fails by panicking.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stderr
)]

pub mod captures;
pub mod procfs;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The repository root (where `scripts/` and `fixtures/` live).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Polls `cond` every 50 ms until it holds; panics naming `what` once `within` has passed.
pub fn eventually(within: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out after {within:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
