//! `ts` and `turn` of a Kilo event for the webview, read only from what the engine sent:
//! never invented, absent when the event carries none.

use crate::facts::{Facts, Times};

/// The event's time in epoch milliseconds: `properties.time` when it is a number (e.g.
/// `message.part.updated`), else the part's `time.end` / `time.start`, else the object's
/// (`info`: session or message) `time.completed` / `time.updated` / `time.created` — the
/// latest moment the event reports about.
pub(crate) fn event_ts(p: &Facts<'_>) -> Option<f64> {
    let part = |t: &Times| ms(t.end.0).or_else(|| ms(t.start.0));
    let info = |t: &Times| {
        ms(t.completed.and_then(|c| c.0)).or_else(|| ms(t.updated.0)).or_else(|| ms(t.created.0))
    };
    ms(p.time.0)
        .or_else(|| p.part.get().and_then(|h| h.time.get()).and_then(part))
        .or_else(|| p.info.get().and_then(|h| h.time.get()).and_then(info))
}

/// The turn number, when the event carries a BreadBoard-style `turn` (Kilo events usually
/// don't).
pub(crate) fn event_turn(p: &Facts<'_>) -> Option<u64> {
    p.turn.0
}

/// A non-negative finite millisecond count.
fn ms(t: Option<f64>) -> Option<f64> {
    t.filter(|t| t.is_finite() && *t >= 0.0)
}
