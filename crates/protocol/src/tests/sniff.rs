//! `IdSniffer`: a table of messages the decoder cannot read an id from, and properties over
//! valid requests (any chunking, any trailing damage after the id).

use proptest::prelude::*;
use serde_json::json;

use crate::{IdSniffer, Limits, MAX_SNIFFED_ID_BYTES, RejectCode, decode_v1, sniff_request_id};

fn check(raw: &[u8], expected: Option<&str>) {
    assert_eq!(sniff_request_id(raw).as_deref(), expected, "{}", String::from_utf8_lossy(raw));
}

#[test]
fn reads_the_id_of_requests_the_decoder_refuses() {
    let deep = format!(
        r#"{{"v":1,"kind":"req","id":"deep","method":"bb.init","params":{{"x":{}{}}}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let mut bad_utf8 =
        br#"{"v":1,"kind":"req","id":"u","method":"bb.sendMessage","params":{"text":""#.to_vec();
    bad_utf8.extend_from_slice(&[0xff, 0xfe, b'"', b'}', b'}']);
    let after = format!(
        r#"{{"params":{{"text":"{}","id":"inner","kind":"res"}},"v":1,"id":"late","kind":"req"}}"#,
        "x".repeat(5000)
    );
    let cases: Vec<(&[u8], Option<&str>)> = vec![
        (deep.as_bytes(), Some("deep")),
        (&bad_utf8, Some("u")),
        (after.as_bytes(), Some("late")),
        (br#"{"v":1,"kind":"req","id":"cut","method":"bb.init","params":{"a":"#, Some("cut")),
        (br#"  {"kind" : "req" , "id" : "sp\"ace\u0041"}"#, Some("sp\"aceA")),
        (br#"{"kind":"req","id":"x","id":"y"}"#, Some("y")),
        (br#"{"kind":"req","id":7}"#, None),
        (br#"{"kind":"res","id":"r"}"#, None),
        (br#"{"id":"no-kind"}"#, None),
        (br#"{"kind":"req","i"#, None),
        (br#"{"kind":"req","id":"open"#, None),
        (br#"[{"kind":"req","id":"arr"}]"#, None),
        (b"not json at all", None),
        (b"", None),
        (br#"{"kind":"req","identity":"no","id":"yes"}"#, Some("yes")),
        (br#"{"kind":"req","id":"\ud800"}"#, None),
        (br#"{"\u006b\u0069\u006e\u0064":"r\u0065q","\u0069d":"esc"}"#, Some("esc")),
        (br#"{"kind":"req","id":"tab\there"}"#, Some("tab\there")),
    ];
    for (raw, expected) in cases {
        check(raw, expected);
    }
}

#[test]
fn an_over_long_id_is_not_read() {
    let long = "i".repeat(MAX_SNIFFED_ID_BYTES + 1);
    let raw = json!({"kind": "req", "id": long}).to_string();
    check(raw.as_bytes(), None);
    let fits = "i".repeat(MAX_SNIFFED_ID_BYTES);
    let raw = json!({"kind": "req", "id": fits}).to_string();
    check(raw.as_bytes(), Some(&fits));
}

#[test]
fn the_limit_rejections_say_which_limit_and_what_to_do() {
    let limits = Limits { max_bytes: 64, max_depth: 3 };
    let big =
        format!(r#"{{"v":1,"kind":"req","id":"b","method":"bb.init","pad":"{}"}}"#, "x".repeat(64));
    let r = decode_v1(big.as_bytes(), &limits).unwrap_err();
    assert_eq!(r.code, RejectCode::PayloadTooLarge);
    assert!(r.detail.contains("maxBytes limit of 64") && r.detail.contains("smaller"), "{r}");
    let deep = r#"{"v":1,"kind":"req","id":"d","params":{"a":[[1]]}}"#;
    let r = decode_v1(deep.as_bytes(), &limits).unwrap_err();
    assert_eq!(r.code, RejectCode::InvalidJson);
    assert!(limits.depth_exceeded(deep.as_bytes()));
    assert!(r.detail.contains("maxDepth"), "{r}");
    let answered = r.answering(sniff_request_id(deep.as_bytes()));
    assert_eq!(answered.v1_response().unwrap().id, "d");
}

proptest! {
    /// Whatever the chunking, a valid request's id is read, also when everything after the
    /// id is cut off or damaged.
    #[test]
    fn any_chunking_reads_the_id(
        id in "[ -~é\u{1F600}]{0,40}",
        text in "[ -~\n\"\\\\{}\\[\\]]{0,200}",
        cuts in proptest::collection::vec(0usize..400, 0..6),
        damage in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..20)),
    ) {
        let head = format!(r#"{{"v":1,"kind":"req","id":{}"#, serde_json::to_string(&id).unwrap());
        let mut raw = head.clone().into_bytes();
        let tail = format!(r#","method":"bb.sendMessage","params":{{"sessionId":"s","text":{}}}}}"#, serde_json::to_string(&text).unwrap());
        match &damage {
            Some(bytes) => raw.extend_from_slice(bytes),
            None => raw.extend_from_slice(tail.as_bytes()),
        }
        let mut sniffer = IdSniffer::new();
        let mut at = 0;
        let mut cuts = cuts;
        cuts.sort_unstable();
        for cut in cuts {
            let cut = cut.min(raw.len()).max(at);
            sniffer.push(&raw[at..cut]);
            at = cut;
        }
        sniffer.push(&raw[at..]);
        prop_assert_eq!(sniffer.request_id(), Some(id.clone()));
        if damage.is_none() {
            prop_assert_eq!(sniff_request_id(&raw), Some(id));
        }
    }
}

/// The decode fuzz corpus: on every v1 request the decoder accepts, the sniffer reads the
/// same id, whole or split anywhere.
#[test]
fn the_sniffer_agrees_with_the_decoder_on_the_fuzz_corpus() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/decode");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        let Some((_, raw)) = data.split_first() else { continue };
        let Ok(crate::V1Message::Request(req)) = decode_v1(raw, &Limits::default()) else {
            continue;
        };
        for split in [0, raw.len() / 2, raw.len()] {
            let mut sniffer = IdSniffer::new();
            sniffer.push(&raw[..split]);
            sniffer.push(&raw[split..]);
            assert_eq!(sniffer.request_id().as_deref(), Some(req.id.as_str()));
        }
        checked += 1;
    }
    assert!(checked > 0, "the corpus holds v1 requests");
}
