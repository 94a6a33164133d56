//! Black-box tests of the `bb-harness` binary: `check-envelope` over the envelope fixture
//! tables and over awkward streams (CRLF, no final newline, overlong and non-UTF-8 lines).

use std::collections::BTreeMap;
use std::fs;

use serde_json::Value;

use crate::run::{fixtures, output};

/// Runs `bb-harness check-envelope` with `args`, feeding `stdin`; returns stdout lines.
fn check_envelope(args: &[&str], stdin: &[u8]) -> Vec<String> {
    let args: Vec<&str> = ["check-envelope"].iter().chain(args).copied().collect();
    let output = output(&args, stdin);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().lines().map(str::to_owned).collect()
}

fn raw_of(case: &Value) -> Vec<u8> {
    match (case.get("input"), case.get("input_bytes")) {
        (Some(Value::String(s)), _) => s.clone().into_bytes(),
        (Some(v), _) => serde_json::to_vec(v).unwrap(),
        (None, Some(Value::Array(b))) => {
            b.iter().map(|b| u8::try_from(b.as_u64().unwrap()).unwrap()).collect()
        }
        _ => panic!("case without input: {case}"),
    }
}

#[test]
fn fixture_tables_through_the_binary() {
    let dir = fixtures().join("protocol");
    // (transport, max_bytes) → cases, each run of the binary gets one group as a stream.
    let mut groups: BTreeMap<(String, Option<u64>), Vec<Value>> = BTreeMap::new();
    let mut paths: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    for path in paths.iter().filter(|p| p.extension().is_some_and(|e| e == "jsonl")) {
        for line in fs::read_to_string(path).unwrap().lines() {
            let case: Value = serde_json::from_str(line).unwrap();
            let key = (
                case["transport"].as_str().unwrap().to_owned(),
                case.get("max_bytes").and_then(Value::as_u64),
            );
            groups.entry(key).or_default().push(case);
        }
    }
    let mut total = 0;
    for ((transport, max_bytes), cases) in &groups {
        let mut args = vec!["--transport", transport.as_str()];
        let max = max_bytes.map(|m| m.to_string());
        if let Some(max) = &max {
            args.extend(["--max-bytes", max.as_str()]);
        }
        let mut stdin = Vec::new();
        for case in cases {
            stdin.extend(raw_of(case));
            stdin.push(b'\n');
        }
        let out = check_envelope(&args, &stdin);
        assert_eq!(out.len(), cases.len(), "one verdict per line ({transport}, {max_bytes:?})");
        for (case, line) in cases.iter().zip(&out) {
            let got: Value = serde_json::from_str(line).unwrap();
            assert_eq!(got, case["expect"], "{}", case["name"]);
        }
        total += cases.len();
    }
    assert!(total >= 80);
}

#[test]
fn every_line_gets_exactly_one_verdict() {
    let ok = br#"{"type":"request","id":"1","method":"shell.openPath","params":{"path":"/a"}}"#;
    let mut stdin = Vec::new();
    stdin.extend_from_slice(ok);
    stdin.extend_from_slice(b"\r\n"); // CRLF
    stdin.extend_from_slice(b"\n"); // empty line
    stdin.extend_from_slice(&[0xff, 0xfe, b'\n']); // not UTF-8
    stdin.extend(std::iter::repeat_n(b'x', 5000)); // longer than the limit
    stdin.push(b'\n');
    stdin.extend_from_slice(b"   \n"); // whitespace only
    stdin.extend_from_slice(ok); // last line, no newline
    let out = check_envelope(&["--transport", "ws", "--max-bytes", "100"], &stdin);
    let request = r#"{"verdict":"request","method":"shell.openPath"}"#;
    let invalid_json = r#"{"verdict":"rejected","code":"invalid_json"}"#;
    let too_large = r#"{"verdict":"rejected","code":"payload_too_large"}"#;
    assert_eq!(out, [request, invalid_json, invalid_json, too_large, invalid_json, request]);
}

#[test]
fn empty_input_prints_nothing() {
    assert!(check_envelope(&["--transport", "v1"], b"").is_empty());
}

#[test]
fn response_and_event_verdicts_name_the_id_and_topic() {
    let stdin = concat!(
        r#"{"v":1,"kind":"res","id":"abc","ok":true,"result":null}"#,
        "\n",
        r#"{"v":1,"kind":"evt","topic":"bb/connection","payload":{"status":"connected"}}"#,
        "\n",
    );
    let out = check_envelope(&["--transport", "v1"], stdin.as_bytes());
    assert_eq!(
        out,
        [r#"{"verdict":"response","id":"abc"}"#, r#"{"verdict":"event","topic":"bb/connection"}"#]
    );
}
