//! The flat body read by hand (`flat::read`) against serde's typed read of `Facts`: where
//! it reads a body, the same fields, borrowed where serde borrows; on the captures' bodies,
//! on a table of the shapes it takes and leaves, and on generated bodies.

use std::borrow::Cow;
use std::path::Path;

use bb_payload::LooseStr;
use proptest::prelude::*;

use crate::facts::Facts;
use crate::flat;

/// Each kept string's value and whether it is borrowed, and the whole read's `Debug`.
fn seen(facts: &Facts<'_>) -> (Vec<Option<(String, bool)>>, String) {
    let each =
        |s: &LooseStr<'_>| s.0.as_ref().map(|c| (c.to_string(), matches!(c, Cow::Borrowed(_))));
    let strings = [
        &facts.session_id,
        &facts.request_id,
        &facts.message_id,
        &facts.part_id,
        &facts.field,
        &facts.delta,
    ];
    (strings.into_iter().map(each).collect(), format!("{facts:?}"))
}

/// Whether the flat read took `body`; panics when what it read differs from serde's read.
fn check(body: &str) -> bool {
    let mut flat = Facts::default();
    if !flat::read_into(body, &mut flat) {
        return false;
    }
    let typed = serde_json::from_str::<Facts<'_>>(body)
        .unwrap_or_else(|e| panic!("the flat read took {body}, serde refuses it: {e}"));
    assert_eq!(seen(&flat), seen(&typed), "{body}");
    true
}

#[test]
fn the_flat_shapes_are_read_as_serde_reads_them() {
    let taken = [
        r#"{"delta":"@1;","field":"text","messageID":"msg_0","partID":"prt_1","sessionID":"ses_0"}"#,
        r#"{"sessionID":"ses_a","messageID":"msg_1","partID":"prt_1","field":"text","delta":"a \"b\"\n\\c\/\t\r\b\f"}"#,
        r#"{"sessionID":"ses_a","requestID":"per_1","x":"1","x":"2"}"#,
        r#"{"sessionID":"","delta":""}"#,
        r#"{"sessionID":"ses_é","delta":"日本"}"#,
        r#"{}"#,
    ];
    for body in taken {
        assert!(check(body), "the flat read takes {body}");
    }
    let left = [
        r#"{"sessionID":"ses_a","status":{"type":"busy"}}"#,
        r#"{"sessionID":"ses_a","time":"5"}"#,
        r#"{"sessionID":"ses_a","part":"x"}"#,
        r#"{"sessionID":"ses_a","sessionID":"ses_b"}"#,
        r#"{"sessionID":"ses_\u0061"}"#,
        r#"{"session\u0049D":"ses_a"}"#,
        r#"{"sessionID":"ses_a","n":1}"#,
        r#"{"sessionID": "ses_a"}"#,
        r#"{"sessionID":"ses_a"} "#,
        r#"{"sessionID":"ses_a",}"#,
        r#"{"sessionID":"ses_a""#,
        r#"{"sessionID":"a\qb"}"#,
        "{\"sessionID\":\"a\tb\"}",
        r#"{"sessionID":"ses_a"}}"#,
        r#"[]"#,
        r#"{"#,
    ];
    for body in left {
        assert!(!check(body), "the flat read leaves {body} to serde");
    }
}

#[test]
fn every_captured_body_reads_as_serde_reads_it() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine/kilo");
    let (mut bodies, mut taken) = (0, 0);
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "sse") {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let Some(data) = line.strip_prefix("data: ") else { continue };
            let Ok(event) = serde_json::from_str::<serde_json::Value>(data) else { continue };
            let event = event.get("payload").unwrap_or(&event);
            let Some(body) = event.get("properties") else { continue };
            bodies += 1;
            taken += usize::from(check(&body.to_string()));
        }
    }
    assert!(bodies > 100 && taken > 20, "{taken} of {bodies} captured bodies read flat");
}

/// A key: one the flat read keeps, one it leaves to serde, another, or an escaped one.
fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "sessionID",
        "requestID",
        "messageID",
        "partID",
        "field",
        "delta",
        "status",
        "part",
        "info",
        "time",
        "turn",
        "id",
        "x",
        "session\\u0049D",
        "del\\u0074a",
    ])
    .prop_map(|k| format!("\"{k}\""))
}

/// A value: a string (plain, with escapes good and bad, with a raw control character) or
/// another JSON value.
fn value() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "a", "ses_1", "é", "\\n", "\\\"", "\\\\", "\\/", "\\t", "\\u0041", "\\ud800", "\\q", "\t",
        " ", "@1;",
    ]);
    let string = prop::collection::vec(piece, 0..5).prop_map(|p| format!("\"{}\"", p.concat()));
    let other = prop::sample::select(vec![
        "1",
        "-2.5e3",
        "01",
        "null",
        "true",
        "{}",
        "{\"type\":\"busy\"}",
        "[\"x\"]",
        "\"\"",
    ])
    .prop_map(str::to_owned);
    prop_oneof![4 => string, 1 => other]
}

/// Kilo's own layout of a delta's body, read where the layout puts its keys, and the texts
/// near it that the layout's read must leave to the general read or to serde.
#[test]
fn a_delta_in_kilos_layout_is_read_as_serde_reads_it() {
    let taken = [
        r#"{"sessionID":"ses_0","messageID":"msg_0","partID":"prt_1","field":"text","delta":"@1;"}"#,
        r#"{"sessionID":"","messageID":"","partID":"","field":"","delta":""}"#,
        r#"{"sessionID":"ses_a","messageID":"m","partID":"p","field":"text","delta":"a \"b\"\n\\c\/"}"#,
        r#"{"sessionID":"ses_\t","messageID":"m\"","partID":"p","field":"text","delta":"日本"}"#,
        // Not the layout: the general read takes them.
        r#"{"sessionID":"ses_0","messageID":"msg_0","partID":"prt_1","field":"text"}"#,
        r#"{"sessionID":"ses_0","messageID":"msg_0","partID":"prt_1","field":"text","delta":"x","x":"y"}"#,
        r#"{"messageID":"msg_0","sessionID":"ses_0","partID":"prt_1","field":"text","delta":"x"}"#,
    ];
    for body in taken {
        assert!(check(body), "the flat read takes {body}");
    }
    let left = [
        r#"{"sessionID":"ses_0","messageID":"msg_0","partID":"prt_1","field":"text","delta":"x"}}"#,
        r#"{"sessionID":"ses_0","messageID":"msg_0","partID":"prt_1","field":"text","delta":"x"} "#,
        r#"{"sessionID":"ses_0","messageID":"msg_0","partID":"prt_1","field":"text","delta":"x""#,
        r#"{"sessionID":"ses_0","messageID":"msg_0","partID":"prt_1","field":"text","delta":1}"#,
        r#"{"sessionID":"ses_0","messageID":"msg_0","partID":"prt_1","field":"text","delta":"\u0041"}"#,
        r#"{"sessionID":"ses_0","messageID":"msg_0","partID":"prt_1","field":"text","delta":"a\qb"}"#,
        "{\"sessionID\":\"ses_0\",\"messageID\":\"m\",\"partID\":\"p\",\"field\":\"t\",\"delta\":\"a\tb\"}",
        r#"{"sessionID":"ses_0","messageID":"msg_0","partID":"prt_1","field":"text","delta":"x","delta":"y"}"#,
        r#"{"sessionID":"ses_0","messageID":"msg_0","partID":"prt_1","field":"text","delta":"x","time":"1"}"#,
        r#"{"sessionID":"ses_0","messageID":{},"partID":"prt_1","field":"text","delta":"x"}"#,
    ];
    for body in left {
        assert!(!check(body), "the flat read leaves {body} to serde");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A delta's body in Kilo's layout, its values any of [`value`]'s and anything after it
    /// (the layout's read takes only the exact layout), reads as serde reads it.
    #[test]
    fn a_delta_in_kilos_layout_agrees_with_serde(
        values in prop::collection::vec(value(), 5),
        tail in prop::sample::select(vec!["", "", "", " ", "}", ",", ",\"delta\":\"x\""]),
    ) {
        let keys = ["sessionID", "messageID", "partID", "field", "delta"];
        let body = keys.iter().zip(&values).map(|(k, v)| format!("\"{k}\":{v}"));
        let body = body.collect::<Vec<_>>().join(",");
        check(&format!("{{{body}{tail}}}"));
    }

    /// Any body the flat read takes, serde reads to the same fields, borrowed alike.
    #[test]
    fn the_flat_read_agrees_with_serde(
        fields in prop::collection::vec((key(), value()), 0..7),
        spaced in prop::bool::weighted(0.1),
        tail in prop::sample::select(vec!["", "", "", " ", "}", ","]),
    ) {
        let sep = if spaced { ", " } else { "," };
        let body = fields.iter().map(|(k, v)| format!("{k}:{v}")).collect::<Vec<_>>().join(sep);
        check(&format!("{{{body}}}{tail}"));
    }
}
