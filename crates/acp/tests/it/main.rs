//! bb-acp against the real `kilo acp` (with the mock LLM) and a fake agent for faults.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::print_stderr
)]

mod capable;
mod fake;
mod harness;
mod kilo;
