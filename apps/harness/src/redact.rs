//! `bb-harness redact`: redacts stdin to stdout. A JSON document stays valid JSON (values
//! redacted, secrets under sensitive keys replaced); anything else is redacted as text.

use std::io::{Read, Write};

use anyhow::Context as _;

/// Runs the subcommand.
pub(crate) fn run() -> anyhow::Result<()> {
    let mut input = Vec::new();
    std::io::stdin().read_to_end(&mut input).context("reading stdin")?;
    let text = String::from_utf8_lossy(&input);
    let out = bb_normalize::redact::redact_document(&text);
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    lock.write_all(out.as_bytes())?;
    if serde_json::from_str::<serde_json::Value>(&text).is_ok() && !out.ends_with('\n') {
        lock.write_all(b"\n")?;
    }
    lock.flush()?;
    Ok(())
}
