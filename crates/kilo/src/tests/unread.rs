//! Bodies the router hands on unread (`KiloEvent::split`): the mapping's one typed read
//! validates them, and the outcome is the one of reading each event whole first: the same
//! inputs for every captured event, and data that is not JSON still counted as
//! `events.malformed_count` (the `sync` echo that repeats it too), never forwarded.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bb_host::Input;

use crate::client::{KiloEvent, KiloUpdate, Routing, route};
use crate::events::KiloEventState;
use crate::shared::Shared;

fn state() -> (KiloEventState, Arc<Shared>) {
    let shared = Arc::new(Shared::default());
    (KiloEventState::new(shared.clone()), shared)
}

fn counts(shared: &Shared) -> (u64, u64) {
    (shared.malformed.load(Ordering::Relaxed), shared.unrouted.load(Ordering::Relaxed))
}

#[test]
fn a_body_that_is_not_json_is_still_caught() {
    let body = r#"{"sessionID":"ses_a","messageID":"msg_1","field":"text","delta":tru}"#;
    let data = format!(r#"{{"id":"evt_1","type":"message.part.delta","properties":{body}}}"#);
    assert!(KiloEvent::parse(&data).is_err(), "read whole, it is not an event");
    let echo = format!(
        r#"{{"type":"sync","syncEvent":{{"id":"evt_1","type":"message.part.delta.1","seq":3,"aggregateID":"ses_a","data":{body}}},"id":"evt_1"}}"#
    );
    let mut routing = Routing::default();
    let (mut mapping, shared) = state();
    // Handed on unread, caught by the mapping's read: counted, nothing forwarded.
    let KiloUpdate::Event { event } = routing.route(data.clone()) else { panic!("split") };
    assert!(event.is_unread());
    assert_eq!(mapping.apply(event), Vec::<Input>::new());
    assert_eq!(counts(&shared), (1, 0));
    // Its echo, read by comparison with that body, is not JSON either.
    let KiloUpdate::Sync(sync) = routing.route(echo) else { panic!("read by comparison") };
    assert!(sync.repeats_unread);
    assert_eq!(mapping.sync_echo(&sync), Vec::<Input>::new());
    assert_eq!(counts(&shared), (2, 0));
    // The same two through the path that reads each event whole: the same counts.
    let (mut whole, whole_shared) = state();
    for data in [&data, &data] {
        assert!(matches!(route_whole(data), KiloUpdate::Malformed { .. }));
        whole_shared.malformed.fetch_add(1, Ordering::Relaxed);
    }
    assert_eq!(counts(&whole_shared), counts(&shared));
    // A valid event after it is mapped, and its echo read as one.
    let good = r#"{"id":"evt_2","type":"session.status","properties":{"sessionID":"ses_a","status":{"type":"busy"}}}"#;
    let KiloUpdate::Event { event } = routing.route(good.to_owned()) else { panic!("split") };
    let running = Input::SessionRunning { session_id: "ses_a".into(), running: true };
    assert!(mapping.apply(event).contains(&running));
    let KiloUpdate::Event { event } = route_whole(good) else { panic!("an event") };
    assert!(whole.apply(event).contains(&running));
    assert_eq!(counts(&shared), (2, 0));
}

#[test]
fn bodies_the_typed_read_refuses_are_read_whole() {
    let (mut mapping, shared) = state();
    // Duplicate keys: JSON, which the tree reads (the last one counts).
    let twice = r#"{"id":"e","type":"session.status","properties":{"sessionID":"ses_a","sessionID":"ses_b","status":{"type":"busy"}}}"#;
    let KiloUpdate::Event { event } = route(twice.to_owned()) else { panic!("split") };
    assert!(event.is_unread());
    let running = Input::SessionRunning { session_id: "ses_b".into(), running: true };
    assert!(mapping.apply(event).contains(&running));
    // Keys beside `properties` that make the span split as its body no single value: the
    // event the whole read finds.
    let extra =
        r#"{"id":"e","type":"session.idle","properties":{"sessionID":"ses_c"},"x":1,"y":{}}"#;
    let KiloUpdate::Event { event } = route(extra.to_owned()) else { panic!("an event") };
    assert!(event.is_unread());
    let idle = Input::SessionRunning { session_id: "ses_c".into(), running: false };
    assert!(mapping.apply(event).contains(&idle));
    assert_eq!(counts(&shared), (0, 0));
    // Nested deeper than serde_json reads a tree (128): the same as read whole, where the
    // deep part is skipped (and a tree of it is `null`).
    for (deep, key) in [(200, "a"), (200, "status")] {
        let data = format!(
            r#"{{"id":"e","type":"session.status","properties":{{"sessionID":"s","{key}":{}{}}}}}"#,
            "[".repeat(deep),
            "]".repeat(deep)
        );
        let KiloUpdate::Event { event } = route(data.clone()) else { panic!("split") };
        assert!(event.is_unread());
        let KiloUpdate::Event { event: read } = route_whole(&data) else { panic!("an event") };
        let (mut whole, _) = state();
        assert_eq!(mapping.apply(event), whole.apply(read), "{key}");
    }
    assert_eq!(counts(&shared), (0, 0));
}

#[test]
fn every_captured_event_maps_as_when_read_whole() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine/kilo");
    let (mut split, split_shared) = state();
    let (mut whole, whole_shared) = state();
    let (mut routing, mut unread) = (Routing::default(), 0);
    let mut paths: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    for path in paths.iter().filter(|p| p.extension().is_some_and(|e| e == "sse")) {
        let text = std::fs::read_to_string(path).unwrap();
        for data in text.lines().filter_map(|l| l.strip_prefix("data: ")) {
            // Each event, then the same with its body broken.
            let broken = data.replacen(r#""properties":{""#, r#""properties":{x""#, 1);
            for data in [data, &broken] {
                let (got, want) = match (routing.route(data.to_owned()), route_whole(data)) {
                    (KiloUpdate::Event { event }, KiloUpdate::Event { event: read }) => {
                        unread += usize::from(event.is_unread());
                        assert_eq!(written_back(&event).as_deref().unwrap_or(data), data);
                        (split.apply(event), whole.apply(read))
                    }
                    (KiloUpdate::Event { event }, KiloUpdate::Malformed { .. }) => {
                        assert_eq!(written_back(&event).as_deref(), Some(data));
                        whole_shared.malformed.fetch_add(1, Ordering::Relaxed);
                        (split.apply(event), Vec::new())
                    }
                    (KiloUpdate::Sync(sync), KiloUpdate::Sync(read)) => {
                        (split.sync_echo(&sync), whole.sync_echo(&read))
                    }
                    (KiloUpdate::Sync(sync), KiloUpdate::Malformed { .. }) => {
                        whole_shared.malformed.fetch_add(1, Ordering::Relaxed);
                        (split.sync_echo(&sync), Vec::new())
                    }
                    (a, b) => {
                        assert_eq!(std::mem::discriminant(&a), std::mem::discriminant(&b));
                        continue;
                    }
                };
                assert_eq!(got, want, "{data}");
                assert_eq!(counts(&split_shared), counts(&whole_shared), "{data}");
            }
        }
    }
    assert!(unread > 100, "the captures' events are split: {unread}");
    assert!(counts(&split_shared).0 > 100, "the broken ones are caught");
}

/// The data a split event was cut from (`None` for an event read whole): what the mapping
/// reads should the body not pass.
fn written_back(event: &KiloEvent) -> Option<String> {
    Some(event.unread.as_ref()?.data().to_owned())
}

#[test]
fn a_split_event_is_written_back_as_sent() {
    for data in [
        r#"{"id":"evt_1","type":"session.idle","properties":{"sessionID":"ses_a"}}"#,
        r#"{"type":"session.idle","properties":{"sessionID":"ses_a"},"x":1,"y":{}}"#,
        r#"{"directory":"/w","project":"p","payload":{"id":"e","type":"t","properties":{"sessionID":"s"}}}"#,
        r#"{"directory":"/w","payload":{"type":"t","properties":{"a":[1,{"b":2}],"sessionID":"s"}}}"#,
    ] {
        let KiloUpdate::Event { event } = route(data.to_owned()) else { panic!("{data}") };
        assert!(event.is_unread(), "{data}");
        assert_eq!(written_back(&event).as_deref(), Some(data));
    }
}

/// How the router routed data before bodies were left unread: [`route`] with each event it
/// splits read whole instead (the split is its last step).
fn route_whole(data: &str) -> KiloUpdate {
    match route(data.to_owned()) {
        KiloUpdate::Event { event } if event.is_unread() => match KiloEvent::parse(data) {
            Ok(event) => KiloUpdate::Event { event },
            Err(err) => KiloUpdate::Malformed { data: data.to_owned(), error: err.to_string() },
        },
        other => other,
    }
}
