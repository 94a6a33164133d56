//! Dev-only setup shared by the tests that run the real Kilo engine (`kilo serve`, `kilo acp`):
//! an isolated world ([`KiloWorld`]: temp dirs, the engine's HOME/XDG environment and
//! switches), the scripted mock LLM it talks to ([`MockLlm`], `mock_llm.py` next to this
//! crate's manifest, killed on drop), the engine binary ([`kilo_bin`]), a client of the test's
//! own for the engine a bridge supervises ([`supervised_kilo`], [`slow_turn_streaming`]),
//! process inspection through `/proc` ([`procfs`]), and the engine captures under
//! `fixtures/engine/` read as data lines ([`captures`]).
//!
//! IO contract: creates temp dirs, writes the engine config, runs `python3` and
//! `bash scripts/engine.sh`; a failure panics with its reason, as a test would. Only ever a
//! `[dev-dependencies]` entry: no shipped crate links it.

// Test setup: it spawns processes and reads the clock directly, and fails by panicking.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stderr
)]

pub mod captures;
mod kilo;
mod mock_llm;
pub mod procfs;
mod world;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use kilo::{
    SupervisedKilo, assert_turn_from_its_start, kilo_bin, kilo_bin_or_skip, opencode_bin,
    slow_turn_streaming, supervised_kilo,
};
pub use mock_llm::MockLlm;
pub use world::KiloWorld;

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
