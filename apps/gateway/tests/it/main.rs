//! End-to-end tests of the built `bb-gateway`: the URL line, the page and its headers,
//! admission (token, Origin, Host), the WebSocket envelope with the `bb.*` methods, the
//! platform and ACP methods, size limits, isolation of connections, the sidebar page in a
//! real Chromium (on the demo engine and on real Kilo), the page's update store held to the
//! reference applier, and WebSocket conformance (kosoku).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::print_stderr,
    clippy::print_stdout,
    clippy::type_complexity
)]

mod acp;
mod admission;
mod breadboard;
mod browser;
mod cli;
mod conformance;
mod folders;
mod harness;
mod kilo;
mod page_store;
mod restart;
mod rpc;
mod shared_prompt;
mod trust;
