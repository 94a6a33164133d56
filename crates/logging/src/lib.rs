//! Logging for the bridge binaries: a `tracing` subscriber whose every line — the bridge's
//! own and the engine output the spawner forwards to `tracing` — passes `bb-normalize`'s
//! redaction before it is written.
//!
//! IO contract: writes log lines to the writer it is given (stderr for [`init`]); reads no
//! clock of its own (the formatter's timestamps come from `tracing-subscriber`).
//!
//! # Choices
//!
//! * Redaction happens on the formatted line, after every field is rendered, so no field,
//!   span or message escapes it: `bb_normalize::redact::redact_log_line` (sensitive
//!   `key=value` / `key: value` pairs, auth headers, URL query secrets, credential-shaped
//!   values), control characters replaced so one event is one line, capped at
//!   [`bb_normalize::redact::LOG_LINE_CAP`] bytes.
//! * Secrets the bridge knows exactly (the engine's password) are also removed by the
//!   spawner before a line reaches `tracing` (`bb_supervisor::redact::LineRedactor`); this
//!   layer is the net for everything else.
//! * The filter is `RUST_LOG`, `info` by default; no ANSI colours (the output is a log).

mod writer;

pub use writer::{RedactingMakeWriter, RedactingWriter};

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber: formatted lines, redacted, to stderr, filtered by
/// `RUST_LOG` (default `info`). Call once, first thing in `main`.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_writer(RedactingMakeWriter::new(std::io::stderr))
        .with_ansi(false)
        .with_env_filter(filter)
        .init();
}

#[cfg(test)]
mod tests;
