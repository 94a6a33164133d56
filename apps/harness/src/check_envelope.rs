//! `bb-harness check-envelope`: validates one message per stdin line and prints one verdict
//! line per input line (`{"verdict":…}`), never stopping early.

use std::io::{self, BufRead, Write};

use bb_protocol::{DEFAULT_MAX_BYTES, Limits, Transport, Verdict};

/// Arguments of `check-envelope`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Envelope to validate against: `v1` or `ws`.
    #[arg(long)]
    transport: Transport,
    /// Largest message accepted, in bytes; longer lines are `payload_too_large`.
    #[arg(long, default_value_t = DEFAULT_MAX_BYTES)]
    max_bytes: usize,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let limits = Limits::with_max_bytes(args.max_bytes);
    let stdin = io::stdin();
    let stdout = io::stdout();
    check_lines(args.transport, &limits, stdin.lock(), stdout.lock())
}

/// Reads `input` line by line (`\n`, with one trailing `\r` dropped) and writes one verdict
/// per line. A line longer than the limit is not buffered past it: the rest is skipped and
/// the verdict is `payload_too_large`.
pub(crate) fn check_lines(
    transport: Transport,
    limits: &Limits,
    mut input: impl BufRead,
    mut output: impl Write,
) -> anyhow::Result<()> {
    // Keep at most limit + 2 bytes of a line (the message, one more byte to know it is too
    // long, and a possible `\r`).
    let keep = limits.max_bytes.saturating_add(2);
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut overflowed = false;
        let mut saw_any = false;
        loop {
            let chunk = input.fill_buf()?;
            if chunk.is_empty() {
                break;
            }
            saw_any = true;
            let (part, done) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (&chunk[..i], Some(i + 1)),
                None => (chunk, None),
            };
            let room = keep.saturating_sub(line.len());
            if part.len() > room {
                overflowed = true;
            }
            line.extend_from_slice(&part[..part.len().min(room)]);
            let consumed = done.unwrap_or(chunk.len());
            input.consume(consumed);
            if done.is_some() {
                break;
            }
        }
        if !saw_any {
            return Ok(());
        }
        if !overflowed && line.last() == Some(&b'\r') {
            line.pop();
        }
        let verdict = if overflowed || line.len() > limits.max_bytes {
            Verdict::Rejected { code: bb_protocol::RejectCode::PayloadTooLarge.as_str().into() }
        } else {
            Verdict::of(transport, &line, limits)
        };
        serde_json::to_writer(&mut output, &verdict)?;
        output.write_all(b"\n")?;
        output.flush()?;
    }
}
