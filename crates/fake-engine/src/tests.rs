//! Unit tests: script parsing, the resume rules of the ring, ASCII escaping, snippets and
//! path containment.

use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;

use crate::{
    Ring, Script, StoredEvent, WindowExceeded, ascii_escape, contain, is_known_type, iso_utc,
    snippet, uuid4,
};

fn event(seq: u64) -> Arc<StoredEvent> {
    Arc::new(StoredEvent {
        seq: Some(seq),
        id: format!("uuid-{seq}"),
        kind: "warning".into(),
        json: String::new(),
    })
}

fn ring_of(capacity: usize, count: u64) -> Ring {
    let mut ring = Ring::new(capacity);
    for seq in 1..=count {
        ring.push(event(seq));
    }
    ring
}

fn seqs(events: &[Arc<StoredEvent>]) -> Vec<u64> {
    events.iter().filter_map(|e| e.seq).collect()
}

#[test]
fn resume_rules_match_the_captured_engine() {
    let ring = ring_of(1000, 9);
    let check = |token: Option<&str>, replay: bool, limit: Option<usize>| {
        ring.select(token, replay, limit).map(|e| seqs(&e))
    };
    assert_eq!(check(None, true, None), Ok((1..=9).collect()));
    assert_eq!(check(Some("4"), false, None), Ok(vec![5, 6, 7, 8, 9]));
    assert_eq!(check(Some("uuid-4"), false, None), Ok(vec![5, 6, 7, 8, 9]));
    assert_eq!(check(Some("9"), false, None), Ok(vec![]));
    assert_eq!(check(Some("0"), false, None), Err(WindowExceeded));
    assert_eq!(check(Some("99999"), false, None), Err(WindowExceeded));
    assert_eq!(check(Some("not-an-id"), false, None), Err(WindowExceeded));
    assert_eq!(check(None, false, None), Ok(vec![]));
    assert_eq!(check(None, true, Some(3)), Ok(vec![7, 8, 9]));
    assert_eq!(check(Some("4"), false, Some(2)), Ok(vec![8, 9]));
    assert_eq!(check(Some("6"), true, None), Ok(vec![7, 8, 9]));
}

#[test]
fn evicted_ids_and_first_seq_minus_one_give_409() {
    let ring = ring_of(1000, 1104);
    assert_eq!(ring.select(Some("104"), false, None), Err(WindowExceeded));
    assert_eq!(ring.select(Some("105"), false, None).map(|e| e.len()), Ok(999));
}

#[test]
fn every_upstream_replay_fixture_parses_with_known_types() {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine/breadboard/replays");
    let mut count = 0;
    for dir in std::fs::read_dir(&root).unwrap() {
        let path = dir.unwrap().path().join("source.jsonl");
        let script = Script::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert!(!script.lines.is_empty(), "{}", path.display());
        for line in &script.lines {
            assert!(is_known_type(&line.kind), "{}: {}", path.display(), line.kind);
        }
        count += 1;
    }
    assert_eq!(count, 10);
}

#[test]
fn script_reports_the_bad_line() {
    let err = Script::parse("# c\n\n{\"type\":\"warning\"}\nnot json\n").unwrap_err();
    assert!(err.to_string().starts_with("script line 4:"), "{err}");
}

#[test]
fn ascii_escape_matches_python_ensure_ascii() {
    assert_eq!(ascii_escape(r#"{"t":"a…b"}"#), r#"{"t":"a\u2026b"}"#);
    assert_eq!(ascii_escape(r#"{"t":"😀"}"#), r#"{"t":"\ud83d\ude00"}"#);
    let text = "{\"t\":\"h\u{e9}\u{1f600}\"}";
    let back: serde_json::Value = serde_json::from_str(&ascii_escape(text)).unwrap();
    assert_eq!(back["t"], "h\u{e9}\u{1f600}");
}

#[test]
fn snippet_matches_the_captured_engine() {
    let mut text =
        String::from("fn main() {\n    println!(\"line 1\");\n    println!(\"line 2\");\n");
    for i in 3..300 {
        text.push_str(&format!("    println!(\"line {i}\");\n"));
    }
    text.push_str("\n}\n");
    let (content, truncated) = snippet(&text, true, Some(3), Some(2), Some(200));
    assert!(truncated);
    assert_eq!(
        content,
        "fn main() {\n    println!(\"line 1\");\n    println!(\"line 2\");\n\n\u{2026} (truncated) \u{2026}\n\n}\n"
    );
    assert_eq!(snippet("a\nb\n", true, None, None, None), ("a\nb\n".to_owned(), false));
    assert_eq!(snippet("a\nb\nc\n", false, None, Some(2), None), ("c\n".to_owned(), true));
    assert_eq!(snippet("abcdef", false, None, None, Some(3)), ("def".to_owned(), true));
}

/// `(snippet mode, head_lines, tail_lines, max_bytes)` of a `files/content` request.
type Query = (bool, Option<usize>, Option<usize>, Option<usize>);

/// README §11.1: `files/content` on a 1000-line, 3893-byte file (`1\n2\n…\n1000\n`), every
/// row as the real engine answered it.
#[test]
fn snippet_and_cat_follow_the_real_engine_table() {
    let text: String = (1..=1000).map(|i| format!("{i}\n")).collect();
    assert_eq!(text.len(), 3893);
    let whole = (text.clone(), false);
    let cut = |s: &str| (s.to_owned(), true);
    let rows: [(Query, (String, bool)); 8] = [
        ((true, None, None, None), whole.clone()),
        ((true, Some(3), Some(2), None), whole.clone()),
        ((true, None, None, Some(10)), cut("1\n2\n3\n\n\u{2026} (truncated) \u{2026}\n\n1000\n")),
        (
            (true, Some(2), Some(2), Some(100)),
            cut("1\n2\n\n\u{2026} (truncated) \u{2026}\n\n1000\n"),
        ),
        ((false, None, None, None), whole.clone()),
        ((false, Some(2), None, None), whole.clone()),
        ((false, None, Some(2), None), cut("1000\n")),
        ((false, None, None, Some(5)), cut("1000\n")),
    ];
    for ((mode_snippet, head, tail, max), expected) in rows {
        let got = snippet(&text, mode_snippet, head, tail, max);
        assert_eq!(got, expected, "snippet={mode_snippet} head={head:?} tail={tail:?} max={max:?}");
    }
    assert_eq!(snippet(&text, true, None, None, Some(10)).0.chars().count(), 29);
}

#[test]
fn snippet_line_counts_from_the_query_never_overflow() {
    // `head_lines` and `tail_lines` come straight from the request's query string.
    let text = "a\nb\nc\n";
    assert_eq!(snippet(text, true, Some(usize::MAX), Some(1), None), (text.to_owned(), false));
    assert_eq!(snippet(text, true, Some(1), Some(usize::MAX), None), (text.to_owned(), false));
}

#[test]
fn contain_keeps_paths_inside() {
    let ws = Path::new("/ws");
    assert_eq!(contain(ws, "src/a.rs"), Some(ws.join("src/a.rs")));
    assert_eq!(contain(ws, "src/../b"), Some(ws.join("b")));
    assert_eq!(contain(ws, "../"), None);
    assert_eq!(contain(ws, "../../etc/passwd"), None);
    assert_eq!(contain(ws, "/etc"), None);
}

#[test]
fn uuid_and_time_formats() {
    let id = uuid4();
    assert_eq!(id.len(), 36);
    assert_eq!(&id[14..15], "4");
    assert_eq!(
        iso_utc(std::time::Duration::from_micros(1_795_306_474_362_453)),
        "2026-11-22T00:14:34.362453Z"
    );
}

proptest! {
    #[test]
    fn resume_after_any_held_seq_yields_the_rest_in_order(capacity in 1usize..50, count in 0u64..120, pick in 0u64..200) {
        let ring = ring_of(capacity, count);
        let first = count.saturating_sub(capacity as u64) + 1;
        let token = pick.to_string();
        match ring.select(Some(&token), false, None) {
            Ok(events) => {
                prop_assert!(pick >= first && pick <= count);
                prop_assert_eq!(seqs(&events), ((pick + 1)..=count).collect::<Vec<_>>());
            }
            Err(WindowExceeded) => prop_assert!(pick < first || pick > count),
        }
    }
}
