//! End-to-end tests of `bb-sidecar`: the built binary is spawned and driven over stdio, against
//! the real Kilo server (with a scripted mock LLM) and against a fake engine for faults.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::print_stderr
)]

mod acp;
mod acp_client;
mod acp_opencode;
mod breadboard;
mod breadboard_engine;
mod breaker;
mod cli;
mod delivery;
mod faults;
mod harness;
mod heartbeat;
mod kilo;
mod kilo_permissions;
mod kilo_size;
mod kilo_tools;
mod listen;
mod multi_root;
mod ordering;
mod prompts;
mod protocol;
mod restart_prompts;
mod robustness;
mod shared_prompt;
mod trust;
