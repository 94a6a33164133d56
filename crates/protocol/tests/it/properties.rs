//! Properties over arbitrary input: the decoders never panic, and whatever they accept
//! re-encodes (through the outbound check) to the same typed message.

use bb_protocol::v1::{EngineEvent, EventItem, Events, EventsWriter, Refused, Truncation};
use bb_protocol::{Limits, Message, Transport, Verdict, decode};
use proptest::prelude::*;
use serde_json::{Map, Value};

/// Keys and leaves drawn from the envelope vocabulary, so generated objects often get past
/// the first checks and reach method, params, response and event decoding.
const KEYS: &[&str] = &[
    "v",
    "kind",
    "id",
    "method",
    "params",
    "type",
    "ok",
    "result",
    "error",
    "topic",
    "event",
    "payload",
    "sessionId",
    "text",
    "path",
    "maxBytes",
    "code",
    "message",
    "status",
    "sessions",
    "events",
    "connectionId",
    "prompt",
    "outcome",
    "optionId",
    "requestId",
    "command",
];
const WORDS: &[&str] = &[
    "req",
    "res",
    "evt",
    "request",
    "response",
    "event",
    "bb.init",
    "bb.stop",
    "bb.sendMessage",
    "bb.readFileSnippet",
    "bb.createSession",
    "bb/state",
    "bb/connection",
    "bb/events",
    "connected",
    "session-data",
    "shell.openPath",
    "acp_session_prompt",
    "acp_permission_reply",
    "selected",
    "cancelled",
    "text",
    "1",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::from(1)),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        prop::sample::select(WORDS).prop_map(Value::from),
        ".{0,8}".prop_map(Value::String),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(
                (prop_oneof![prop::sample::select(KEYS).prop_map(str::to_owned), ".{0,6}"], inner),
                0..7
            )
            .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn transport() -> impl Strategy<Value = Transport> {
    prop_oneof![Just(Transport::V1), Just(Transport::Ws)]
}

fn check_round_trip(transport: Transport, raw: &[u8], limits: &Limits) {
    let _ = Verdict::of(transport, raw, limits);
    if let Ok(message) = decode(transport, raw, limits) {
        let line = match &message {
            Message::V1(m) => m.to_line(&Limits::default()),
            Message::Ws(m) => m.to_line(&Limits::default()),
        }
        .unwrap_or_else(|r| panic!("accepted message fails the outbound check: {r}"));
        let again = decode(transport, line.as_bytes(), &Limits::default()).unwrap();
        assert_eq!(again, message);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(raw in prop::collection::vec(any::<u8>(), 0..256), t in transport()) {
        check_round_trip(t, &raw, &Limits::default());
    }

    #[test]
    fn arbitrary_json_never_panics_and_accepted_messages_round_trip(
        value in json(),
        t in transport(),
        max_bytes in prop_oneof![Just(1usize << 20), 0usize..256],
    ) {
        let raw = serde_json::to_vec(&value).unwrap();
        check_round_trip(t, &raw, &Limits::with_max_bytes(max_bytes));
    }

    #[test]
    fn envelope_shaped_json_round_trips(
        t in transport(),
        kind in prop::sample::select(&["req", "res", "evt", "request", "response", "event"][..]),
        method in prop::sample::select(WORDS),
        params in json(),
        id in ".{0,4}",
    ) {
        let mut obj = Map::new();
        obj.insert("v".into(), Value::from(1));
        obj.insert(if t == Transport::V1 { "kind" } else { "type" }.into(), Value::from(kind));
        obj.insert("id".into(), Value::from(id));
        obj.insert("method".into(), Value::from(method));
        obj.insert("params".into(), params.clone());
        obj.insert("topic".into(), Value::from(method));
        obj.insert("event".into(), Value::from(method));
        obj.insert("payload".into(), params);
        obj.insert("ok".into(), Value::from(true));
        let raw = serde_json::to_vec(&Value::Object(obj)).unwrap();
        check_round_trip(t, &raw, &Limits::default());
    }

    #[test]
    fn deep_nesting_is_rejected_not_overflowed(depth in 90usize..20_000, t in transport()) {
        let raw = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let verdict = Verdict::of(t, raw.as_bytes(), &Limits::default());
        let code = if depth > bb_protocol::DEFAULT_MAX_DEPTH { "invalid_json" } else { "invalid_envelope" };
        prop_assert_eq!(verdict, Verdict::Rejected { code: code.into() });
    }
}

fn item() -> impl Strategy<Value = EventItem> {
    let truncation = (".{0,6}", prop::collection::vec(".{0,6}", 0..3), 0u64..1 << 53)
        .prop_map(|(body_ref, fields, total_bytes)| Truncation { body_ref, fields, total_bytes });
    (
        (".{0,6}", ".{0,8}", prop::option::of(0u64..1 << 53)),
        prop::option::of(any::<f64>().prop_filter("finite", |f| f.is_finite())),
        prop::collection::vec((".{0,6}", json()), 0..5),
        (
            ".{0,8}",
            prop::option::of(".{0,6}"),
            prop::option::of(truncation),
            prop::option::of(".{0,6}"),
        ),
    )
        .prop_map(
            |((id, event_type, turn), ts, payload, (class, message_id, truncated, session_id))| {
                let payload = payload.into_iter().collect::<Map<_, _>>();
                let event = EngineEvent {
                    id: id.into(),
                    event_type: event_type.into(),
                    turn,
                    ts,
                    payload: payload.into(),
                };
                EventItem { event, class: class.into(), message_id, truncated, session_id }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// The host writes every item once and sends the text from then on: a written list is
    /// the same list, byte for byte on the wire, and reads back the same.
    #[test]
    fn written_events_are_the_same_list(
        items in prop::collection::vec(item(), 0..6),
        taken_back in item(),
        moved in any::<bool>(),
    ) {
        let mut writer = EventsWriter::default();
        for (n, item) in items.iter().enumerate() {
            let size = serde_json::to_vec(item).unwrap().len();
            if n == 0 {
                // An item refused for its length is handed back and leaves no trace.
                let refused = writer.push(item.clone(), size - 1);
                prop_assert_eq!(refused, Err(Refused::TooLong(Box::new(item.clone()))));
                let long = serde_json::to_vec(&taken_back).unwrap().len();
                let refused = writer.push(taken_back.clone(), long - 1).unwrap_err();
                prop_assert_eq!(refused.into_item(), taken_back.clone());
                prop_assert!(writer.is_empty());
            }
            prop_assert_eq!(writer.push(item.clone(), size), Ok(size));
        }
        let mut rest = Vec::new();
        if moved && !items.is_empty() {
            // The last item moved on to the next message.
            rest = writer.take_last().finish().items().into_owned();
        }
        let mut listed = writer.finish().items().into_owned();
        listed.extend(rest);
        prop_assert_eq!(&listed, &items);

        let mut writer = EventsWriter::default();
        items.iter().for_each(|i| { writer.push(i.clone(), usize::MAX).unwrap(); });
        let written = writer.finish();
        let plain = Events::from(items.clone());
        prop_assert!(written.is_written() && !plain.is_written());
        prop_assert_eq!(serde_json::to_string(&written).unwrap(), serde_json::to_string(&plain).unwrap());
        prop_assert_eq!(&written, &plain);
        prop_assert_eq!(written.len(), items.len());
        // An event of another session than the message's reports no id (no position of it).
        fn own(i: &EventItem) -> &str {
            if i.session_id.is_some() { "" } else { i.event.id.as_str() }
        }
        prop_assert!(written.ids().eq(items.iter().map(own)));
        prop_assert!(plain.ids().eq(items.iter().map(own)));
        prop_assert!(written.classes().eq(items.iter().map(|i| &*i.class)));
        prop_assert_eq!(written.items().into_owned(), items);
    }
}

#[test]
fn an_item_with_a_count_out_of_range_is_not_written() {
    let mut item = EventItem::new(
        EngineEvent {
            id: "e".into(),
            event_type: "t".into(),
            turn: Some(1 << 53),
            ts: None,
            payload: Map::new().into(),
        },
        "unknown_event",
    );
    let mut writer = EventsWriter::default();
    let back =
        writer.push(item.clone(), usize::MAX).expect_err("a turn past 2^53 - 1 stays an item");
    assert_eq!(back, Refused::Unwritable(Box::new(item.clone())), "handed back");
    item.event.turn = Some((1 << 53) - 1);
    assert!(writer.push(item.clone(), usize::MAX).is_ok());
    item.truncated =
        Some(Truncation { body_ref: "r".into(), fields: Vec::new(), total_bytes: 1 << 53 });
    assert!(
        matches!(writer.push(item, usize::MAX), Err(Refused::Unwritable(_))),
        "so does a totalBytes past it"
    );
    assert_eq!(writer.len(), 1, "a refused item leaves nothing behind");
    assert_eq!(writer.finish().items().len(), 1);
}
