//! Unit tests of the pure core: tables from `fixtures/normalize/`, rule tests and property
//! tests, one module per area.

mod acp;
mod batch;
mod class;
mod contain;
mod redact;
mod reduce;
mod strategies;
mod truncate;
mod typed;

use std::path::PathBuf;

/// `fixtures/normalize/<name>` in the repository.
fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/normalize").join(name)
}

/// The JSON lines of a fixture file.
fn jsonl(name: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The base instant of simulated time; tests only add durations to it.
#[allow(clippy::disallowed_methods)]
fn epoch() -> std::time::Instant {
    std::time::Instant::now()
}
