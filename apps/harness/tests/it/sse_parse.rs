//! `bb-harness sse-parse` against every vector in `fixtures/sse/` (comments are not printed).

use serde::Deserialize;
use serde_json::Value;

use crate::run::{fixtures, harness};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Case {
    name: String,
    #[serde(default)]
    chunks: Option<Vec<String>>,
    #[serde(default)]
    chunks_hex: Option<Vec<String>>,
    #[serde(default)]
    limits: Option<Value>,
    expect: Vec<Value>,
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn sse_parse(stdin: &[u8]) -> (bool, Vec<Value>) {
    let (ok, stdout) = harness(&["sse-parse"], stdin);
    (ok, stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect())
}

#[test]
fn sse_parse_matches_every_vector() {
    let dir = fixtures().join("sse");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let cases: Vec<Case> = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // Cases with custom limits test the library's knobs; the binary uses the defaults.
        for case in cases.into_iter().filter(|c| c.limits.is_none()) {
            let stream: Vec<u8> = match (&case.chunks, &case.chunks_hex) {
                (Some(c), None) => c.concat().into_bytes(),
                (None, Some(h)) => h.iter().flat_map(|c| hex(c)).collect(),
                _ => panic!("{}: exactly one of chunks / chunksHex", case.name),
            };
            let expected: Vec<Value> =
                case.expect.into_iter().filter(|v| v.get("comment").is_none()).collect();
            let (ok, got) = sse_parse(&stream);
            assert!(ok, "{}: exit status", case.name);
            assert_eq!(got, expected, "{}", case.name);
            checked += 1;
        }
    }
    assert!(checked > 30, "only {checked} vectors checked");
}

#[test]
fn sse_parse_prints_key_order_and_fails_over_limit() {
    let (ok, got) = sse_parse(b"id: 3\nevent: e\ndata: d\n\n");
    assert!(ok);
    assert_eq!(
        serde_json::to_string(&got[0]).unwrap(),
        r#"{"type":"e","data":"d","lastEventId":"3"}"#
    );
    let mut huge = b"data: ok\n\ndata: ".to_vec();
    huge.extend(std::iter::repeat_n(b'x', 17 * 1024 * 1024));
    let (ok, got) = sse_parse(&huge);
    assert!(!ok, "over the line (= event) limit must fail");
    assert_eq!(got.len(), 1);
}
