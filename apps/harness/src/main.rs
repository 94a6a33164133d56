//! `bb-harness`: black-box drivers over the bridge's crates, used by tests and by checks run
//! from outside. Each subcommand lives in a module of its own.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod check_envelope;
mod fake_engine;
mod sse_parse;
mod sse_test_service;

use clap::{Parser, Subcommand};

/// Black-box drivers, fake engines and conformance services for testing the bridge.
#[derive(Debug, Parser)]
#[command(name = "bb-harness", version)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate one envelope per stdin line; print one verdict line per input line.
    CheckEnvelope(check_envelope::Args),
    /// Serve a fake engine on loopback; prints its URL on stdout once listening.
    FakeEngine(fake_engine::FakeEngineArgs),
    /// Read an SSE byte stream on stdin; print one JSON line per dispatched event
    /// (`{"type","data","lastEventId"}`) and per valid retry field (`{"retry"}`).
    SseParse,
    /// Serve LaunchDarkly's sse-contract-tests test-service API around the bridge's SSE
    /// client; prints its URL on stdout once listening.
    SseTestService(sse_test_service::SseTestServiceArgs),
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    match args.command {
        Command::CheckEnvelope(a) => check_envelope::run(&a),
        Command::FakeEngine(args) => {
            tokio::runtime::Runtime::new()?.block_on(fake_engine::run(args))
        }
        Command::SseParse => sse_parse::run(),
        Command::SseTestService(args) => {
            tokio::runtime::Runtime::new()?.block_on(sse_test_service::run(args))
        }
    }
}
