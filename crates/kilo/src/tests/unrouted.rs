//! The router against a whole-tree reading of each event: `UnroutedEvent::parse` (no body
//! read for events that cannot name a session) takes an event only when the tree names no
//! session, with the same type and id; `route` hands every other Kilo event on with the type
//! and id the tree gives, and the session the mapping reads from its body
//! (`KiloEvent::session`) is the one the tree names. On every event of the real Kilo
//! captures and on generated shapes.

use bb_payload::EventId;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::client::{KiloEvent, KiloUpdate, UnroutedEvent, route};

/// The session a tree names: `syncEvent.aggregateID` of a `sync`, else the first non-empty
/// string of `properties.sessionID`, `properties.info.sessionID`, `properties.part.sessionID`
/// (a `/global/event` wrapper stands for the event it wraps).
fn tree_session(data: &str) -> Option<String> {
    let raw: Value = serde_json::from_str(data).ok()?;
    let event = match raw.get("type") {
        None => raw.get("payload").filter(|p| p.get("type").is_some()).unwrap_or(&raw),
        Some(_) => &raw,
    };
    let named =
        |v: Option<&Value>| v.and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
    if event["type"] == "sync" {
        return named(event.get("syncEvent").and_then(|s| s.get("aggregateID")));
    }
    let properties = event.get("properties");
    let nested = |k: &str| properties.and_then(|p| p.get(k)).and_then(|h| h.get("sessionID"));
    named(properties.and_then(|p| p.get("sessionID")))
        .or_else(|| named(nested("info")))
        .or_else(|| named(nested("part")))
}

/// What the whole-tree path makes of an event: `(type, id, session)`, or `None` when the
/// data is not a Kilo event.
fn by_tree(data: &str) -> Option<(String, Option<EventId>, Option<String>)> {
    let event = KiloEvent::parse(data).ok()?;
    Some((event.event_type.into_owned(), event.id, tree_session(data)))
}

/// Checks one event; whether the fast path took it.
fn check(data: &str) -> bool {
    let tree = by_tree(data);
    let fast = UnroutedEvent::parse(data.to_owned());
    if let Ok(event) = &fast {
        let (kind, id, session) = tree.clone().expect("the fast path takes Kilo events only");
        assert_eq!(session, None, "taken although it names a session: {data}");
        assert_eq!((&*event.event_type, &event.id), (kind.as_str(), &id), "{data}");
        assert_eq!(event.data, data);
    }
    match (route(data.to_owned()), tree) {
        (KiloUpdate::Sync(sync), Some((_, _, session))) => {
            assert_eq!(Some(sync.session_id), session, "{data}");
        }
        (KiloUpdate::Event { event }, Some((kind, id, session))) => {
            assert_eq!(
                (event.session(), &*event.event_type, &event.id),
                (session, kind.as_str(), &id)
            );
        }
        (KiloUpdate::Unrouted(event), Some((kind, id, session))) => {
            assert_eq!(
                (event.event_type.into_owned(), event.id, None),
                (kind, id, session),
                "{data}"
            );
        }
        (KiloUpdate::Malformed { .. }, None) => {}
        (other, tree) => panic!("{data}: routed {other:?}, the tree says {tree:?}"),
    }
    fast.is_ok()
}

#[test]
fn every_captured_event_routes_as_the_tree_says() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine/kilo");
    let mut taken = 0;
    let mut all = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "sse") {
            let text = std::fs::read_to_string(&path).unwrap();
            for data in text.lines().filter_map(|l| l.strip_prefix("data: ")) {
                all += 1;
                taken += usize::from(check(data));
            }
        }
    }
    assert!(taken > 20 && taken < all, "{taken} of {all} events took the fast path");
}

fn session_value() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        Just(Some(json!(""))),
        Just(Some(json!("ses_a"))),
        Just(Some(json!("ses_\u{e9}\"x"))),
        Just(Some(json!(5))),
        Just(Some(Value::Null)),
    ]
}

fn holder(key: &'static str) -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        Just(Some(json!("text"))),
        Just(Some(Value::Null)),
        session_value().prop_map(move |s| {
            let mut map = serde_json::Map::new();
            map.insert("other".into(), json!({"sessionID": "nested_deeper"}));
            if let Some(s) = s {
                map.insert(key.into(), s);
            }
            Some(Value::Object(map))
        }),
    ]
}

fn event() -> impl Strategy<Value = Value> {
    let kind = prop_oneof![
        Just(None),
        Just(Some(json!("plugin.added"))),
        Just(Some(json!("sync"))),
        Just(Some(json!(3)))
    ];
    let id = prop_oneof![Just(None), Just(Some(json!("evt_1"))), Just(Some(json!(1)))];
    let properties = (session_value(), holder("sessionID"), holder("sessionID"), any::<bool>())
        .prop_map(|(s, info, part, object)| {
            if !object {
                return Some(json!(["not", "an", "object"]));
            }
            let mut map = serde_json::Map::new();
            for (k, v) in [("sessionID", s), ("info", info), ("part", part)] {
                if let Some(v) = v {
                    map.insert(k.into(), v);
                }
            }
            Some(Value::Object(map))
        });
    let properties = prop_oneof![Just(None), Just(Some(Value::Null)), properties];
    (kind, id, properties, holder("aggregateID")).prop_map(|(kind, id, properties, sync)| {
        let mut map = serde_json::Map::new();
        for (k, v) in [("type", kind), ("id", id), ("properties", properties), ("syncEvent", sync)]
        {
            if let Some(v) = v {
                map.insert(k.into(), v);
            }
        }
        Value::Object(map)
    })
}

proptest! {
    #[test]
    fn generated_events_route_as_the_tree_says(event in event()) {
        check(&event.to_string());
    }
}

#[test]
fn wrapped_events_that_cannot_name_a_session_take_the_fast_path() {
    for data in [
        r#"{"directory":"/w","payload":{"type":"server.connected","properties":{}}}"#,
        r#"{"payload":{"type":"plugin.added","id":"e","properties":{"id":"x"}},"project":"p"}"#,
    ] {
        assert!(check(data), "{data}");
    }
}

#[test]
fn broken_events_and_ones_that_could_name_a_session_are_not_taken() {
    for data in [
        r#"{"directory":"/w","payload":{"type":"server.connected","properties":{"sessionID":"s"}}}"#,
        r#"{"payload":{"type":"server.connected"},"properties":{}}"#,
        r#"{"payload":{"type":"server.connected"},"type":null}"#,
        r#"{"type":"plugin.added","properties":{"sessionID":"ses_a"},"type":"x"}"#,
        r#"{"type":"plugin.added""#,
        "[]",
    ] {
        assert!(!check(data), "{data}");
    }
}

#[test]
fn escaped_keys_route_as_the_tree_says() {
    for data in [
        r#"{"type":"message.updated","properties":{"session\u0049D":"ses_a"}}"#,
        r#"{"type":"message.updated","properties":{"info":{"\u0073essionID":"ses_a"}}}"#,
        r#"{"type":"sync","syncEvent":{"aggregate\u0049D":"ses_a","seq":1}}"#,
        r#"{"type":"plugin.added","properties":{"name":"\u0041"}}"#,
    ] {
        check(data);
        assert!(
            !matches!(route(data.to_owned()), KiloUpdate::Unrouted(_)) || data.contains("plugin")
        );
    }
}
