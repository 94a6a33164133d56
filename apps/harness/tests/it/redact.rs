//! `bb-harness redact` over the redaction vectors in `fixtures/normalize/redact.jsonl`.

use serde_json::Value;

use crate::run::{fixtures, harness};

#[test]
fn redact_matches_every_vector() {
    let text = std::fs::read_to_string(fixtures().join("normalize/redact.jsonl")).unwrap();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let case: Value = serde_json::from_str(line).unwrap();
        let name = case["name"].as_str().unwrap();
        match &case["input"] {
            Value::String(s) => {
                let (ok, out) = harness(&["redact"], s.as_bytes());
                assert!(ok, "{name}");
                assert_eq!(out, case["expect"].as_str().unwrap(), "{name}");
            }
            json => {
                let (ok, out) = harness(&["redact"], json.to_string().as_bytes());
                assert!(ok, "{name}");
                let got: Value =
                    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{name}: not JSON: {e}"));
                assert_eq!(got, case["expect"], "{name}");
            }
        }
    }
}

#[test]
fn redact_is_idempotent_through_the_driver() {
    let input = "Authorization: Bearer abcdef123456\n{\"a\":1} password=x";
    let (_, once) = harness(&["redact"], input.as_bytes());
    let (_, twice) = harness(&["redact"], once.as_bytes());
    assert_eq!(once, twice);
    assert!(!once.contains("abcdef123456"));
}

#[test]
fn log_line_form_is_one_capped_line() {
    let input = format!("Authorization: Bearer abcdef123456\nnext line\n{}", "y".repeat(20_000));
    let (ok, out) = harness(&["redact", "--log-line"], input.as_bytes());
    assert!(ok);
    let line = out.strip_suffix('\n').unwrap();
    assert!(!line.contains('\n') && line.len() <= 8 * 1024);
    assert!(!line.contains("abcdef123456"));
}
