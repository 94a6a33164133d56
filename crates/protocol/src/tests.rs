//! Unit tests of the decoders, constructors, limits and schema generation.

use serde_json::json;

use crate::limits::{Masks, exceeds_with, nesting_depth_exceeds};
use crate::v1::{
    AssistantDelta, ConnectionDiagnostics, ConnectionPayload, ConnectionStatus, EngineEvent,
    EventItem, EventsPayload, EventsWriter, InitParams, Receive, SessionParams, SessionSummary,
    StatePayload, Truncation, Updates, V1Call, V1Error, V1Event, V1Message, V1Method, V1Request,
    V1Response, V1Topic, VisibilityParams, WebviewUpdate,
};
use crate::ws::{
    WsCall, WsError, WsEvent, WsEventKind, WsMessage, WsMethod, WsRequest, WsResponse,
};
use crate::{Limits, RejectCode, Transport, Verdict, decode_v1, decode_ws};

fn v1(raw: &str) -> Result<V1Message, crate::Rejection> {
    decode_v1(raw.as_bytes(), &Limits::default())
}

fn ws(raw: &str) -> Result<WsMessage, crate::Rejection> {
    decode_ws(raw.as_bytes(), &Limits::default())
}

fn code_v1(raw: &str) -> Option<RejectCode> {
    v1(raw).err().map(|r| r.code)
}

#[test]
fn v1_request_decodes_to_typed_call() {
    let msg = v1(r#"{"v":1,"kind":"req","id":"7","method":"bb.stop","params":{"sessionId":"s"}}"#)
        .unwrap();
    let expected =
        V1Request::new("7", V1Call::Stop(SessionParams { session_id: "s".into(), tab_id: None }));
    assert_eq!(msg, V1Message::Request(expected));
}

#[test]
fn unknown_method_keeps_the_request_id_and_builds_the_reply() {
    let rejection = v1(r#"{"v":1,"kind":"req","id":"r1","method":"bb.nope"}"#).unwrap_err();
    assert_eq!(rejection.code, RejectCode::UnknownMethod);
    assert_eq!(rejection.id.as_deref(), Some("r1"));
    let reply = rejection.v1_response().unwrap();
    let line = V1Message::Response(reply).to_line(&Limits::default()).unwrap();
    let value: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(value["id"], "r1");
    assert_eq!(value["ok"], false);
    assert_eq!(value["error"]["code"], "unknown_method");

    let rejection = ws(r#"{"type":"request","id":"w1","method":"bb.nope"}"#).unwrap_err();
    assert_eq!(rejection.code, RejectCode::UnknownMethod);
    let reply = rejection.ws_response().unwrap();
    assert_eq!(reply.id, "w1");
    assert_eq!(reply.error.unwrap().code.as_deref(), Some("unknown_method"));
}

#[test]
fn rejections_of_non_requests_carry_no_id() {
    let rejection = v1(r#"{"v":1,"kind":"res","id":"r1","ok":"yes"}"#).unwrap_err();
    assert_eq!(rejection.code, RejectCode::InvalidEnvelope);
    assert_eq!(rejection.id, None);
    assert!(rejection.v1_response().is_none());
}

#[test]
fn version_is_checked_before_everything_else() {
    assert_eq!(code_v1(r#"{"v":2}"#), Some(RejectCode::UnsupportedVersion));
    assert_eq!(code_v1(r#"{"v":"1","kind":"req"}"#), Some(RejectCode::InvalidEnvelope));
    assert_eq!(
        code_v1(r#"{"kind":"req","id":"1","method":"bb.init"}"#),
        Some(RejectCode::InvalidEnvelope)
    );
    assert_eq!(
        code_v1(r#"{"v":1.0,"kind":"req","id":"1","method":"bb.init"}"#),
        Some(RejectCode::UnsupportedVersion)
    );
    let r = v1(r#"{"v":0,"kind":"req","id":"x","method":"bb.init"}"#).unwrap_err();
    assert_eq!((r.code, r.id.as_deref()), (RejectCode::UnsupportedVersion, Some("x")));
}

#[test]
fn response_consistency() {
    assert_eq!(code_v1(r#"{"v":1,"kind":"res","id":"1","ok":true,"result":{}}"#), None);
    assert_eq!(code_v1(r#"{"v":1,"kind":"res","id":"1","ok":true}"#), None);
    assert_eq!(
        code_v1(r#"{"v":1,"kind":"res","id":"1","ok":true,"error":{"code":"x","message":"m"}}"#),
        Some(RejectCode::InvalidEnvelope)
    );
    assert_eq!(
        code_v1(r#"{"v":1,"kind":"res","id":"1","ok":false}"#),
        Some(RejectCode::InvalidEnvelope)
    );
    assert_eq!(
        code_v1(r#"{"v":1,"kind":"res","id":"1","ok":false,"error":{"message":"m"}}"#),
        Some(RejectCode::InvalidEnvelope)
    );
}

#[test]
fn size_limit_is_checked_on_raw_bytes_before_parsing() {
    let limits = Limits::with_max_bytes(10);
    let r = decode_v1(b"not json at all", &limits).unwrap_err();
    assert_eq!(r.code, RejectCode::PayloadTooLarge);
    let r = decode_v1(b"1234567890", &limits).unwrap_err();
    assert_eq!(r.code, RejectCode::InvalidEnvelope, "exactly at the limit is parsed");
}

#[test]
fn deep_nesting_is_invalid_json_without_recursion() {
    let depth = 200_000;
    let raw = format!(
        r#"{{"v":1,"kind":"req","id":"1","method":"bb.init","params":{{"a":{}{}}}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let r = decode_v1(raw.as_bytes(), &Limits { max_bytes: usize::MAX, ..Limits::default() });
    assert_eq!(r.unwrap_err().code, RejectCode::InvalidJson);
}

/// The byte-at-a-time scan the `memchr` one replaced: the reference it must agree with.
fn nesting_reference(raw: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in raw {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

proptest::proptest! {
    #[test]
    fn nesting_scan_agrees_with_the_bytewise_reference(
        raw in proptest::collection::vec(proptest::sample::select(b"[]{}\"\\ab:,|".to_vec()), 0..300),
        max in 0usize..6,
    ) {
        proptest::prop_assert_eq!(nesting_depth_exceeds(&raw, max), nesting_reference(&raw, max));
    }
}

proptest::proptest! {
    /// Long texts, mostly plain bytes, and limits the text may or may not reach: blocks the
    /// scan takes whole from their masks, blocks it walks, and the switches between them
    /// (a backslash outside a string, a block that would pass the limit or close below 0).
    #[test]
    fn nesting_scan_agrees_with_the_bytewise_reference_on_long_texts(
        raw in proptest::collection::vec(
            proptest::prop_oneof![
                6 => proptest::sample::select(b"abc :,".to_vec()),
                1 => proptest::sample::select(b"[]{}\"\\".to_vec()),
            ],
            0..1200,
        ),
        max in 0usize..40,
    ) {
        let want = nesting_reference(&raw, max);
        proptest::prop_assert_eq!(nesting_depth_exceeds(&raw, max), want);
        // The scan every CPU has (the one above is the fastest this CPU has).
        proptest::prop_assert_eq!(exceeds_with(&raw, max, Masks::of), want);
    }
}

proptest::proptest! {
    /// JSON as a bridge writes it (nested arrays and objects, strings with escaped quotes,
    /// backslashes and brackets), at every limit around its depth.
    #[test]
    fn nesting_scan_agrees_with_the_bytewise_reference_on_json(
        value in json_value(),
        extra in 0usize..3,
    ) {
        let raw = serde_json::to_vec(&value).unwrap_or_default();
        let depth = (0..200).find(|&d| !nesting_reference(&raw, d)).unwrap_or(200);
        for max in depth.saturating_sub(2)..depth + extra + 1 {
            proptest::prop_assert_eq!(nesting_depth_exceeds(&raw, max), nesting_reference(&raw, max));
        }
    }
}

/// Arbitrary JSON values, with strings full of what the nesting scan looks at.
fn json_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
    use proptest::prelude::*;
    let text = r#"[a-z\\"\[\]{}]{0,80}"#;
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        text.prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(12, 160, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            proptest::collection::vec((text, inner), 0..6)
                .prop_map(|kv| serde_json::Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest::proptest! {
    /// The block masks, as built on this machine, are the bytewise ones.
    #[test]
    fn the_block_masks_are_the_bytewise_ones(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 64),
        picks in proptest::collection::vec((0usize..64, proptest::sample::select(b"[]{}\"\\|;:zZ".to_vec())), 0..24),
    ) {
        let mut block = [0u8; 64];
        block.copy_from_slice(&bytes);
        for (at, b) in picks {
            block[at] = b;
        }
        proptest::prop_assert_eq!(Masks::of(&block), Masks::bytewise(&block));
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            proptest::prop_assert_eq!(unsafe { Masks::of_avx2(&block) }, Masks::bytewise(&block));
        }
    }
}

/// Escapes, strings and depth carry from one 64-byte block to the next: every position of an
/// escape, a closing quote and brackets around a block boundary.
#[test]
fn nesting_scan_carries_its_state_across_blocks() {
    for pad in 0..140 {
        for tail in [r#"\"[[[["]]]]"#, r#"\\"[[[["#, r#"x"[[[["#, r#"\\\"[[["#] {
            let raw = format!(r#"{{"a":[{{"b":"{}{tail}"#, "x".repeat(pad));
            for max in 0..8 {
                let (got, want) = (
                    nesting_depth_exceeds(raw.as_bytes(), max),
                    nesting_reference(raw.as_bytes(), max),
                );
                assert_eq!(got, want, "{raw} at most {max}");
            }
        }
    }
}

#[test]
fn nesting_scan_ignores_brackets_in_strings() {
    assert!(!nesting_depth_exceeds(br#"{"a":"[[[[[[\"[[[["}"#, 2));
    assert!(nesting_depth_exceeds(br#"{"a":[[["#, 3));
    assert!(!nesting_depth_exceeds(br#"{"a":[[]]}"#, 3));
}

#[test]
fn constructors_produce_valid_lines() {
    let limits = Limits::default();
    let messages =
        [
            V1Message::Request(V1Request::new("1", V1Call::Init(InitParams::default()))),
            V1Message::Request(V1Request::new(
                "2",
                V1Call::Init(InitParams {
                    last_seen: Some([("tab-a".to_owned(), 7)].into_iter().collect()),
                    workspace_trusted: Some(true),
                    receive: Some(Receive::Updates),
                }),
            )),
            V1Message::Request(V1Request::new(
                "3",
                V1Call::Visibility(VisibilityParams { visible: false }),
            )),
            V1Message::Request(V1Request::new(
                "4",
                V1Call::History(crate::v1::HistoryParams {
                    session_id: "s".into(),
                    before: 120,
                    limit: Some(20),
                }),
            )),
            V1Message::Event(V1Event::new(V1Topic::Events(EventsPayload {
                session_id: "s".into(),
                events: vec![EventItem {
                    event: EngineEvent {
                        id: "e1".into(),
                        event_type: "tool_result".into(),
                        turn: Some(1),
                        ts: None,
                        payload: serde_json::Map::new().into(),
                    },
                    class: "tool.result".into(),
                    message_id: Some("m1".into()),
                    truncated: Some(Truncation {
                        body_ref: "body-1".into(),
                        fields: vec!["/output".into()],
                        total_bytes: 2_000_000,
                    }),
                    session_id: Some("s-child".into()),
                }]
                .into(),
                tab_id: Some("tab-a".into()),
                seq: Some(8),
                resync: Some(true),
                view: Some(serde_json::Map::new()),
                updates: Some(Updates::from_items(&[WebviewUpdate::AssistantDelta(
                    AssistantDelta { key: "b1".into(), at: 0, delta: "hi".into() },
                )])),
                earlier: Some(crate::v1::Earlier { before: 120, turns: 40 }),
            }))),
            V1Message::Response(V1Response::success("1", json!({"x": 1}))),
            V1Message::Response(V1Response::failure("1", V1Error::new("engine_down", "no engine"))),
            V1Message::Event(V1Event::new(V1Topic::Connection(ConnectionPayload {
                status: ConnectionStatus::Connecting,
                session_id: None,
                retry_count: Some(2),
                last_error: None,
                gap_detected: Some(true),
                attempt: Some(3),
                restarting: Some(false),
                diagnostics: Some(ConnectionDiagnostics {
                    engine_pid: Some(42),
                    queue_depth: Some(0),
                    ..Default::default()
                }),
                heartbeat: Some(5000),
            }))),
        ];
    for message in messages {
        let line = message.to_line(&limits).unwrap();
        assert!(!line.contains('\n'));
        assert_eq!(decode_v1(line.as_bytes(), &limits).unwrap(), message);
    }
    let messages = [
        WsMessage::Request(WsRequest::new(
            "a",
            WsCall::ShellOpenPath(crate::ws::OpenPathParams { path: "/tmp".into() }),
        )),
        WsMessage::Response(WsResponse::success("a", serde_json::Value::Null)),
        WsMessage::Response(WsResponse::failure("a", WsError::new("x", "y"))),
        WsMessage::Event(WsEvent::new(WsEventKind::ScanProgress(serde_json::Map::new()))),
    ];
    for message in messages {
        let line = message.to_line(&limits).unwrap();
        assert_eq!(decode_ws(line.as_bytes(), &limits).unwrap(), message);
    }
}

#[test]
fn outbound_validation_catches_inconsistent_responses() {
    let mut response = V1Response::success("1", json!(1));
    response.error = Some(V1Error::new("x", "y"));
    let r = V1Message::Response(response).to_line(&Limits::default()).unwrap_err();
    assert_eq!(r.code, RejectCode::InvalidEnvelope);
    let big = V1Response::success("1", json!("x".repeat(100)));
    let r = V1Message::Response(big).to_line(&Limits::with_max_bytes(50)).unwrap_err();
    assert_eq!(r.code, RejectCode::PayloadTooLarge);
}

/// The outbound check of an event (no second parse) agrees with decoding its line, for
/// every count field of every topic in and out of range, and for the limits.
#[test]
fn event_outbound_check_agrees_with_decoding() {
    use crate::v1::{
        ConnectionDiagnostics, EngineEvent, EventItem, EventsPayload, StatePayload, Truncation,
    };
    let max = (1u64 << 53) - 1;
    let item = |turn, total: Option<u64>| {
        let mut item = EventItem::new(
            EngineEvent {
                id: "e".into(),
                event_type: "t".into(),
                turn,
                ts: Some(f64::NAN),
                payload: json!({"a": [[{"b": 1}]]}).as_object().cloned().unwrap_or_default().into(),
            },
            "tool.result",
        );
        item.truncated = total.map(|total_bytes| Truncation {
            body_ref: "r".into(),
            fields: vec!["output".into()],
            total_bytes,
        });
        item
    };
    let events = |turn, seq, total| {
        V1Topic::Events(EventsPayload {
            session_id: "s".into(),
            events: vec![item(turn, total)].into(),
            tab_id: Some("t".into()),
            seq,
            resync: None,
            view: None,
            updates: None,
            earlier: None,
        })
    };
    let state = |count| {
        V1Topic::State(std::sync::Arc::new(StatePayload {
            sessions: Vec::new(),
            active_session_id: None,
            running: None,
            pending_permission_count: count,
        }))
    };
    let connection = |retry_count, attempt, diagnostics| {
        V1Topic::Connection(ConnectionPayload {
            status: ConnectionStatus::Error,
            session_id: None,
            retry_count,
            last_error: Some("x".into()),
            gap_detected: None,
            attempt,
            restarting: None,
            diagnostics,
            heartbeat: None,
        })
    };
    let diag = |v| ConnectionDiagnostics {
        engine_pid: v,
        engine_port: v,
        reconnects: v,
        queue_depth: v,
        ..ConnectionDiagnostics::default()
    };
    let one = |v: Option<u64>| {
        [
            events(v, None, None),
            events(None, v, None),
            events(None, None, Some(v.unwrap_or(0))),
            state(v),
            connection(v, None, None),
            connection(None, v, None),
            connection(None, None, Some(diag(v))),
            connection(None, None, Some(ConnectionDiagnostics { queue_depth: v, ..diag(None) })),
        ]
    };
    let limits = [
        Limits::default(),
        Limits::with_max_bytes(60),
        Limits { max_bytes: 1 << 20, max_depth: 4 },
    ];
    for value in [None, Some(0), Some(max), Some(max + 1), Some(u64::MAX)] {
        for topic in one(value) {
            let message = V1Message::Event(V1Event::new(topic));
            let line = serde_json::to_string(&message).unwrap();
            for limits in &limits {
                let fast = message.to_line(limits).map_err(|r| r.code);
                let decoded = decode_v1(line.as_bytes(), limits).map(|_| line.clone());
                assert_eq!(fast, decoded.map_err(|r| r.code), "{line} with {limits:?}");
            }
        }
    }
}

#[test]
fn method_tables_round_trip_names() {
    for &m in V1Method::ALL {
        assert_eq!(V1Method::from_name(m.as_str()), Some(m));
    }
    for &m in WsMethod::ALL {
        assert_eq!(WsMethod::from_name(m.as_str()), Some(m));
    }
    assert_eq!(V1Method::ALL.len(), 15);
    assert_eq!(WsMethod::ALL.len(), 15);
}

#[test]
fn check_result_uses_typed_results() {
    let init = json!({
        "protocolVersion": 1,
        "engine": {"kind": "kilo", "status": "ready"},
        "capabilities": {"sessions": true, "permissions": true, "commands": false,
            "files": true, "diffs": true, "artifacts": false, "resume": true}
    });
    assert!(V1Method::Init.check_result(&init).is_ok());
    assert!(V1Method::Init.check_result(&json!({})).is_err());
    assert!(WsMethod::AcpSessionNew.check_result(&json!("sess-1")).is_ok());
    assert!(WsMethod::AcpDisconnect.check_result(&json!(null)).is_ok());
    assert!(WsMethod::DialogOpen.check_result(&json!(["a", "b"])).is_ok());
}

#[test]
fn verdict_serializes_in_checker_shape() {
    let v = Verdict::of(
        Transport::Ws,
        br#"{"type":"event","event":"session-data","payload":{}}"#,
        &Limits::default(),
    );
    assert_eq!(serde_json::to_string(&v).unwrap(), r#"{"verdict":"event","topic":"session-data"}"#);
    let v = Verdict::of(Transport::V1, b"", &Limits::default());
    assert_eq!(
        serde_json::to_string(&v).unwrap(),
        r#"{"verdict":"rejected","code":"invalid_json"}"#
    );
}

#[test]
fn reject_codes_round_trip() {
    for code in RejectCode::ALL {
        assert_eq!(RejectCode::from_code(code.as_str()), Some(code));
    }
}

mod sniff;

/// The `bb/events` line written directly is the derive's line: every optional field absent
/// and present, written and unwritten lists, empty lists, strings that need escaping.
#[test]
fn events_line_is_the_derives_line() {
    let item = |id: &str, text: &str| EventItem {
        event: EngineEvent {
            id: id.into(),
            event_type: "assistant.message.delta".into(),
            turn: Some(1),
            ts: Some(1.5),
            payload: json!({"delta": text, "n": [1, {"a": null}]})
                .as_object()
                .cloned()
                .unwrap_or_default()
                .into(),
        },
        class: "transcript.assistant_stream".into(),
        message_id: None,
        truncated: None,
        session_id: None,
    };
    let items = vec![item("1", "a \"quoted\"\n\u{1}é"), item("2", "b")];
    let mut writer = EventsWriter::default();
    for i in items.clone() {
        writer.push(i, usize::MAX).unwrap();
    }
    let written = writer.finish();
    let lists = [written, items.into(), Vec::new().into(), EventsWriter::default().finish()];
    let updates = Updates::from_items(&[WebviewUpdate::AssistantDelta(AssistantDelta {
        key: "b1".into(),
        at: 0,
        delta: "h\"i".into(),
    })]);
    let mut view = serde_json::Map::new();
    view.insert("k\"".into(), json!([1, "x"]));
    let limits = Limits::default();
    for (n, events) in lists.into_iter().enumerate() {
        for fields in 0u8..64 {
            let on = |bit: u8| fields & (1 << bit) != 0;
            let message = V1Message::Event(V1Event::new(V1Topic::Events(EventsPayload {
                session_id: if on(0) { "ses_\"1\"\t".into() } else { "ses_1".into() },
                events: events.clone(),
                tab_id: on(1).then(|| "implicit-0".into()),
                seq: on(2).then_some(u64::from(fields) * 1_000_003),
                resync: on(3).then_some(fields % 3 == 0),
                view: on(4).then(|| view.clone()),
                updates: on(5)
                    .then(|| if n % 2 == 0 { updates.clone() } else { Updates::default() }),
                earlier: (fields % 5 == 0).then_some(crate::v1::Earlier { before: 7, turns: 2 }),
            })));
            let derive = serde_json::to_string(&message).unwrap();
            assert_eq!(message.to_line(&limits).unwrap(), derive, "list {n}, fields {fields:#b}");
        }
    }
}

/// Strings for the state line's property: any text, or short runs of what JSON escapes.
fn state_string() -> impl proptest::strategy::Strategy<Value = String> {
    proptest::prop_oneof![
        proptest::arbitrary::any::<String>(),
        "[\"\\\\\u{0}-\u{1f}\u{7f}é😀a/]{0,6}",
    ]
}

/// Counts across the range decoding accepts, its ends included.
fn state_count() -> impl proptest::strategy::Strategy<Value = Option<u64>> {
    proptest::option::of(proptest::prop_oneof![
        0u64..1000,
        proptest::sample::select(vec![0, crate::count::MAX_COUNT]),
        0..=crate::count::MAX_COUNT,
    ])
}

fn state_summary() -> impl proptest::strategy::Strategy<Value = SessionSummary> {
    use proptest::option::of;
    use proptest::strategy::Strategy;
    (
        state_string(),
        of(state_string()),
        of(state_string()),
        // Every kind of f64: integers, fractions, subnormals, infinities and NaN (`null`).
        of(proptest::prop_oneof![proptest::num::f64::ANY, (0u64..1 << 53).prop_map(|n| n as f64)]),
        state_count(),
        of(state_string()),
        state_count(),
        of(state_string()),
    )
        .prop_map(
            |(
                session_id,
                title,
                status,
                updated_at,
                queued_prompts,
                parent_id,
                pending_permission_count,
                folder,
            )| SessionSummary {
                session_id,
                title,
                status,
                updated_at,
                queued_prompts,
                parent_id,
                pending_permission_count,
                folder,
            },
        )
}

proptest::proptest! {
    /// The `bb/state` line written directly is the derive's line over any payload: every
    /// optional field of the payload and of each summary absent and present, strings that
    /// need escaping, every kind of number.
    #[test]
    fn state_line_is_the_derives_line(
        sessions in proptest::collection::vec(state_summary(), 0..6),
        active_session_id in proptest::option::of(state_string()),
        running in proptest::option::of(proptest::arbitrary::any::<bool>()),
        pending_permission_count in state_count(),
    ) {
        let message = V1Message::Event(V1Event::new(V1Topic::State(std::sync::Arc::new(
            StatePayload { sessions, active_session_id, running, pending_permission_count },
        ))));
        let derive = serde_json::to_string(&message).unwrap();
        proptest::prop_assert_eq!(message.to_line(&Limits::default()).unwrap(), derive);
    }
}

/// Payloads as the host holds them: the engine's text kept (any JSON object's text) or a
/// tree built by the bridge.
fn item_payload() -> impl proptest::strategy::Strategy<Value = bb_payload::Payload> {
    use proptest::strategy::Strategy;
    (proptest::collection::vec((state_string(), state_string()), 0..3), proptest::bool::ANY)
        .prop_map(|(fields, as_text)| {
            let map: serde_json::Map<String, serde_json::Value> =
                fields.into_iter().map(|(k, v)| (k, serde_json::Value::String(v))).collect();
            if as_text {
                let text = serde_json::to_string(&map).unwrap_or_default();
                bb_payload::Payload::from_text_unchecked(text)
            } else {
                map.into()
            }
        })
}

fn event_item() -> impl proptest::strategy::Strategy<Value = EventItem> {
    use proptest::option::of;
    use proptest::strategy::Strategy;
    let truncation =
        (state_string(), proptest::collection::vec(state_string(), 0..3), 0u64..1 << 40).prop_map(
            |(body_ref, fields, total_bytes)| Truncation { body_ref, fields, total_bytes },
        );
    (
        (state_string(), state_string(), proptest::bool::ANY),
        of(0..=crate::count::MAX_COUNT),
        of(proptest::prop_oneof![proptest::num::f64::ANY, (0u64..1 << 53).prop_map(|n| n as f64)]),
        item_payload(),
        proptest::prop_oneof![proptest::strategy::Just(String::new()), state_string()],
        (of(state_string()), of(truncation), of(state_string())),
    )
        .prop_map(
            |(
                (id, kind, borrowed),
                turn,
                ts,
                payload,
                class,
                (message_id, truncated, session_id),
            )| {
                let event_type =
                    if borrowed { "assistant.message.delta".into() } else { kind.into() };
                EventItem {
                    event: EngineEvent { id: id.into(), event_type, turn, ts, payload },
                    class: class.into(),
                    message_id,
                    truncated,
                    session_id,
                }
            },
        )
}

proptest::proptest! {
    /// An item written directly (what every written event list holds) is the derive's JSON:
    /// every optional field absent and present, strings that need escaping or not, payloads
    /// kept as text and built as trees, every kind of number.
    #[test]
    fn an_item_written_directly_is_the_derives_json(item in event_item()) {
        let mut direct = Vec::new();
        crate::v1::events_line::write_item(&mut direct, &item).unwrap();
        let derive = serde_json::to_string(&item).unwrap();
        proptest::prop_assert_eq!(String::from_utf8(direct).unwrap(), derive);
    }
}
