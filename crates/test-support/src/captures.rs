//! The engine captures under `fixtures/engine/`: every Kilo and BreadBoard `.sse` stream
//! (read with the bridge's own SSE parser) and every ACP `.jsonl` update list, as data lines
//! or as raw events.

use std::path::{Path, PathBuf};

use bb_engine_client::sse::{SseItem, SseParser};
use bb_normalize::{Engine, RawEvent};

/// One event of a capture: the SSE `id` (when the stream gave one) and its `data`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedEvent {
    /// The SSE `id:` in effect, if any.
    pub id: Option<String>,
    /// The event's data (one JSON object).
    pub data: String,
}

/// The repository's `fixtures/engine` directory.
pub fn engine_fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine")
}

fn walk(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

/// Every capture with its engine: Kilo's (`kilo/**.sse`), BreadBoard's
/// (`breadboard/**.sse`), then ACP's (`acp/**.jsonl`), each sorted by path.
pub fn captures() -> Vec<(Engine, PathBuf)> {
    let mut all = Vec::new();
    for (engine, sub, ext) in [
        (Engine::Kilo, "kilo", "sse"),
        (Engine::BreadBoard, "breadboard", "sse"),
        (Engine::Acp, "acp", "jsonl"),
    ] {
        let mut files = Vec::new();
        walk(&engine_fixtures().join(sub), ext, &mut files);
        files.sort();
        all.extend(files.into_iter().map(|f| (engine, f)));
    }
    all
}

/// The events of one capture, in order (events without data left out).
///
/// # Panics
/// When the file cannot be read or its SSE framing is broken (a fixture is wrong).
pub fn read(engine: Engine, path: &Path) -> Vec<CapturedEvent> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    if engine == Engine::Acp {
        let text = String::from_utf8_lossy(&bytes);
        return text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(|l| CapturedEvent { id: None, data: l.to_owned() })
            .collect();
    }
    let mut parser = SseParser::default();
    let framing = |e| panic!("{}: {e}", path.display());
    let mut items = parser.feed_collect(&bytes).unwrap_or_else(framing);
    items.extend(parser.feed_collect(b"\n\n").unwrap_or_else(framing));
    items
        .into_iter()
        .filter_map(|item| match item {
            SseItem::Event(e) if !e.data.is_empty() => Some(CapturedEvent {
                id: (!e.last_event_id.is_empty()).then(|| e.last_event_id.to_string()),
                data: e.data,
            }),
            _ => None,
        })
        .collect()
}

/// The events of one capture as raw events, in order.
///
/// # Panics
/// When an event's data does not parse (a fixture is wrong).
pub fn raw_events(engine: Engine, path: &Path) -> Vec<RawEvent> {
    read(engine, path)
        .iter()
        .map(|e| {
            RawEvent::parse(engine, &e.data, e.id.as_deref())
                .unwrap_or_else(|err| panic!("{}: {err}", path.display()))
        })
        .collect()
}

/// A snapshot name for a capture path (`kilo__abort`, `breadboard__replays__…__live`).
pub fn snapshot_name(path: &Path) -> String {
    let rel = path.strip_prefix(engine_fixtures()).unwrap_or(path);
    rel.with_extension("").to_string_lossy().replace(['/', '\\'], "__")
}
