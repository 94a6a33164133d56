//! Integration tests of `bb-harness`: each subcommand in a module of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod check_envelope;
mod contain;
mod ingest;
mod normalize;
mod redact;
mod run;
mod soak;
mod sse_conformance;
mod sse_parse;
mod sse_test_service;
