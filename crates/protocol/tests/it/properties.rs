//! Properties over arbitrary input: the decoders never panic, and whatever they accept
//! re-encodes (through the outbound check) to the same typed message.

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
