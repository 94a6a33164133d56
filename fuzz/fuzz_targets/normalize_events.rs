//! Fuzz target: arbitrary event lines of either engine never panic the parser or the
//! reducers, redaction is idempotent and path checks never panic. Kilo lines also go
//! through the router's parser with their bodies kept as text: the view they reduce to is
//! the view of the same bodies as trees (typed reads find what tree lookups find), but for
//! the debug lane's `payloadSize`: the text's own length (`9e6` is 3 bytes; its tree is
//! written `9000000.0`). A body nested deeper than serde_json's limit has no tree: its line
//! is not compared.
#![no_main]

use bb_normalize::redact::{redact_log_line, redact_text};
use bb_kilo::client::KiloEvent;
use bb_normalize::{Engine, PathFlavor, PathGuard, RawEvent, SessionView};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    // The first byte's bits pick the engine of each line (bit `i % 8` for line `i`), so
    // streams mixing both engines' event kinds are covered; the rest is one JSON event per
    // line.
    let Some((&pick, rest)) = input.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    let mut view = SessionView::new();
    let (mut as_text, mut as_tree) = (SessionView::new(), SessionView::new());
    for (i, line) in text.lines().enumerate() {
        let engine = if (pick >> (i % 8)) & 1 == 0 { Engine::Kilo } else { Engine::BreadBoard };
        if let Ok(ev) = RawEvent::parse(engine, line, None) {
            view.apply_event(ev);
        }
        if let Ok(ev) = KiloEvent::parse(line) {
            // The tree of a copy: built on the body itself, it would be what the text's typed
            // reads read.
            let tree = ev.body.clone().into_value();
            // A body nested deeper than serde_json's limit has no tree (`null`), while typed
            // reads of its text still find its fields: not compared.
            if tree.is_null() && ev.body.is_object() {
                continue;
            }
            as_tree.apply_event(RawEvent::new(Engine::Kilo, ev.event_type.clone(), tree));
            as_text.apply_event(RawEvent::new(Engine::Kilo, ev.event_type, ev.body));
        }
    }
    let _ = serde_json::to_string(&view);
    assert_eq!(comparable(&as_text), comparable(&as_tree));

    let once = redact_text(&text);
    assert_eq!(redact_text(&once), once);
    let line = redact_log_line(&text, 256);
    assert!(line.len() <= 256);
    assert_eq!(redact_log_line(&line, 256), line);

    for flavor in [PathFlavor::Posix, PathFlavor::Windows] {
        let mut guard = PathGuard::new(flavor, if flavor == PathFlavor::Posix { "/ws" } else { "C:\\ws" });
        for p in text.lines().take(8) {
            guard.check(p);
        }
    }
});

/// The view's JSON without the debug lane's payload sizes.
fn comparable(view: &SessionView) -> Option<serde_json::Value> {
    let mut v = serde_json::to_value(view).ok()?;
    if let Some(nodes) = v.pointer_mut("/debug/unknown").and_then(|u| u.as_array_mut()) {
        for node in nodes {
            node.as_object_mut()?.remove("payloadSize");
        }
    }
    Some(v)
}
