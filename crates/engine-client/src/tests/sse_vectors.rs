//! The SSE parser against `fixtures/sse/*.json`, as given, byte by byte, and re-chunked.

use std::path::PathBuf;

use proptest::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::sse::{SseError, SseItem, SseLimits, SseParser};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Case {
    name: String,
    #[serde(default)]
    chunks: Option<Vec<String>>,
    #[serde(default)]
    chunks_hex: Option<Vec<String>>,
    #[serde(default)]
    limits: Option<Limits>,
    expect: Vec<Value>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Limits {
    max_line_bytes: usize,
    max_event_bytes: usize,
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

impl Case {
    fn chunks(&self) -> Vec<Vec<u8>> {
        match (&self.chunks, &self.chunks_hex) {
            (Some(text), None) => text.iter().map(|c| c.as_bytes().to_vec()).collect(),
            (None, Some(h)) => h.iter().map(|c| hex(c)).collect(),
            _ => panic!("{}: exactly one of chunks / chunksHex", self.name),
        }
    }

    fn limits(&self) -> SseLimits {
        self.limits.as_ref().map_or_else(SseLimits::default, |l| SseLimits {
            max_line_bytes: l.max_line_bytes,
            max_event_bytes: l.max_event_bytes,
        })
    }
}

pub(crate) fn item_json(item: &SseItem) -> Value {
    match item {
        SseItem::Event(e) => {
            json!({"type": e.event_type, "data": e.data, "lastEventId": e.last_event_id})
        }
        SseItem::Retry(ms) => json!({ "retry": ms }),
        SseItem::Comment(c) => json!({ "comment": c }),
    }
}

fn error_name(err: &SseError) -> &'static str {
    match err {
        SseError::LineTooLong { .. } => "line_too_long",
        SseError::EventTooLarge { .. } => "event_too_large",
    }
}

/// Feeds `chunks` in order; returns the items and the first error.
fn run<'a>(
    limits: SseLimits,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> (Vec<Value>, Option<String>) {
    let mut parser = SseParser::new(limits);
    let mut out = Vec::new();
    for chunk in chunks {
        if let Err(err) = parser.feed(chunk, &mut out) {
            return (out.iter().map(item_json).collect(), Some(error_name(&err).to_owned()));
        }
    }
    (out.iter().map(item_json).collect(), None)
}

fn cases() -> Vec<Case> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/sse");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no vectors in {}", dir.display());
    files
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            serde_json::from_str::<Vec<Case>>(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", f.display()))
        })
        .collect()
}

#[test]
fn vectors_as_chunked() {
    let cases = cases();
    assert!(cases.len() > 40, "only {} vectors", cases.len());
    for case in cases {
        let chunks = case.chunks();
        let got = run(case.limits(), chunks.iter().map(Vec::as_slice));
        assert_eq!(got, (case.expect.clone(), case.error.clone()), "{}", case.name);
    }
}

#[test]
fn vectors_byte_by_byte_and_whole() {
    for case in cases() {
        let all: Vec<u8> = case.chunks().concat();
        let expected = (case.expect.clone(), case.error.clone());
        let bytes = run(case.limits(), all.chunks(1));
        assert_eq!(bytes, expected, "{} (byte by byte)", case.name);
        let empties = run(case.limits(), all.chunks(1).flat_map(|c| [c, &[][..]]));
        assert_eq!(empties, expected, "{} (byte by byte, empty reads between)", case.name);
        let whole = run(case.limits(), [all.as_slice()]);
        assert_eq!(whole, expected, "{} (one chunk)", case.name);
    }
}

#[test]
fn failure_is_sticky_until_reset() {
    let limits = SseLimits { max_line_bytes: 4, max_event_bytes: 64 };
    let mut parser = SseParser::new(limits);
    let err = parser.feed_collect(b"data: toolong\n").unwrap_err();
    assert_eq!(err, SseError::LineTooLong { limit: 4 });
    assert_eq!(parser.feed_collect(b"\n"), Err(err));
    parser.reset_stream();
    assert_eq!(parser.feed_collect(b"id\n\n").unwrap(), vec![]);
}

#[test]
fn reset_stream_discards_partial_event_and_keeps_last_id() {
    let mut parser = SseParser::default();
    let items = parser.feed_collect(b"id: 5\ndata: a\n\nid: 6\ndata: partial\n").unwrap();
    assert_eq!(items.len(), 1);
    parser.reset_stream();
    assert_eq!(parser.last_event_id(), "5");
    let items = parser.feed_collect(b"\xEF\xBB\xBFdata: b\n\n").unwrap();
    assert_eq!(
        items.iter().map(item_json).collect::<Vec<_>>(),
        vec![json!({"type": "message", "data": "b", "lastEventId": "5"})]
    );
}

/// An `id` line's value as the event carries it: ASCII (copied a byte at a time), past ASCII
/// (decoded, invalid bytes replaced), empty, or holding a NUL (ignored: an id set earlier in
/// the event stays, and so does the last one when none was).
#[test]
fn id_lines_set_the_last_event_id() {
    let cases: [(&[u8], &str); 8] = [
        (b"id: 12\ndata: x\n\n", "12"),
        (b"id:9f0c-4e\ndata: x\n\n", "9f0c-4e"),
        ("id: caf\u{e9} \u{20ac}\ndata: x\n\n".as_bytes(), "caf\u{e9} \u{20ac}"),
        (b"id: a\xFFb\ndata: x\n\n", "a\u{fffd}b"),
        (b"id: 7\nid: 8\x00\ndata: x\n\n", "7"),
        (b"id: \x00\ndata: x\n\n", "3"),
        (b"id\ndata: x\n\n", ""),
        (b"id: \x7f~ !\ndata: x\n\n", "\x7f~ !"),
    ];
    for (stream, id) in cases {
        let mut parser = SseParser::default();
        parser.set_last_event_id("3");
        let items = parser.feed_collect(stream).unwrap();
        let text = String::from_utf8_lossy(stream);
        assert_eq!(
            items.iter().map(item_json).collect::<Vec<_>>(),
            vec![json!({"type": "message", "data": "x", "lastEventId": id})],
            "{text:?}"
        );
        assert_eq!(parser.last_event_id(), id, "{text:?}");
    }
}

#[test]
fn set_last_event_id_applies_to_next_event() {
    let mut parser = SseParser::default();
    parser.set_last_event_id("42");
    let items = parser.feed_collect(b"data: x\n\n").unwrap();
    assert_eq!(
        items.iter().map(item_json).collect::<Vec<_>>(),
        vec![json!({"type": "message", "data": "x", "lastEventId": "42"})]
    );
}

/// Streams built from the pieces that matter to the grammar.
fn stream_strategy() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"data: ".to_vec()),
        Just(b"data".to_vec()),
        Just(b"event: e".to_vec()),
        Just(b"id: 1".to_vec()),
        Just(b"id: \x002".to_vec()),
        Just(b"retry: 100".to_vec()),
        Just(b": c".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\xEF\xBB\xBF".to_vec()),
        Just("\u{20ac}".as_bytes().to_vec()),
        Just(b"\xFF".to_vec()),
        Just(b" ".to_vec()),
        Just(b":".to_vec()),
        "[a-z]{0,5}".prop_map(String::into_bytes),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn any_rechunking_yields_the_same_items(
        stream in stream_strategy(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
        max_line in 4usize..64,
    ) {
        let limits = SseLimits { max_line_bytes: max_line, max_event_bytes: 48 };
        let whole = run(limits, [stream.as_slice()]);
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(stream.len() + 1)).collect();
        points.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for p in points {
            chunks.push(&stream[start..p]);
            start = p;
        }
        chunks.push(&stream[start..]);
        let with_empties: Vec<&[u8]> = chunks.iter().flat_map(|c| [*c, &[][..]]).collect();
        prop_assert_eq!(run(limits, with_empties), whole.clone());
        prop_assert_eq!(run(limits, chunks), whole.clone());
        prop_assert_eq!(run(limits, stream.chunks(1)), whole);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8),
    ) {
        let limits = SseLimits { max_line_bytes: 32, max_event_bytes: 64 };
        let _ = run(limits, chunks.iter().map(Vec::as_slice));
    }
}

/// A line's end is found wherever it falls in the first sixteen bytes (read as two words),
/// past them (`memchr2`), and after bytes that differ from CR or LF in one bit or are the
/// continuation bytes `0x8a` / `0x8d` (`Ċ`, `č`): every length of line, every terminator.
#[test]
fn a_line_ends_at_its_first_cr_or_lf_wherever_it_falls() {
    for len in 0..40 {
        for filler in ["x", "\u{b}", "\u{c}", "\u{e}", "Ċ", "č", "\u{8a}"] {
            let value: String = filler.repeat(len).chars().take(len).collect();
            for end in ["\n", "\r", "\r\n"] {
                let wire = format!("data:{value}{end}data:b\n\n");
                let events = SseParser::default().feed_collect(wire.as_bytes()).unwrap();
                let SseItem::Event(event) = &events[0] else { panic!("{events:?}") };
                assert_eq!(event.data, format!("{value}\nb"), "{len} {filler:?} {end:?}");
            }
        }
    }
}
