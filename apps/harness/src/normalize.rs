//! `bb-harness normalize`: reads an engine SSE capture, classifies and reduces every event,
//! and prints the final session view model (or, with `--classes`, one line per event).

use std::io::Write;
use std::path::Path;

use anyhow::Context as _;
use bb_engine_client::sse::{SseItem, SseParser};
use bb_normalize::{Classified, Engine, RawEvent, SessionView};
use serde_json::json;

/// Which engine produced the capture.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum EngineArg {
    /// Kilo CLI server / opencode.
    Kilo,
    /// BreadBoard engine.
    Breadboard,
}

impl From<EngineArg> for Engine {
    fn from(e: EngineArg) -> Self {
        match e {
            EngineArg::Kilo => Engine::Kilo,
            EngineArg::Breadboard => Engine::BreadBoard,
        }
    }
}

/// One SSE data payload that is not a usable event: reported, not fatal.
#[derive(Debug)]
pub(crate) struct Rejected {
    pub(crate) sse_id: String,
    pub(crate) error: String,
}

/// Reads an SSE file into raw events, in stream order.
pub(crate) fn read_events(
    engine: Engine,
    path: &Path,
) -> anyhow::Result<(Vec<RawEvent>, Vec<Rejected>)> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mut parser = SseParser::default();
    let mut items = Vec::new();
    parser.feed(&bytes, &mut items).context("parsing the SSE stream")?;
    // A capture that ends without a blank line still holds a complete last event.
    if !bytes.ends_with(b"\n\n") && !bytes.is_empty() {
        parser.feed(b"\n\n", &mut items).context("parsing the SSE stream")?;
    }
    let mut events = Vec::new();
    let mut rejected = Vec::new();
    for item in items {
        let SseItem::Event(e) = item else { continue };
        if e.data.is_empty() {
            continue;
        }
        let sse_id = (!e.last_event_id.is_empty()).then_some(e.last_event_id.as_str());
        match RawEvent::parse(engine, &e.data, sse_id) {
            Ok(ev) => events.push(ev),
            Err(err) => rejected
                .push(Rejected { sse_id: e.last_event_id.to_string(), error: err.to_string() }),
        }
    }
    Ok((events, rejected))
}

/// Runs the subcommand. With `session`, only that session's events (and events that name
/// no session, such as connection-level ones) are reduced, as the adapter routes them.
pub(crate) fn run(
    engine: EngineArg,
    classes: bool,
    session: Option<&str>,
    file: &Path,
) -> anyhow::Result<()> {
    let (mut events, rejected) = read_events(engine.into(), file)?;
    if let Some(s) = session {
        events.retain(|e| e.session_id.as_deref().is_none_or(|id| id == s));
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if classes {
        for ev in events {
            let item = Classified::new(ev);
            let line = json!({ "id": item.event.id, "type": item.event.kind, "class": item.class });
            serde_json::to_writer(&mut out, &line)?;
            out.write_all(b"\n")?;
        }
    } else {
        let mut view = SessionView::new();
        for ev in events {
            view.apply_event(ev);
        }
        let mut value = serde_json::to_value(&view)?;
        if !rejected.is_empty()
            && let Some(obj) = value.as_object_mut()
        {
            let list: Vec<_> =
                rejected.iter().map(|r| json!({ "sseId": r.sse_id, "error": r.error })).collect();
            obj.insert("rejected".to_owned(), list.into());
        }
        serde_json::to_writer_pretty(&mut out, &value)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}
