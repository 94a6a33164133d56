//! `bb-harness`: black-box drivers over the bridge's crates, used by tests and by checks run
//! from outside. Each subcommand lives in a module of its own.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod fake_engine;

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
    /// Serve a fake engine on loopback; prints its URL on stdout once listening.
    FakeEngine(fake_engine::FakeEngineArgs),
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Runtime::new()?;
    match args.command {
        Command::FakeEngine(args) => runtime.block_on(fake_engine::run(args)),
    }
}
