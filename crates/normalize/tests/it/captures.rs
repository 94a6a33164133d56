//! Reading `.sse` captures into raw events (with the engine client's SSE parser), and
//! normalizing ids and times so snapshots do not depend on capture runs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use bb_engine_client::sse::{SseItem, SseParser};
use bb_normalize::{Engine, RawEvent};
use serde_json::Value;

/// The repository's `fixtures/engine` directory.
pub(crate) fn engine_fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine")
}

/// Every `.sse` file under `dir`, sorted, with the engine that produced it.
pub(crate) fn captures() -> Vec<(Engine, PathBuf)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "sse") {
                out.push(path);
            }
        }
    }
    let mut all = Vec::new();
    for (engine, sub) in [(Engine::Kilo, "kilo"), (Engine::BreadBoard, "breadboard")] {
        let mut files = Vec::new();
        walk(&engine_fixtures().join(sub), &mut files);
        files.sort();
        all.extend(files.into_iter().map(|f| (engine, f)));
    }
    // ACP updates, one JSON object a line.
    let mut acp: Vec<PathBuf> = std::fs::read_dir(engine_fixtures().join("acp"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    acp.sort();
    all.extend(acp.into_iter().map(|f| (Engine::Acp, f)));
    all
}

/// The events of one capture, in order. Every data payload must parse.
pub(crate) fn read(engine: Engine, path: &Path) -> Vec<RawEvent> {
    let bytes = std::fs::read(path).unwrap();
    if engine == Engine::Acp {
        let text = String::from_utf8(bytes).unwrap();
        return text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(|l| RawEvent::from_value(Engine::Acp, serde_json::from_str(l).unwrap(), None))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    }
    let mut parser = SseParser::default();
    let mut items = parser.feed_collect(&bytes).unwrap();
    items.extend(parser.feed_collect(b"\n\n").unwrap());
    items
        .into_iter()
        .filter_map(|item| match item {
            SseItem::Event(e) if !e.data.is_empty() => {
                let id = (!e.last_event_id.is_empty()).then_some(e.last_event_id.as_str());
                Some(
                    RawEvent::parse(engine, &e.data, id)
                        .unwrap_or_else(|err| panic!("{}: {err}", path.display())),
                )
            }
            _ => None,
        })
        .collect()
}

/// A snapshot name for a capture path.
pub(crate) fn snapshot_name(path: &Path) -> String {
    let rel = path.strip_prefix(engine_fixtures()).unwrap();
    rel.with_extension("").to_string_lossy().replace(['/', '\\'], "__")
}

fn is_engine_id(s: &str) -> bool {
    let uuid = s.len() == 36
        && s.chars().filter(|c| *c == '-').count() == 4
        && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    let prefixed = ["evt_", "ses_", "msg_", "prt_", "per_", "que_", "call_"].iter().any(|p| {
        s.strip_prefix(p)
            .is_some_and(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_alphanumeric()))
    });
    uuid || prefixed
}

const TIME_KEYS: &[&str] = &["createdAt", "created_at", "latency_ms", "timestamp", "ts"];

/// Replaces engine ids by `<id N>` (numbered by first appearance, so relations survive) and
/// times by `<time>`.
pub(crate) fn normalize_ids(v: &mut Value) {
    fn go(v: &mut Value, ids: &mut HashMap<String, usize>) {
        match v {
            Value::String(s) if is_engine_id(s) => {
                let n = ids.len() + 1;
                let n = *ids.entry(s.clone()).or_insert(n);
                *s = format!("<id {n}>");
            }
            Value::Array(a) => a.iter_mut().for_each(|x| go(x, ids)),
            Value::Object(o) => {
                for (k, x) in o.iter_mut() {
                    if TIME_KEYS.contains(&k.as_str()) && (x.is_number() || x.is_string()) {
                        *x = Value::String("<time>".to_owned());
                    } else {
                        go(x, ids);
                    }
                }
            }
            _ => {}
        }
    }
    go(v, &mut HashMap::new());
}
