//! `bb-harness`: black-box drivers over the bridge's crates, used by tests and by checks run
//! from outside. Each subcommand lives in a module of its own.

mod sse_parse;

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
    /// Read an SSE byte stream on stdin; print one JSON line per dispatched event
    /// (`{"type","data","lastEventId"}`) and per valid retry field (`{"retry"}`).
    SseParse,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    match args.command {
        Command::SseParse => sse_parse::run(),
    }
}
