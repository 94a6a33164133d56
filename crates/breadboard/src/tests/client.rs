//! BreadBoard unit tests: the resume cursor, error-envelope decoding, event parsing and the
//! debounced, atomic cursor store.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::json;

use crate::client::{Admission, BbError, BbEvent, CursorStore, EventDecodeError, ResumeCursor};
use bb_engine_client::transport::TransportError;

#[test]
fn cursor_admits_in_order_and_flags_gaps_and_duplicates() {
    let fresh = ResumeCursor::new(None);
    assert_eq!(fresh.resume_id(), None);
    assert_eq!(fresh.admit(Some(1)), Admission::Deliver);
    assert_eq!(fresh.admit(Some(3)), Admission::Gap { expected: 1, got: 3 });
    assert_eq!(fresh.admit(None), Admission::Unsequenced);

    let mut cursor = ResumeCursor::new(Some(4));
    assert_eq!(cursor.resume_id().as_deref(), Some("4"));
    assert_eq!(cursor.admit(Some(4)), Admission::Duplicate);
    assert_eq!(cursor.admit(Some(5)), Admission::Deliver);
    assert_eq!(cursor.admit(Some(7)), Admission::Gap { expected: 5, got: 7 });
    cursor.advance(5);
    cursor.advance(3);
    assert_eq!(cursor.last_seq(), Some(5));
}

proptest! {
    #[test]
    fn cursor_delivers_each_seq_once_in_order(arrivals in proptest::collection::vec(1u64..30, 0..80)) {
        let mut cursor = ResumeCursor::new(None);
        let mut delivered = Vec::new();
        for seq in arrivals {
            if cursor.admit(Some(seq)) == Admission::Deliver {
                cursor.advance(seq);
                delivered.push(seq);
            }
        }
        let expected: Vec<u64> = (1..=delivered.len() as u64).collect();
        prop_assert_eq!(delivered, expected);
    }
}

#[test]
fn error_envelopes_decode_to_typed_errors() {
    let http =
        |status: u16, body: &str| BbError::from(TransportError::Http { status, body: body.into() });
    let table = [
        (
            http(
                409,
                r#"{"error":"resume_window_exceeded","detail":"resume window exceeded or event id not found","path":null}"#,
            ),
            BbError::ResumeWindowExceeded {
                detail: "resume window exceeded or event id not found".into(),
            },
        ),
        (
            http(404, r#"{"error":"not_found","detail":"session not found","path":null}"#),
            BbError::NotFound { detail: "session not found".into() },
        ),
        (
            http(409, r#"{"error":"conflict","detail":"session is closed","path":null}"#),
            BbError::Conflict { detail: "session is closed".into() },
        ),
        (
            http(400, r#"{"error":"invalid_request","detail":"invalid path","path":null}"#),
            BbError::InvalidRequest { status: 400, detail: "invalid path".into() },
        ),
        (
            http(422, r#"{"error":"invalid_request","detail":{"errors":[]},"path":null}"#),
            BbError::InvalidRequest { status: 422, detail: r#"{"errors":[]}"#.into() },
        ),
        (
            http(
                501,
                r#"{"error":"internal","detail":"apply_diff not yet implemented","path":null}"#,
            ),
            BbError::NotImplemented { detail: "apply_diff not yet implemented".into() },
        ),
        (
            http(500, "Internal Server Error"),
            BbError::Engine { status: 500, detail: "Internal Server Error".into() },
        ),
        (http(404, r#"{"detail":"Not Found"}"#), BbError::NotFound { detail: "Not Found".into() }),
        (
            BbError::from(TransportError::Auth { status: 401 }),
            BbError::Unauthorized { status: 401 },
        ),
    ];
    for (got, want) in table {
        assert_eq!(got, want);
    }
    assert!(BbError::Engine { status: 503, detail: String::new() }.is_retryable());
    assert!(!BbError::Unauthorized { status: 401 }.is_retryable());
}

#[test]
fn events_parse_tolerantly() {
    let data = r#"{"id":"u1","seq":null,"type":"tool_result","session_id":"s","turn":null,"timestamp":5,"timestamp_ms":5,"protocol_version":"1.0","payload":{"todo":{}},"extra":1}"#;
    let event = BbEvent::parse("u1", data).unwrap();
    assert_eq!((event.seq, &*event.kind, event.timestamp_ms), (None, "tool_result", Some(5)));
    assert_eq!(event.sse_id, "u1");
    assert_eq!(event.payload.text(), Some(r#"{"todo":{}}"#), "other fields are skipped");
    let odd = r#"{"id":7,"seq":"x","type":"warning","turn":"2","timestamp_ms":null,"timestamp":9,"payload":[1]}"#;
    let event = BbEvent::parse("7", odd).unwrap();
    assert_eq!((event.seq, event.turn), (None, None), "other types read as absent");
    assert_eq!(event.timestamp_ms, None, "a present timestamp_ms is the one read");
    assert_eq!(event.payload, json!({}));
    assert_eq!(BbEvent::parse("1", "[1]"), Err(EventDecodeError::NoType));
    assert!(BbEvent::parse("1", "not json").is_err());
    assert!(BbEvent::parse("1", r#"{"seq":1}"#).is_err());
    assert!(BbEvent::parse("1", r#"{"seq":1,"type":7}"#).is_err(), "a type that is no string");
    assert_eq!(BbEvent::parse("1", r#"{"type":"warning"}"#).unwrap().payload, json!({}));
}

/// The envelope's fields read as `serde_json::Value`'s `as_u64`/`as_i64`/`as_str` read
/// them (the envelope was a tree of values before it was read field by field).
#[test]
fn envelope_fields_read_as_their_values_would() {
    let numbers = [
        "0",
        "7",
        "-3",
        "18446744073709551615",
        "9223372036854775808",
        "-9223372036854775808",
        "1.0",
        "1e3",
        "true",
        "null",
        r#""5""#,
        "[1,{}]",
        r#"{"a":[1]}"#,
    ];
    for n in numbers {
        let value: serde_json::Value = serde_json::from_str(n).unwrap();
        let data = format!(r#"{{"type":"x","seq":{n},"turn":{n},"timestamp":{n}}}"#);
        let event = BbEvent::parse("1", &data).unwrap();
        assert_eq!(event.seq, value.as_u64(), "seq {n}");
        assert_eq!(event.turn, value.as_i64(), "turn {n}");
        assert_eq!(event.timestamp_ms, value.as_u64(), "timestamp {n}");
    }
    let escaped = BbEvent::parse("1", r#"{"type":"tool\u005fcall","seq":2}"#).unwrap();
    assert_eq!((&*escaped.kind, escaped.seq), ("tool_call", Some(2)), "an escaped type");
    assert!(
        matches!(escaped.kind, std::borrow::Cow::Borrowed(_)),
        "a known type, escaped, is still held as a static string"
    );
    let unknown = BbEvent::parse("1", r#"{"type":"new.kind"}"#).unwrap();
    assert_eq!(&*unknown.kind, "new.kind", "an unknown type is forwarded as is");
}

#[test]
fn a_payload_is_kept_as_text_written_as_its_tree_would_be() {
    let event = |payload: &str| {
        BbEvent::parse("1", &format!(r#"{{"type":"assistant_delta","payload":{payload}}}"#))
    };
    // As the engine writes it (ASCII escapes): rewritten as serde_json writes the tree.
    let p = event(r#"{"text":"caf\u00e9 \ud83d\ude00","n":1.50}"#).unwrap().payload;
    assert_eq!(p.text(), Some(r#"{"text":"café 😀","n":1.5}"#));
    // A key twice: the tree, as before (the last value, at the first key's place).
    let p = event(r#"{"a":1,"b":2,"a":3}"#).unwrap().payload;
    assert_eq!((p.text(), serde_json::to_string(&p).unwrap()), (None, r#"{"a":3,"b":2}"#.into()));
    // Too deep for the tree (the envelope counts): refused as before.
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(event(&format!(r#"{{"a":{}}}"#, deep(125))).is_ok());
    assert_eq!(event(&format!(r#"{{"a":{}}}"#, deep(126))), Err(EventDecodeError::NoType));
    assert_eq!(event(&deep(127)), Err(EventDecodeError::NoType));
}

/// The envelope's numbers, read eight digits a step, read as serde reads them: every count
/// of digits to 21 (past a word, past two, past what fits), leading zeros, each ended by
/// bytes of every kind (`:` is the one after `9`; `é` is past ASCII) and near the text's end
/// (fewer than eight bytes left); a `timestamp` (passed over, read only without a
/// `timestamp_ms`) in each place beside a `timestamp_ms`.
#[test]
fn envelope_numbers_read_as_serde_reads_them() {
    let digits = "1234567890".repeat(3);
    let mut numbers: Vec<String> = (1..=21).map(|n| digits[..n].to_owned()).collect();
    numbers.extend((1..=20).map(|n| "9".repeat(n)));
    numbers.extend(
        [
            "0",
            "00",
            "07",
            "18446744073709551615",
            "18446744073709551616",
            "1.5",
            "1e5",
            "12E1",
            "-1",
            "12:3",
            "12é",
            "1234567é",
            "12345678é",
            "12/",
            "12 ",
        ]
        .map(str::to_owned),
    );
    for n in &numbers {
        for text in [
            format!(r#"{{"type":"t","seq":{n}}}"#),
            format!(r#"{{"seq":{n},"type":"t","visibility":"transcript"}}"#),
            format!(r#"{{"timestamp":{n},"turn":{n},"timestamp_ms":{n},"type":"t"}}"#),
            // `timestamp` alone, before or after a `timestamp_ms` (also `null`), or twice.
            format!(r#"{{"type":"t","timestamp":{n}}}"#),
            format!(r#"{{"timestamp":{n},"type":"t","timestamp_ms":7}}"#),
            format!(r#"{{"timestamp":{n},"timestamp_ms":null,"type":"t"}}"#),
            format!(r#"{{"timestamp_ms":7,"timestamp":{n},"type":"t"}}"#),
            format!(r#"{{"timestamp":{n},"type":"t","timestamp":1}}"#),
        ] {
            assert_eq!(BbEvent::parse("1", &text), BbEvent::parse_serde("1", &text), "{text}");
        }
    }
}

/// The envelope the engine writes (compact) is read in the one pass, and so is one with
/// whitespace between any two of its tokens (nested ones included), each as serde reads it:
/// the pass passes over whitespace where it finds some rather than leaving the envelope to
/// serde.
#[test]
fn envelopes_with_or_without_whitespace_are_read_in_one_pass() {
    let tokens = [
        "{",
        r#""id""#,
        ":",
        r#""evt-5""#,
        ",",
        r#""seq""#,
        ":",
        "3",
        ",",
        r#""type""#,
        ":",
        r#""assistant.message.delta""#,
        ",",
        r#""turn""#,
        ":",
        "1",
        ",",
        r#""timestamp_ms""#,
        ":",
        "1795306812857",
        ",",
        r#""payload""#,
        ":",
        r#"{"item_id":"msg_7","delta":"@5;","seq":3}"#,
        ",",
        r#""actor""#,
        ":",
        "{",
        r#""kind""#,
        ":",
        r#""engine""#,
        ",",
        r#""tags""#,
        ":",
        "[",
        "1",
        ",",
        r#""a\"b""#,
        ",",
        "{",
        "}",
        "]",
        "}",
        ",",
        r#""visibility""#,
        ":",
        r#""transcript""#,
        "}",
    ];
    let compact = tokens.concat();
    assert!(BbEvent::read_in_one_pass(&compact), "{compact}");
    for at in 0..=tokens.len() {
        for space in [" ", "\n\t ", "\r\n"] {
            let mut text = tokens[..at].concat();
            text.push_str(space);
            text.push_str(&tokens[at..].concat());
            assert!(BbEvent::read_in_one_pass(&text), "{text:?}");
            assert_eq!(BbEvent::parse("1", &text), BbEvent::parse_serde("1", &text), "{text:?}");
        }
    }
}

/// Every envelope of the engine's captures is written in its layout, and is read by the
/// layout's read as serde reads it.
#[test]
fn the_engines_envelopes_are_read_in_its_layout() {
    use bb_normalize::Engine;
    use bb_test_support::captures;

    let (mut envelopes, mut in_layout) = (0, 0);
    for (engine, file) in captures::captures() {
        if engine != Engine::BreadBoard {
            continue;
        }
        for event in captures::read(engine, &file) {
            let data = event.data.as_str();
            envelopes += 1;
            assert_eq!(BbEvent::parse("1", data), BbEvent::parse_serde("1", data), "{data}");
            if BbEvent::read_in_layout(data) {
                in_layout += 1;
            }
        }
    }
    // The captures hold 457 envelopes, with and without the last four keys.
    assert!(envelopes >= 457, "{envelopes}");
    assert_eq!(in_layout, envelopes);
}

/// Texts close to the engine's layout, each read as serde reads it (the layout's read gives
/// up on them, or reads them to the same result).
#[test]
fn envelopes_near_the_engines_layout_read_as_serde_reads_them() {
    let head = r#"{"id":"e","seq":1,"type":"assistant.message.delta","session_id":"s","turn":1,"timestamp":2,"timestamp_ms":3,"protocol_version":"1.0","payload":{"item_id":"m","delta":"d","seq":1}"#;
    let rows = [
        // As the engine writes it, with and without the last four keys.
        (format!("{head}}}"), true),
        (
            format!(
                r#"{head},"classification":"c","family":"f","actor":{{"kind":"engine"}},"visibility":"v"}}"#
            ),
            true,
        ),
        // An actor of another form.
        (
            format!(
                r#"{head},"classification":"c","family":"f","actor":{{"kind":"engine","id":[1]}},"visibility":"v"}}"#
            ),
            true,
        ),
        (
            format!(r#"{head},"classification":"c","family":"f","actor":null,"visibility":"v"}}"#),
            true,
        ),
        // An actor that holds the last key, the envelope left open: not JSON.
        (
            format!(
                r#"{head},"classification":"c","family":"f","actor":{{"kind":"x","visibility":"v"}}"#
            ),
            false,
        ),
        // Whitespace after the end, another order, a key more, a `,` more.
        (format!("{head}}} "), true),
        (
            format!(
                r#"{head},"family":"f","classification":"c","actor":{{"kind":"engine"}},"visibility":"v"}}"#
            ),
            true,
        ),
        (
            format!(
                r#"{head},"classification":"c","family":"f","actor":{{"kind":"engine"}},"visibility":"v","x":1}}"#
            ),
            true,
        ),
        (format!("{head},}}"), false),
    ];
    for (text, ok) in rows {
        let read = BbEvent::parse("1", &text);
        assert_eq!(read, BbEvent::parse_serde("1", &text), "{text}");
        assert_eq!(read.is_ok(), ok, "{text}");
    }
}

#[allow(clippy::disallowed_methods)]
fn base() -> Instant {
    Instant::now()
}

#[test]
fn a_cursor_moves_only_forward_from_its_first_record() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = base();
    let mut store = CursorStore::open(dir.path(), Duration::ZERO).unwrap();
    store.record("a", 0, t0);
    assert_eq!(
        (store.get("a"), store.poll_timeout()),
        (Some(0), None),
        "a first 0 changes nothing"
    );
    store.record("b", 5, t0);
    assert_eq!((store.get("b"), store.poll_timeout()), (Some(5), Some(t0)));
    store.flush().unwrap();
    store.record("b", 4, t0);
    store.record("b", 5, t0);
    assert_eq!((store.get("b"), store.poll_timeout()), (Some(5), None), "not moved back");
    store.record("b", 6, t0);
    assert_eq!((store.get("b"), store.poll_timeout()), (Some(6), Some(t0)));
}

/// The table is kept by hash, and still listed and written in the order of its ids.
#[test]
fn a_cursor_table_is_listed_and_written_in_the_order_of_its_ids() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = CursorStore::open(dir.path(), Duration::ZERO).unwrap();
    let ids: Vec<String> = (0..20).rev().map(|n| format!("s{n:02}")).collect();
    for (seq, id) in (1..).zip(&ids) {
        store.record(id, seq, base());
    }
    let mut sorted = ids.clone();
    sorted.sort();
    let listed: Vec<&str> = store.sessions().map(|(id, _)| id).collect();
    assert_eq!(listed, sorted);
    store.flush().unwrap();
    let text = std::fs::read_to_string(dir.path().join(CursorStore::FILE_NAME)).unwrap();
    let at: Vec<usize> = sorted.iter().map(|id| text.find(&format!("\"{id}\"")).unwrap()).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert_eq!(CursorStore::open(dir.path(), Duration::ZERO).unwrap().get("s07"), Some(13));
}

#[test]
fn cursor_store_debounces_and_writes_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let debounce = Duration::from_secs(1);
    let t0 = base();
    let mut store = CursorStore::open(dir.path(), debounce).unwrap();
    assert_eq!(store.poll_timeout(), None);
    store.record("a", 3, t0);
    store.record("a", 4, t0 + Duration::from_millis(900));
    store.record("a", 2, t0 + Duration::from_millis(950));
    assert_eq!(store.poll_timeout(), Some(t0 + debounce), "not pushed back by later events");
    assert!(!store.flush_due(t0 + Duration::from_millis(999)).unwrap());
    assert!(!dir.path().join(CursorStore::FILE_NAME).exists());
    assert!(store.flush_due(t0 + debounce).unwrap());
    assert_eq!(store.poll_timeout(), None);
    assert_eq!(CursorStore::open(dir.path(), debounce).unwrap().get("a"), Some(4));

    store.forget("a", t0);
    store.flush().unwrap();
    assert_eq!(CursorStore::open(dir.path(), debounce).unwrap().get("a"), None);
    let leftovers: Vec<_> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers, vec![std::ffi::OsString::from(CursorStore::FILE_NAME)]);

    std::fs::write(dir.path().join(CursorStore::FILE_NAME), "{not json").unwrap();
    assert!(CursorStore::open(dir.path(), debounce).is_err());
}

fn arb_payload() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |x| x.is_finite()).prop_map(Value::from),
        "[a-z\"\\\\\n\u{1} é’😀]{0,6}".prop_map(Value::from),
    ];
    let tree = leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::vec(("[a-z]{1,3}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    });
    prop::collection::vec(("[a-z_é]{1,4}", tree), 0..5)
        .prop_map(|kv| Value::Object(kv.into_iter().collect()))
}

proptest! {
    /// Whether kept as text or read as a tree, a payload is written as its tree is, in any
    /// form the engine may write it.
    #[test]
    fn a_payload_is_written_as_its_tree_whatever_its_form(payload in arb_payload()) {
        let compact = serde_json::to_string(&payload).unwrap();
        let forms =
            [compact.clone(), bb_fake_engine::ascii_escape(&compact), serde_json::to_string_pretty(&payload).unwrap()];
        for form in forms {
            let data = format!(r#"{{"type":"assistant_delta","seq":1,"payload":{form}}}"#);
            let event = BbEvent::parse("1", &data).unwrap();
            prop_assert_eq!(serde_json::to_string(&event.payload).unwrap(), compact.clone());
            prop_assert_eq!(&event.payload, &payload);
        }
        let data = format!(r#"{{"type":"x","payload":{compact}}}"#);
        prop_assert!(BbEvent::parse("1", &data).unwrap().payload.text().is_some(), "kept as text");
    }
}

/// A payload of an assistant or reasoning event, with the text fields the batcher and the
/// reducers read: each absent, a string (escapes included) or another value.
fn arb_text_payload() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let field = prop::option::of(prop_oneof![
        "[a-z\"\\\n\u{1}/ é’😀]{0,6}".prop_map(Value::from),
        arb_payload(),
    ]);
    (arb_payload(), [field.clone(), field.clone(), field.clone(), field]).prop_map(
        |(rest, fields)| {
            let mut map = match rest {
                Value::Object(map) => map,
                _ => serde_json::Map::new(),
            };
            let names = bb_normalize::breadboard::TEXT_FIELDS;
            for (name, value) in names.into_iter().zip(fields) {
                if let Some(value) = value {
                    map.insert(name.to_owned(), value);
                }
            }
            Value::Object(map)
        },
    )
}

proptest! {
    /// The memo of an assistant or reasoning event's text fields finds what lookups in its
    /// payload's tree find, in any form the engine may write it; it is left out only when
    /// one of them is a string written with an escape, or the payload is held as a tree
    /// (the fields are then read).
    #[test]
    fn a_text_memo_finds_what_the_payload_holds_whatever_its_form(payload in arb_text_payload()) {
        use bb_normalize::breadboard::{TEXT_FIELDS, TextMemo};
        let compact = serde_json::to_string(&payload).unwrap();
        let escaped = TEXT_FIELDS.iter().any(|f| {
            payload.get(f).and_then(serde_json::Value::as_str).is_some_and(|s| {
                serde_json::to_string(s).unwrap().len() != s.len() + 2
            })
        });
        let forms =
            [compact.clone(), bb_fake_engine::ascii_escape(&compact), serde_json::to_string_pretty(&payload).unwrap()];
        for (form, kind) in forms.iter().zip(["assistant.message.delta", "assistant_delta", "assistant.reasoning.delta"]) {
            let data = format!(r#"{{"type":"{kind}","seq":1,"payload":{form}}}"#);
            let event = BbEvent::parse("1", &data).unwrap();
            let memo = event.payload.memo::<TextMemo>();
            // A payload read as a tree (a key with an escape) has no text to find fields in.
            let read = escaped || event.payload.text().is_none();
            prop_assert_eq!(memo.is_none(), read, "{}", form);
            if let Some(memo) = memo {
                let looked_up = TEXT_FIELDS.map(|f| payload.get(f).and_then(serde_json::Value::as_str));
                prop_assert_eq!(memo.found(&event.payload), looked_up);
            }
        }
    }
}

/// One envelope value, as its JSON text: every kind of value a field may hold, in the forms
/// an engine may write them (and some no engine should).
fn arb_value_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        (0u64..100).prop_map(|n| n.to_string()),
        // Runs of 1 to 22 digits, leading zeros and all (20 and more overflow or are
        // refused), some with a fraction or an exponent after them.
        "[0-9]{1,22}(\\.[0-9]|e1|E-2)?",
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_filter("finite", |x| x.is_finite()).prop_map(|x| x.to_string()),
        prop_oneof![
            Just("1.0"),
            Just("1e3"),
            Just("-0"),
            Just("007"),
            Just("12345678901234567890123"),
            // One past `i64::MAX`: a `u64`, not an `i64` (a `turn` of it is none).
            Just("9223372036854775808"),
            // An `actor` as the engine writes it, and close to it.
            Just(r#"{"kind":"service"}"#),
            Just(r#"{"kind":"a\"b"}"#),
            Just(r#"{"kind":"engine","id":[1]}"#),
            Just(r#"{"kind":"engine"]"#),
            Just(r#"{"kind":7}"#),
            // A number ended by the byte after `9` (`:`), and by a byte past ASCII.
            Just("12:3"),
            Just("12é"),
            Just("1."),
            Just("-"),
            Just("true"),
            Just("false"),
            Just("null"),
            Just("nul"),
            Just(r#""\ud83d\ude00""#),
            Just(r#""\ud83d""#),
            Just(r#""\u00e9\/\n""#),
            Just(r#""\x""#),
            Just("\"a\u{1}b\""),
            // A string whose control character would end it, were it read as an end.
            Just("\"\u{1}"),
            Just("\"abcdefghijklmnopq\u{1f}"),
            Just("[1,[2,{\"a\":[]}],{}]"),
            Just("{\"a\":{\"b\":[null,\"c\\\"\"]}}"),
            Just("[1,]"),
            Just("{\"a\" 1}"),
            Just("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"),
        ]
        .prop_map(str::to_owned),
        "[a-z_.\"\\\\\n\u{1} é😀]{0,8}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        // Longer strings: their ends and escapes fall past a scan's first 16-byte step.
        "[a-z_.\"\\\\\n\u{1} é😀]{9,40}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        "[a-z_.\"\\\\\n\u{1} é😀]{9,40}".prop_map(|s| format!("\"{s}\"")),
        arb_payload().prop_map(|p| serde_json::to_string(&p).unwrap()),
        arb_payload().prop_map(|p| serde_json::to_string_pretty(&p).unwrap()),
        arb_payload().prop_map(|p| bb_fake_engine::ascii_escape(&serde_json::to_string(&p).unwrap())),
    ]
}

/// A `type` of an envelope, read or not.
fn kind_field() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just("\"assistant_delta\""),
        1 => Just("\"assistant.message.delta\""),
        1 => Just("\"tool_call\""),
        1 => Just("\"new.kind\""),
        1 => Just("\"tool\\u005fcall\""),
    ]
    .prop_map(str::to_owned)
}

/// An envelope's text: fields in any order, the ones the bridge reads and others, twice
/// sometimes, keys with escapes, whitespace between tokens, and sometimes cut short.
fn arb_envelope_text() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("seq"),
        Just("type"),
        Just("turn"),
        Just("timestamp_ms"),
        Just("timestamp"),
        Just("payload"),
        Just("id"),
        Just("session_id"),
        Just("protocol_version"),
        Just("classification"),
        Just("family"),
        Just("actor"),
        Just("visibility"),
        Just("se\\u0071"),
        Just("x"),
        Just("a_key_longer_than_one_step"),
    ];
    let kind = prop_oneof![
        Just("\"assistant_delta\""),
        Just("\"assistant.message.delta\""),
        Just("\"tool_call\""),
        Just("\"new.kind\""),
        Just("\"tool\\u005fcall\""),
        Just("7"),
        Just("null"),
    ];
    let field = (key, kind, arb_value_text(), 0..3usize).prop_map(|(key, kind, value, form)| {
        let value = if key == "type" && form > 0 { kind.to_owned() } else { value };
        (key.to_owned(), value)
    });
    let space = prop_oneof![Just(""), Just(""), Just(" "), Just("\n\t ")];
    let typed = (kind_field(), any::<usize>(), any::<bool>());
    (prop::collection::vec((field, space.clone()), 0..10), typed, space, any::<u8>()).prop_map(
        |(mut fields, (kind, at, typed), space, cut)| {
            // Most envelopes carry a type: without one, both reads refuse the event alike.
            if typed {
                fields.insert(at % (fields.len() + 1), (("type".to_owned(), kind), ""));
            }
            let mut text = format!("{space}{{");
            for (i, ((key, value), sp)) in fields.iter().enumerate() {
                if i > 0 {
                    text.push(',');
                }
                text.push_str(&format!("{sp}\"{key}\"{sp}:{sp}{value}{sp}"));
            }
            text.push('}');
            text.push_str(space);
            if cut < 16 && !text.is_empty() {
                let at = text.len() * usize::from(cut) / 16;
                let at = (0..=at).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
                text.truncate(at);
            }
            text
        },
    )
}

/// An envelope in the engine's layout (its keys in the engine's order, with or without the
/// last four), its values mostly as the engine writes them and sometimes any, and sometimes
/// changed where the layout's read must give up: a space put in anywhere, text after its end,
/// a key renamed, cut short.
fn arb_layout_text() -> impl Strategy<Value = String> {
    const KEYS: [(&str, &str); 13] = [
        ("id", r#""evt-5""#),
        ("seq", "3"),
        ("type", r#""assistant.message.delta""#),
        ("session_id", r#""ses_7""#),
        ("turn", "1"),
        ("timestamp", "1795306812857"),
        ("timestamp_ms", "1795306812857"),
        ("protocol_version", r#""1.0""#),
        ("payload", r#"{"item_id":"msg_7","delta":"@5;","seq":3}"#),
        ("classification", r#""bridge_stream""#),
        ("family", r#""message.assistant""#),
        ("actor", r#"{"kind":"engine"}"#),
        ("visibility", r#""transcript""#),
    ];
    // The values of one to three keys (sometimes the same) are any.
    let values = prop::collection::vec((0..13usize, arb_value_text()), 1..4);
    let change = (0..8u8, any::<usize>(), prop_oneof![Just(" "), Just("x"), Just(",}"), Just("}")]);
    (values, any::<bool>(), change).prop_map(|(values, long, (change, at, extra))| {
        let mut text = String::from("{");
        let fields = KEYS.iter().take(if long { 13 } else { 9 });
        for (i, (key, usual)) in fields.enumerate() {
            if i > 0 {
                text.push(',');
            }
            let any = values.iter().find(|(at, _)| *at == i).map(|(_, value)| value.as_str());
            let value = any.unwrap_or(usual);
            let key = if change == 2 && i == at % 13 { "x" } else { key };
            text.push_str(&format!("\"{key}\":{value}"));
        }
        text.push('}');
        let at = (0..=at % (text.len() + 1)).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        match change {
            0 => text.insert_str(at, extra),
            1 => text.push_str(extra),
            3 => text.truncate(at),
            _ => {}
        }
        text
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// The read of an envelope in the engine's layout gives what serde's read gives: the same
    /// event (or the same error), the payload kept as the same text with the same memo.
    #[test]
    fn an_envelope_in_the_engines_layout_reads_as_serde_reads_it(data in arb_layout_text()) {
        use bb_normalize::breadboard::TextMemo;
        let scanned = BbEvent::parse("1", &data);
        let read = BbEvent::parse_serde("1", &data);
        prop_assert_eq!(&scanned, &read, "{}", data);
        if let (Ok(scanned), Ok(read)) = (&scanned, &read) {
            prop_assert_eq!(scanned.payload.text(), read.payload.text(), "{}", data);
            prop_assert_eq!(
                scanned.payload.memo::<TextMemo>(), read.payload.memo::<TextMemo>(), "{}", data
            );
        }
    }

    /// The one-pass read of an envelope gives what serde's read gives, for any envelope: the
    /// same event (or the same error), the payload kept as the same text with the same memo.
    #[test]
    fn an_envelope_scanned_in_one_pass_reads_as_serde_reads_it(data in arb_envelope_text()) {
        use bb_normalize::breadboard::TextMemo;
        let scanned = BbEvent::parse("1", &data);
        let read = BbEvent::parse_serde("1", &data);
        prop_assert_eq!(&scanned, &read, "{}", data);
        if let (Ok(scanned), Ok(read)) = (&scanned, &read) {
            prop_assert_eq!(scanned.payload.text(), read.payload.text(), "{}", data);
            prop_assert_eq!(
                scanned.payload.memo::<TextMemo>(), read.payload.memo::<TextMemo>(), "{}", data
            );
        }
    }
}
