//! `SyncEcho::parse` (the `sync` fast path) against the whole-tree parse it stands in for:
//! on every event of the real Kilo captures and on unusual shapes, it either declines or
//! yields exactly the session, id and `seq` the tree gives.

use serde_json::Value;

use crate::kilo::{KiloEvent, SyncEcho, route};

fn data_lines() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine/kilo");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "sse") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.extend(text.lines().filter_map(|l| l.strip_prefix("data: ")).map(str::to_owned));
        }
    }
    out
}

/// What the whole-tree path makes of a `sync` event: (session, id, seq).
fn by_tree(data: &str) -> Option<(String, Option<String>, Option<u64>)> {
    let event = KiloEvent::parse(data).ok()?;
    if event.event_type != "sync" {
        return None;
    }
    let seq = event.body.get("seq").and_then(Value::as_u64);
    Some((event.session_id?, event.id, seq))
}

fn check(data: &str) -> bool {
    let Some(fast) = SyncEcho::parse(data) else { return false };
    assert_eq!(Some((fast.session_id, fast.id, fast.seq)), by_tree(data), "{data}");
    true
}

#[test]
fn every_captured_sync_event_takes_the_fast_path_and_agrees() {
    let lines = data_lines();
    let syncs = lines.iter().filter(|d| by_tree(d).is_some()).count();
    assert!(syncs > 50, "the captures hold sync events");
    // `/global/event` wraps events in `{directory, project, payload}`: read in the same pass.
    let wrapped = |d: &&String| d.starts_with(r#"{"directory""#);
    assert!(lines.iter().filter(wrapped).any(|d| by_tree(d).is_some()), "wrapped syncs");
    let fast = lines.iter().filter(|d| check(d)).count();
    assert_eq!(fast, syncs);
}

#[test]
fn unusual_sync_shapes_fall_back_to_the_tree() {
    let declined = [
        // Not sync; a wrapper holding more than the event, or an event of no type.
        r#"{"type":"message.updated","syncEvent":{"aggregateID":"ses_a","seq":1}}"#,
        r#"{"payload":{"type":"sync","syncEvent":{"aggregateID":"ses_a","seq":1}},"syncEvent":{}}"#,
        r#"{"payload":{"syncEvent":{"aggregateID":"ses_a","seq":1}}}"#,
        r#"{"payload":{"payload":{"type":"sync","syncEvent":{"aggregateID":"ses_a","seq":1}}}}"#,
        r#"{"type":null,"payload":{"type":"sync","syncEvent":{"aggregateID":"ses_a","seq":1}}}"#,
        // Routed by `properties.sessionID` first.
        r#"{"type":"sync","properties":{"sessionID":"ses_b"},"syncEvent":{"aggregateID":"ses_a"}}"#,
        // No usable aggregate, odd seq or id, duplicate keys, not an object.
        r#"{"type":"sync","syncEvent":{"aggregateID":""}}"#,
        r#"{"type":"sync","syncEvent":{"seq":1}}"#,
        r#"{"type":"sync","syncEvent":{"aggregateID":"ses_a","seq":-1}}"#,
        r#"{"type":"sync","syncEvent":{"aggregateID":"ses_a","seq":1.5}}"#,
        r#"{"type":"sync","id":7,"syncEvent":{"aggregateID":"ses_a","seq":1}}"#,
        r#"{"type":"sync","type":"sync","syncEvent":{"aggregateID":"ses_a"}}"#,
        r#"{"type":"sync","syncEvent":[]}"#,
        r#"{"type":"sync","syncEvent":{"aggregateID":"ses_a"}"#,
    ];
    for data in declined {
        assert_eq!(SyncEcho::parse(data), None, "{data}");
        // The tree path still routes or rejects it as before.
        assert!(!matches!(route(data.to_owned()), crate::kilo::KiloUpdate::Sync(_)));
    }
    let taken = [
        r#"{"type":"sync","syncEvent":{"aggregateID":"ses_a","seq":3,"data":{"x":[1,{"y":"\""}]}},"id":"evt_1"}"#,
        r#"{"type":"sync","syncEvent":{"aggregateID":"ses_\u0061","seq":null}}"#,
        r#"{"type":"s\u0079nc","syncEvent":{"aggregateID":"ses_a","seq":18446744073709551615}}"#,
        // Wrapped as `/global/event` does.
        r#"{"directory":"/w","payload":{"type":"sync","syncEvent":{"aggregateID":"ses_a","seq":1},"id":"e"}}"#,
        r#"{"payload":{"type":"sync","syncEvent":{"aggregateID":"ses_a","seq":2}},"project":"p"}"#,
    ];
    for data in taken {
        assert!(check(data), "{data}");
    }
}
