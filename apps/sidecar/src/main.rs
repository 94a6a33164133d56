//! `bb-sidecar`: the stdio bridge binary. The engine wiring lands with the stdio bridge; until
//! then the binary says so and exits with an error instead of pretending to serve.

use clap::Parser;

/// The stdio sidecar: one webview on stdin/stdout, one engine per workspace.
#[derive(Debug, Parser)]
#[command(name = "bb-sidecar", version)]
struct Args {}

fn main() -> anyhow::Result<()> {
    let Args {} = Args::parse();
    anyhow::bail!("bb-sidecar: no engine adapter is built into this version yet")
}
