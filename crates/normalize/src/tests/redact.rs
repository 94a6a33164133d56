//! Redaction: the vector table, idempotence and "never emits a known secret" properties,
//! and the log-line form.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::jsonl;
use crate::redact::{
    LOG_LINE_CAP, REDACTED, is_sensitive_key, log_line_json, may_hold_secret, redact_document,
    redact_log_line, redact_patterns, redact_text, redacted,
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

/// Pieces of text near what the patterns look for: parts of key words, schemes and prefixes,
/// separators, and non-ASCII letters that fold to ASCII ones under `(?i)`.
fn near_miss() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ -~]{0,12}",
        redactable(),
        "[A-Za-z0-9+/=_-]{20,40}",
        prop::sample::select(vec![
            "tok",
            "en",
            "ke",
            "y",
            "Key",
            "TOKEN",
            "api_",
            "auth",
            "Authorization",
            "cook",
            "ie",
            "pass",
            "w",
            "ord",
            "secr",
            "et",
            "cred",
            "ential",
            "Bear",
            "er",
            "Basic",
            "dig",
            "est",
            "sk",
            "-",
            "_",
            "pk",
            "rk",
            "g",
            "h",
            "p",
            "github",
            "_pat_",
            "xo",
            "x",
            "AKI",
            "A",
            "AI",
            "za",
            "glpat",
            "e",
            "ey",
            "J",
            ".",
            "-----",
            "BEGIN",
            " PRIVATE KEY-----",
            "?",
            "&",
            "=",
            ":",
            " ",
            "\"",
            "\u{212a}",
            "\u{17f}",
            "\u{e9}",
            "\n",
        ])
        .prop_map(str::to_owned),
    ]
}

/// Text each pattern redacts, in random case where the pattern ignores case: every word, prefix
/// and shape the pre-check must let through.
fn redactable() -> impl Strategy<Value = String> {
    let word = prop::sample::select(vec![
        "token",
        "api_key",
        "apikey",
        "api-key",
        "authorization",
        "cookie",
        "passwd",
        "password",
        "secret",
        "credential",
        "private_key",
        "access.key",
    ]);
    let upper = proptest::collection::vec(any::<bool>(), 16);
    let cased = (word, upper).prop_map(|(w, up)| {
        w.chars()
            .zip(up.into_iter().cycle())
            .map(|(c, u)| if u { c.to_ascii_uppercase() } else { c })
            .collect::<String>()
    });
    // Each prefix with the shortest value its pattern takes (`AKIA` exactly 16), so no other
    // check (a 32-character token run) lets it through in the pre-check's place.
    let prefix = prop::sample::select(vec![
        ("sk-", 12),
        ("pk-", 12),
        ("rk-", 12),
        ("sk_live_", 10),
        ("ghp_", 20),
        ("github_pat_", 20),
        ("xoxb-", 10),
        ("AKIA", 16),
        ("AIza", 30),
        ("glpat-", 16),
    ]);
    prop_oneof![
        (cased.clone(), prop::sample::select(vec![": ", "=", " = "]), "[A-Za-z0-9]{8,20}")
            .prop_map(|(k, sep, v)| format!("{k}{sep}{v}")),
        (prop::sample::select(vec!["Bearer", "BASIC", "digest"]), "[A-Za-z0-9+/=]{12,20}")
            .prop_map(|(scheme, v)| format!("{scheme} {v}1aA")),
        (prefix, "[A-Z0-9]{30}").prop_map(|((p, n), v)| format!(" {p}{} ", &v[..n])),
        ("[A-Za-z0-9_-]{10,20}", "[A-Za-z0-9_-]{10,20}")
            .prop_map(|(a, b)| format!(" eyJ{a}.eyJ{b}.x")),
        (
            prop::sample::select(vec!["?", "&"]),
            prop::sample::select(vec!["key", "sig", "code"]),
            "[a-z0-9]{1,8}"
        )
            .prop_map(|(q, k, v)| format!("{q}{k}={v}")),
        "[A-Za-z0-9]{32,40}".prop_map(|t| format!(" {t}aZ9 ")),
        Just(" -----BEGIN RSA PRIVATE KEY-----abc".to_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// The pre-check skips the patterns only for text they leave as it is.
    #[test]
    fn text_the_pre_check_passes_over_holds_nothing_to_redact(
        parts in proptest::collection::vec(near_miss(), 0..12),
    ) {
        let s = parts.concat();
        let patterns = redact_patterns(&s);
        prop_assert!(
            patterns == s || may_hold_secret(&s),
            "the patterns change {s:?} to {patterns:?}, the pre-check passed over it"
        );
        prop_assert_eq!(redact_text(&s), if may_hold_secret(&s) { patterns } else { s });
    }

    /// Each shape alone in plain words, where nothing else makes the pre-check look: it must.
    #[test]
    fn the_pre_check_lets_every_redactable_shape_through(
        pre in "[a-z ]{0,10}",
        secret in redactable(),
        post in "[a-z ]{0,10}",
    ) {
        let s = format!("{pre}{secret}{post}");
        let patterns = redact_patterns(&s);
        prop_assert!(
            patterns == s || may_hold_secret(&s),
            "the patterns change {s:?} to {patterns:?}, the pre-check passed over it"
        );
    }
}

#[test]
fn the_pre_check_sends_non_ascii_text_to_the_patterns() {
    // KELVIN SIGN folds to `k` under `(?i)`: the patterns redact this key; an ASCII-only check
    // would miss it.
    let s = "api_\u{212a}ey: abcdef123456";
    assert_ne!(redact_patterns(s), s);
    assert_eq!(redact_text(s), redact_patterns(s));
    // A usual log line goes past the patterns untouched.
    let line = r#"INFO bb_launch::launcher: demo engine (offline fake BreadBoard) serving url="http://127.0.0.1:36745""#;
    assert!(!may_hold_secret(line));
    assert_eq!(redact_text(line), line);
}
