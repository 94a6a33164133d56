//! `SyncEcho::parse` (the `sync` fast path) against the whole-tree parse it stands in for:
//! on every event of the real Kilo captures and on unusual shapes, it either declines or
//! yields exactly the session, id and `seq` the tree gives.

use bb_payload::EventId;
use proptest::prelude::*;
use serde_json::Value;

use crate::client::{KiloEvent, KiloUpdate, Routing, SyncEcho, route};

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
fn by_tree(data: &str) -> Option<(String, Option<EventId>, Option<u64>)> {
    let event = KiloEvent::parse(data).ok()?;
    if event.event_type != "sync" {
        return None;
    }
    let seq = event.body.get("seq").and_then(Value::as_u64);
    Some((event.session()?, event.id, seq))
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
        // A bare event whose head names another type, whatever follows it.
        r#"{"id":"e","type":"x","properties":{},"syncEvent":{"aggregateID":"ses_a","seq":1}}"#,
        r#"{"type":"x","type":"sync","syncEvent":{"aggregateID":"ses_a","seq":1}}"#,
        r#"{"id":"e","type":"x","id":"f","type":"sync","syncEvent":{"aggregateID":"ses_a"}}"#,
    ];
    for data in declined {
        assert_eq!(SyncEcho::parse(data), None, "{data}");
        // The tree path still routes or rejects it as before.
        assert!(!matches!(route(data.to_owned()), KiloUpdate::Sync(_)));
    }
    let taken = [
        r#"{"type":"sync","syncEvent":{"aggregateID":"ses_a","seq":3,"data":{"x":[1,{"y":"\""}]}},"id":"evt_1"}"#,
        r#"{"type":"sync","syncEvent":{"aggregateID":"ses_\u0061","seq":null}}"#,
        r#"{"type":"s\u0079nc","syncEvent":{"aggregateID":"ses_a","seq":18446744073709551615}}"#,
        // Wrapped as `/global/event` does.
        r#"{"directory":"/w","payload":{"type":"sync","syncEvent":{"aggregateID":"ses_a","seq":1},"id":"e"}}"#,
        r#"{"payload":{"type":"sync","syncEvent":{"aggregateID":"ses_a","seq":2}},"project":"p"}"#,
        // A bare head as Kilo writes it, and one whose type is escaped.
        r#"{"id":"e","type":"sync","syncEvent":{"aggregateID":"ses_a","seq":4}}"#,
        r#"{"id":"e","type":"sync","syncEvent":{"aggregateID":"ses_a","seq":5}}"#,
    ];
    for data in taken {
        assert!(check(data), "{data}");
        assert!(matches!(route(data.to_owned()), KiloUpdate::Sync(_)), "{data}");
    }
}

/// Every capture, routed in order through one [`Routing`] (which reads a `sync` echo by
/// comparing its repeat with the body before it), routes each event as [`route`] does
/// alone; and the comparison is what reads the echoes, bare and wrapped.
#[test]
fn routing_the_stream_routes_each_event_as_alone() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine/kilo");
    let (mut echoes, mut compared) = (0, 0);
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "sse") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut routing = Routing::default();
        let mut last_body = String::new();
        for data in text.lines().filter_map(|l| l.strip_prefix("data: ")) {
            let wrapped = data.starts_with(r#"{"directory""#)
                && data.contains(r#""payload":{"type":"sync","syncEvent""#);
            echoes += usize::from(data.starts_with(r#"{"type":"sync""#) || wrapped);
            compared += usize::from(SyncEcho::parse_echo(data, &last_body).is_some());
            let alone = route(data.to_owned());
            if let KiloUpdate::Event { event, .. } = &alone {
                last_body = event.body.text().unwrap_or_default().to_owned();
            }
            assert_eq!(routing.route(data.to_owned()), alone, "{}: {data}", path.display());
        }
    }
    assert!(echoes > 50, "the captures hold sync echoes");
    assert_eq!(compared, echoes, "every echo, bare or wrapped, is read by comparison");
}

/// An event's body as Kilo writes it, and a generated echo of it: mostly the exact layout,
/// with the changes that must send it to the decode (escapes, control characters, odd
/// numbers, another body, other spacing or order) mixed in.
fn echo_case() -> impl Strategy<Value = (String, String)> {
    let text = prop_oneof![
        Just("evt_1".to_owned()),
        Just("ses_a".to_owned()),
        Just(String::new()),
        Just("a\\\"b".to_owned()),
        Just("a\\u0062".to_owned()),
        Just("tab\there".to_owned()),
        Just("é".to_owned()),
    ];
    let seq = prop_oneof![
        Just("0".to_owned()),
        Just("7".to_owned()),
        Just("007".to_owned()),
        Just("-1".to_owned()),
        Just("1.5".to_owned()),
        Just("1e3".to_owned()),
        Just("18446744073709551615".to_owned()),
        Just("18446744073709551616".to_owned()),
        Just("null".to_owned()),
    ];
    let body = prop_oneof![
        Just(r#"{"sessionID":"ses_a","info":{"id":"x","n":[1,2.5,null]}}"#.to_owned()),
        Just(r#"{"sessionID":"ses_a","text":"q\"uote"}"#.to_owned()),
    ];
    let tail = prop_oneof![Just("}".to_owned()), Just(" }".to_owned()), Just("}\n".to_owned())];
    let wrapper = prop_oneof![
        Just(None),
        Just(Some(r#"{"directory":"/w","project":"global","payload":"#.to_owned())),
        Just(Some(r#"{"directory":"/w","payload":"#.to_owned())),
        Just(Some(r#"{"directory":"/\u0077","project":"global","payload":"#.to_owned())),
        Just(Some(r#"{"directory":"/w","project":1,"payload":"#.to_owned())),
        Just(Some(r#"{"directory":"/w","project":"global","payload": "#.to_owned())),
        Just(Some(r#"{"directory":"/w","other":"x","payload":"#.to_owned())),
    ];
    let parts = (text.clone(), text.clone(), seq, text.clone(), body.clone(), body, text, tail);
    (parts, any::<bool>(), wrapper)
        .prop_map(|((inner_id, kind, seq, session, body, repeat, id, tail), swap, wrapper)| {
            let event = format!(r#"{{"type":"message.updated","properties":{body},"id":"e0"}}"#);
            let sync = if swap {
                format!(
                    r#"{{"type":"sync","syncEvent":{{"id":"{inner_id}","type":"{kind}","aggregateID":"{session}","seq":{seq},"data":{repeat}}},"id":"{id}"{tail}"#
                )
            } else {
                format!(
                    r#"{{"type":"sync","syncEvent":{{"id":"{inner_id}","type":"{kind}","seq":{seq},"aggregateID":"{session}","data":{repeat}}},"id":"{id}"{tail}"#
                )
            };
            match wrapper {
                Some(head) => (
                    format!(r#"{{"directory":"/w","project":"global","payload":{event}}}"#),
                    format!("{head}{sync}}}"),
                ),
                None => (event, sync),
            }
        })
}

proptest! {
    /// Whether or not the comparison reads it, an echo routes as [`route`] routes it alone.
    #[test]
    fn a_generated_echo_routes_as_alone((event, sync) in echo_case()) {
        let mut routing = Routing::default();
        prop_assert_eq!(routing.route(event.clone()), route(event));
        prop_assert_eq!(routing.route(sync.clone()), route(sync));
    }
}

/// The exact layout is read by comparison; each change to it sends the echo to the decode,
/// and either way it routes as [`route`] routes it alone.
#[test]
fn each_change_to_the_echo_layout_is_decoded() {
    let body = r#"{"sessionID":"ses_a","info":{"id":"x","n":[1,2.5,null]}}"#;
    let event = format!(r#"{{"type":"message.updated","properties":{body},"id":"e0"}}"#);
    let echo = |inner: &str, seq: &str, session: &str, data: &str, id: &str, tail: &str| {
        format!(
            r#"{{"type":"sync","syncEvent":{{"id":"{inner}","type":"message.updated.1","seq":{seq},"aggregateID":"{session}","data":{data}}},"id":"{id}"{tail}"#
        )
    };
    let read = [
        echo("evt_1", "3", "ses_a", body, "evt_1", "}"),
        echo("", "0", "ses_é", body, "", "}"),
        echo("evt_1", "18446744073709551615", "ses_a", body, "evt_1", "}"),
    ];
    let decoded = [
        echo(r#"a\"b"#, "3", "ses_a", body, "evt_1", "}"),
        echo("evt_1", "3", r"ses_\u0061", body, "evt_1", "}"),
        echo("evt_1", "3", "ses_a", body, "tab\there", "}"),
        echo("evt_1", "3", "", body, "evt_1", "}"),
        echo("evt_1", "007", "ses_a", body, "evt_1", "}"),
        echo("evt_1", "-1", "ses_a", body, "evt_1", "}"),
        echo("evt_1", "1.5", "ses_a", body, "evt_1", "}"),
        echo("evt_1", "1e3", "ses_a", body, "evt_1", "}"),
        echo("evt_1", "18446744073709551616", "ses_a", body, "evt_1", "}"),
        echo("evt_1", "null", "ses_a", body, "evt_1", "}"),
        echo("evt_1", "3", "ses_a", r#"{"sessionID":"ses_a"}"#, "evt_1", "}"),
        echo("evt_1", "3", "ses_a", body, "evt_1", " }"),
        echo("evt_1", "3", "ses_a", body, "evt_1", "}}"),
        echo("evt_1", "3", "ses_a", &body.replace(':', ": "), "evt_1", "}"),
        // Another body of the same length, valid or not.
        echo("evt_1", "3", "ses_a", &body.replace("2.5", "3.5"), "evt_1", "}"),
        echo("evt_1", "3", "ses_a", &body.replace("null", "nul!"), "evt_1", "}"),
    ];
    let plain = echo("evt_1", "3", "ses_a", body, "evt_1", "}");
    let wrap = |head: &str, tail: &str| format!("{head}{plain}{tail}");
    let read_wrapped = [
        wrap(r#"{"directory":"/w","project":"global","payload":"#, "}"),
        wrap(r#"{"directory":"/w","payload":"#, "}"),
    ];
    let decoded_wrapped = [
        wrap(r#"{"directory":"/\u0077","project":"global","payload":"#, "}"),
        wrap(r#"{"directory":"/w","project":"g\"l","payload":"#, "}"),
        wrap(r#"{"directory":"/w","project":7,"payload":"#, "}"),
        wrap(r#"{"directory":"/w","other":"x","payload":"#, "}"),
        wrap(r#"{"directory":"/w","payload": "#, "}"),
        wrap(r#"{"directory":"/w","payload":"#, " }"),
        wrap(r#"{"directory":"/w","payload":"#, r#","project":"p"}"#),
        wrap(r#"{"payload":"#, "}"),
    ];
    let read = read.iter().chain(&read_wrapped);
    let decoded = decoded.iter().chain(&decoded_wrapped);
    for (sync, by_comparison) in read.map(|s| (s, true)).chain(decoded.map(|s| (s, false))) {
        assert_eq!(SyncEcho::parse_echo(sync, body).is_some(), by_comparison, "{sync}");
        let mut routing = Routing::default();
        routing.route(event.clone());
        assert_eq!(routing.route(sync.clone()), route(sync.clone()), "{sync}");
    }
}
