//! `bb-gateway`: the WebSocket bridge binary. Until the gateway lands the binary says so and
//! exits with an error instead of pretending to serve.

use clap::Parser;

/// The WebSocket gateway for Tauri and browser webviews.
#[derive(Debug, Parser)]
#[command(name = "bb-gateway", version)]
struct Args {}

fn main() -> anyhow::Result<()> {
    let Args {} = Args::parse();
    anyhow::bail!("bb-gateway: the WebSocket gateway is not built into this version yet")
}
