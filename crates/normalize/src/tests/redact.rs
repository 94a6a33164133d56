//! Redaction: the vector table, idempotence and "never emits a known secret" properties,
//! and the log-line form.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::jsonl;
use crate::redact::{
    LOG_LINE_CAP, REDACTED, is_sensitive_key, log_line_json, redact_document, redact_log_line,
    redact_text, redacted,
};

#[test]
fn vectors() {
    for v in jsonl("redact.jsonl") {
        let name = v["name"].as_str().unwrap();
        match &v["input"] {
            Value::String(text) => {
                assert_eq!(redact_text(text), v["expect"].as_str().unwrap(), "{name}");
            }
            input => assert_eq!(redacted(input), v["expect"], "{name}"),
        }
    }
}

#[test]
fn sensitive_keys() {
    for k in [
        "token",
        "access_token",
        "apiKey",
        "API-KEY",
        "Authorization",
        "proxy-authorization",
        "Set-Cookie",
        "password",
        "db_passwd",
        "clientSecret",
    ] {
        assert!(is_sensitive_key(k), "{k}");
    }
    for k in ["id", "path", "sessionID", "scope_key", "keyboard", "author"] {
        assert!(!is_sensitive_key(k), "{k}");
    }
}

#[test]
fn document_form_keeps_json_valid() {
    let out = redact_document(r#"{"headers":{"authorization":"Bearer abcdefgh123"},"n":1}"#);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v, json!({"headers": {"authorization": REDACTED}, "n": 1}));
    assert_eq!(redact_document("password=abc\n"), "password=[REDACTED]\n");
    let lines = redact_document("{\"token\":\"a1\"}\n\n{\"ok\":true}\n");
    assert_eq!(lines, "{\"token\":\"[REDACTED]\"}\n\n{\"ok\":true}\n");
}

#[test]
fn log_line_is_one_capped_line() {
    let text = format!("line1\nAuthorization: Bearer abcdefgh12345\r\n{}", "x".repeat(20_000));
    let line = redact_log_line(&text, LOG_LINE_CAP);
    assert!(line.len() <= LOG_LINE_CAP);
    assert!(!line.contains('\n') && !line.contains('\r'));
    assert!(!line.contains("abcdefgh12345"));
    let json = log_line_json(&json!({"text": "a\nb", "token": "t0p"}), 64);
    assert!(!json.contains('\n') && !json.contains("t0p") && json.len() <= 64);
}

#[test]
fn cap_never_splits_a_marker() {
    let text = format!("{}password=hunter2 tail", "a".repeat(100));
    for cap in 100..140 {
        let line = redact_log_line(&text, cap);
        assert!(line.len() <= cap, "{cap}");
        assert_eq!(redact_log_line(&line, cap), line, "{cap}");
        assert!(!line.contains("hunter2"));
    }
}

/// Secrets of the shapes the redactor knows, random in their variable part.
fn secret() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z0-9]{24,40}".prop_map(|s| format!("sk-{s}")),
        "[A-Za-z0-9]{24,40}".prop_map(|s| format!("sk-proj-{s}")),
        "[A-Za-z0-9]{36}".prop_map(|s| format!("ghp_{s}")),
        "[A-Z0-9]{16}".prop_map(|s| format!("AKIA{s}")),
        ("[A-Za-z0-9_-]{10,30}", "[A-Za-z0-9_-]{10,30}", "[A-Za-z0-9_-]{10,40}")
            .prop_map(|(a, b, c)| format!("eyJ{a}.eyJ{b}.{c}")),
    ]
}

fn filler() -> impl Strategy<Value = String> {
    "[ -~\\n]{0,60}"
}

proptest! {
    #[test]
    fn text_redaction_is_idempotent(s in "[ -~\\n\\t]{0,300}") {
        let once = redact_text(&s);
        prop_assert_eq!(redact_text(&once), once);
    }

    #[test]
    fn known_secrets_never_survive(pre in filler(), secret in secret(), post in filler(), how in 0..6usize) {
        let text = match how {
            0 => format!("{pre} {secret} {post}"),
            1 => format!("{pre}\nAuthorization: Bearer {secret}\n{post}"),
            2 => format!("{pre} https://h.example/p?x=1&token={secret}&y=2 {post}"),
            3 => format!("{pre}\nAPI_KEY={secret}\n{post}"),
            4 => format!("{{\"password\": \"{secret}\"}}"),
            _ => format!("{pre} Cookie: session={secret}; other=1"),
        };
        let out = redact_text(&text);
        prop_assert!(!out.contains(&secret), "{} -> {}", text, out);
        prop_assert_eq!(redact_text(&out), out.clone());
        let line = redact_log_line(&text, 128);
        prop_assert!(!line.contains(&secret));
        prop_assert!(line.len() <= 128);
        prop_assert_eq!(redact_log_line(&line, 128), line);
    }

    #[test]
    fn json_redaction_is_idempotent_and_hides_keyed_values(key in "[a-zA-Z_]{0,6}(token|apiKey|api_key|password|secret|cookie|authorization)[a-zA-Z_]{0,6}", val in "[A-Za-z0-9]{6,40}", other in "[a-z]{1,8}") {
        let v = json!({"outer": {&key: val.clone(), "list": [{&key: [val.clone()]}]}, "keep": other.clone()});
        let once = redacted(&v);
        prop_assert_eq!(redacted(&once), once.clone());
        let text = serde_json::to_string(&once).unwrap();
        let quoted = format!("\"{val}\"");
        prop_assert!(!text.contains(&quoted) || val == REDACTED);
        prop_assert_eq!(&once["keep"], &json!(other));
    }

    #[test]
    fn log_lines_are_single_capped_and_idempotent(s in "[ -~\\n\\r\\t]{0,400}", cap in 16usize..200) {
        let line = redact_log_line(&s, cap);
        prop_assert!(line.len() <= cap);
        prop_assert!(!line.contains('\n') && !line.contains('\r'));
        prop_assert_eq!(redact_log_line(&line, cap), line);
    }
}

/// Plain words that are no credential and name no secret.
fn word() -> impl Strategy<Value = String> {
    "[a-z]{2,10}".prop_filter("not a sensitive word or auth scheme", |w| {
        !is_sensitive_key(w)
            && !["bearer", "basic", "digest", "token", "negotiate", "ntlm"].contains(&w.as_str())
    })
}

proptest! {
    /// A redacted credential takes only itself: the words after it survive, in order.
    #[test]
    fn words_after_a_redacted_value_are_kept(
        secret in "[A-Za-z0-9._~+/=-]{1,40}",
        (key, scheme) in prop_oneof![
            Just(("Authorization: ", "Bearer ")),
            Just(("Proxy-Authorization: ", "Basic ")),
            Just(("password: ", "")),
            Just(("token: ", "")),
            Just(("api_key=", "")),
        ],
        words in proptest::collection::vec(word(), 1..5),
    ) {
        let tail = words.join(" ");
        let text = format!("{key}{scheme}{secret} {tail}");
        let out = redact_text(&text);
        prop_assert!(out.ends_with(&format!("{REDACTED} {tail}")), "{} -> {}", text, out);
        prop_assert_eq!(redact_text(&out), out.clone());
    }
}
