//! `ts` and `turn` of a Kilo event for the webview, read only from what the engine sent:
//! never invented, absent when the event carries none.

use serde_json::{Map, Value};

/// The event's time in epoch milliseconds: `properties.time` when it is a number (e.g.
/// `message.part.updated`), else the part's `time.end` / `time.start`, else the object's
/// (`info`: session or message) `time.completed` / `time.updated` / `time.created` — the
/// latest moment the event reports about.
pub(crate) fn event_ts(p: &Map<String, Value>) -> Option<f64> {
    if let Some(t) = p.get("time").and_then(ms) {
        return Some(t);
    }
    let first_of = |holder: &str, keys: &[&str]| {
        let time = p.get(holder)?.get("time")?;
        keys.iter().find_map(|k| time.get(*k).and_then(ms))
    };
    first_of("part", &["end", "start"])
        .or_else(|| first_of("info", &["completed", "updated", "created"]))
}

/// The turn number, when the event carries a BreadBoard-style `turn` (Kilo events usually
/// don't).
pub(crate) fn event_turn(p: &Map<String, Value>) -> Option<u64> {
    p.get("turn").and_then(Value::as_u64)
}

/// A non-negative finite millisecond count.
fn ms(v: &Value) -> Option<f64> {
    v.as_f64().filter(|t| t.is_finite() && *t >= 0.0)
}
