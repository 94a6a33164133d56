//! Kilo events are routed from every place a session id can live.

use bb_payload::EventId;
use serde_json::json;

use crate::client::{KiloEvent, UnroutedEvent};

#[test]
fn kilo_event_session_sources() {
    let cases = [
        (json!({"type": "session.idle", "properties": {"sessionID": "ses_1"}}), Some("ses_1")),
        (json!({"type": "sync", "syncEvent": {"aggregateID": "ses_2"}}), Some("ses_2")),
        (json!({"type": "x", "properties": {"info": {"sessionID": "ses_3"}}}), Some("ses_3")),
        (json!({"type": "x", "properties": {"part": {"sessionID": "ses_4"}}}), Some("ses_4")),
        (json!({"type": "server.heartbeat", "properties": {}}), None),
        (json!({"type": "x", "properties": {"sessionID": ""}}), None),
        (
            json!({"directory": "/p", "payload": {"type": "session.idle", "id": "evt_1",
                   "properties": {"sessionID": "ses_5"}}}),
            Some("ses_5"),
        ),
    ];
    for (raw, session) in cases {
        let event = KiloEvent::parse(&raw.to_string()).unwrap();
        assert_eq!(event.session().as_deref(), session, "{raw}");
        let event_json = raw.get("payload").unwrap_or(&raw);
        let key = if event_json["type"] == "sync" { "syncEvent" } else { "properties" };
        assert_eq!(event.body, event_json[key], "body kept as sent");
        assert_eq!(event.body.text(), Some(event_json[key].to_string().as_str()), "as text");
    }
    // Shapes the text path leaves to the tree: the same result either way.
    let odd = [
        (r#"{"type":"x","properties":{"sessionID":"a","sessionID":"b"}}"#, Some("b")),
        (r#"{"type":"x","properties":{"sessionID":7,"info":{"sessionID":"c"}}}"#, Some("c")),
        (r#"{"type":"x","id":5,"properties":{"sessionID":"d"}}"#, Some("d")),
        (r#"{"type":"x","properties":"text"}"#, None),
        (
            r#"{"type":"x","properties":{"sessionID":"e"},"syncEvent":{"aggregateID":"f"}}"#,
            Some("e"),
        ),
    ];
    for (data, session) in odd {
        let event = KiloEvent::parse(data).unwrap();
        assert_eq!(event.session().as_deref(), session, "{data}");
        let tree: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(event.body, tree["properties"], "{data}");
        assert_eq!(event.id, tree["id"].as_str().map(EventId::from), "{data}");
    }
    assert!(KiloEvent::parse("[1]").is_err());
    // One wrapper is unwrapped, not two.
    let twice = r#"{"payload":{"payload":{"type":"x","properties":{"sessionID":"a"}}}}"#;
    assert!(KiloEvent::parse(twice).is_err());
    assert!(KiloEvent::parse("{\"type\": 3}").is_err());
    // A `null` type is a type of the wrong kind, not a wrapper's missing one.
    let null_type = r#"{"type":null,"payload":{"type":"x","properties":{"sessionID":"a"}}}"#;
    assert!(KiloEvent::parse(null_type).is_err());
    assert!(KiloEvent::parse("nope").is_err());
}

#[test]
fn known_event_types_are_borrowed_and_others_owned_by_every_read() {
    use std::borrow::Cow;

    let cases = [
        ("message.part.delta", true),
        ("message.part.updated", true),
        ("session.status", true),
        ("plugin.added", true),
        ("message.part.delta.v2", false),
        ("x", false),
    ];
    for (kind, known) in cases {
        let data = format!(r#"{{"id":"evt_1","type":"{kind}","properties":{{"sessionID":"s"}}}}"#);
        let spaced = format!(r#"{{"type": "{kind}", "properties": {{"sessionID": "s"}}}}"#);
        // A number id: the borrowed read refuses it, the tree reads it.
        let odd = format!(r#"{{"type":"{kind}","id":7,"properties":{{}}}}"#);
        let split = KiloEvent::split(data.clone()).unwrap().event_type;
        let text = KiloEvent::parse(&spaced).unwrap().event_type;
        let tree = KiloEvent::parse(&odd).unwrap().event_type;
        let unrouted = UnroutedEvent::parse(format!(r#"{{"type":"{kind}","properties":{{}}}}"#));
        let unrouted = unrouted.unwrap().event_type;
        for read in [split, text, tree, unrouted] {
            assert_eq!(read, kind);
            assert_eq!(matches!(read, Cow::Borrowed(_)), known, "{kind}");
        }
    }
}
