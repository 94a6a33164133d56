//! `bb-harness redact`: redacts stdin to stdout. A JSON document stays valid JSON (values
//! redacted, secrets under sensitive keys replaced); anything else is redacted as text.

use std::io::{Read, Write};

use anyhow::Context as _;

/// Runs the subcommand. With `log_line`, prints the log-line form instead: redacted, one
/// line, capped at 8 KB.
pub(crate) fn run(log_line: bool) -> anyhow::Result<()> {
    let mut input = Vec::new();
    std::io::stdin().read_to_end(&mut input).context("reading stdin")?;
    let text = String::from_utf8_lossy(&input);
    if log_line {
        use bb_normalize::redact::{LOG_LINE_CAP, log_line_json, redact_log_line};
        let line = match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(v) => log_line_json(&v, LOG_LINE_CAP),
            Err(_) => redact_log_line(&text, LOG_LINE_CAP),
        };
        let stdout = std::io::stdout();
        let mut lock = stdout.lock();
        lock.write_all(line.as_bytes())?;
        lock.write_all(b"\n")?;
        lock.flush()?;
        return Ok(());
    }
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
