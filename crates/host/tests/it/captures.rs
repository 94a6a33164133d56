//! The engine captures (`fixtures/engine/**`: `.sse` streams of Kilo and BreadBoard, `.jsonl`
//! ACP updates), read into the engine events a host is fed.

use std::path::{Path, PathBuf};

use bb_engine_client::sse::{SseItem, SseParser};
use bb_host::Engine;
use bb_normalize::RawEvent;
use bb_protocol::v1::EngineEvent;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine")
}

/// Every capture, sorted, with its engine.
pub(crate) fn captures() -> Vec<(Engine, PathBuf)> {
    fn walk(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, ext, out);
            } else if path.extension().is_some_and(|e| e == ext) {
                out.push(path);
            }
        }
    }
    let mut all = Vec::new();
    for (engine, sub, ext) in [
        (Engine::Kilo, "kilo", "sse"),
        (Engine::BreadBoard, "breadboard", "sse"),
        (Engine::Acp, "acp", "jsonl"),
    ] {
        let mut files = Vec::new();
        walk(&fixtures().join(sub), ext, &mut files);
        files.sort();
        all.extend(files.into_iter().map(|f| (engine, f)));
    }
    all
}

fn engine_event(ev: RawEvent) -> EngineEvent {
    EngineEvent {
        id: ev.id.unwrap_or_default(),
        event_type: ev.kind,
        turn: ev.turn.and_then(|t| u64::try_from(t).ok()),
        ts: ev.ts.map(|t| t as f64),
        payload: if ev.payload.is_object() { ev.payload } else { Default::default() },
    }
}

/// The events of one capture, in order.
pub(crate) fn read(engine: Engine, path: &Path) -> Vec<EngineEvent> {
    let bytes = std::fs::read(path).unwrap();
    if engine == Engine::Acp {
        return String::from_utf8(bytes)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(|l| {
                let value = serde_json::from_str(l).unwrap();
                engine_event(RawEvent::from_value(Engine::Acp, value, None).unwrap())
            })
            .collect();
    }
    let mut parser = SseParser::default();
    let mut items = parser.feed_collect(&bytes).unwrap();
    items.extend(parser.feed_collect(b"\n\n").unwrap());
    items
        .into_iter()
        .filter_map(|item| match item {
            SseItem::Event(e) if !e.data.is_empty() => {
                let id = (!e.last_event_id.is_empty()).then_some(e.last_event_id.as_str());
                RawEvent::parse(engine, &e.data, id).ok().map(engine_event)
            }
            _ => None,
        })
        .collect()
}
