//! `bb-harness sse-parse`: reads an SSE byte stream on stdin and prints one JSON line per
//! dispatched event, plus one per valid `retry` field, in stream order.

use std::io::{self, Read, Write};

use anyhow::Context as _;
use bb_engine_client::sse::{SseItem, SseParser};
use serde_json::json;

/// Parses stdin to the end, writing `{"type","data","lastEventId"}` and `{"retry"}` lines.
/// A stream over the parser's limits ends with an error after the items before it.
pub(crate) fn run() -> anyhow::Result<()> {
    let stdin = io::stdin();
    let stdout = io::stdout();
    parse(stdin.lock(), &mut stdout.lock())
}

fn parse(mut input: impl Read, output: &mut impl Write) -> anyhow::Result<()> {
    let mut parser = SseParser::default();
    let mut buf = vec![0u8; 64 * 1024];
    let mut items = Vec::new();
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err).context("reading stdin"),
        };
        let fed = parser.feed(&buf[..n], &mut items);
        for item in items.drain(..) {
            let line = match item {
                SseItem::Event(e) => json!({
                    "type": e.event_type,
                    "data": e.data,
                    "lastEventId": e.last_event_id,
                }),
                SseItem::Retry(ms) => json!({ "retry": ms }),
                SseItem::Comment(_) => continue,
            };
            serde_json::to_writer(&mut *output, &line)?;
            output.write_all(b"\n")?;
        }
        fed.context("parsing the SSE stream")?;
    }
    output.flush()?;
    Ok(())
}
