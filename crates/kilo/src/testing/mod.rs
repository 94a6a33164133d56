//! The setup the tests that run the real Kilo engine (`kilo serve`, `kilo acp`) share, behind
//! the `testing` feature: an isolated world ([`KiloWorld`]: temp dirs, the engine's HOME/XDG
//! environment and switches), the scripted mock LLM it talks to ([`MockLlm`], `mock_llm.py`
//! next to this crate's manifest, killed on drop), the engine binary ([`kilo_bin`]), and a
//! client of the test's own for the engine a bridge supervises ([`supervised_kilo`],
//! [`slow_turn_streaming`]).
//!
//! IO contract: creates temp dirs, writes the engine config, runs `python3` and
//! `bash scripts/engine.sh`; a failure panics with its reason, as a test would. Only ever
//! enabled from `[dev-dependencies]`.

// Test setup: it spawns processes and reads the clock directly, and fails by panicking.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stderr,
    missing_docs
)]

mod kilo;
mod mock_llm;
mod world;

#[cfg(test)]
mod tests;

pub use kilo::{
    SupervisedKilo, assert_turn_from_its_start, kilo_bin, kilo_bin_or_skip, opencode_bin,
    slow_turn_streaming, supervised_kilo,
};
pub use mock_llm::MockLlm;
pub use world::KiloWorld;
