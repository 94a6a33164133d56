//! Preview truncation: limits, head and tail kept, marker, body references.

use proptest::prelude::*;

use crate::truncate::{BodyStore, Limits, PREVIEW_MAX_BYTES, PREVIEW_MAX_LINES, truncate};

#[test]
fn small_bodies_are_untouched() {
    let p = truncate("a\nb\n", Limits::default(), None);
    assert!(!p.truncated);
    assert_eq!((p.text.as_str(), p.total_lines, p.total_bytes), ("a\nb\n", 2, 4));
}

#[test]
fn many_lines_keep_head_and_tail() {
    let body: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
    let mut store = BodyStore::default();
    let p = store.preview(&body, Limits::default());
    assert!(p.truncated);
    assert!(p.text.lines().count() <= PREVIEW_MAX_LINES);
    assert!(p.text.starts_with("line 1\nline 2\n"));
    assert!(p.text.ends_with("line 999\nline 1000\n"));
    let r = p.body_ref.clone().unwrap();
    assert!(p.text.contains(&format!("full body: {r}")));
    assert!(p.text.contains("lines"));
    assert_eq!(store.get(&r), Some(body.as_str()));
}

#[test]
fn one_huge_line_is_cut_by_bytes() {
    let body = "é".repeat(10_000);
    let p = truncate(&body, Limits::default(), Some("body-1"));
    assert!(p.truncated && p.text.len() <= PREVIEW_MAX_BYTES);
    assert!(p.text.starts_with('é') && p.text.ends_with('é'));
    assert_eq!(p.total_bytes, 20_000);
}

#[test]
fn store_evicts_oldest_beyond_budget() {
    let mut store = BodyStore::with_budget(30_000);
    let big = "x\n".repeat(10_000);
    let a = store.preview(&big, Limits::default()).body_ref.unwrap();
    let b = store.preview(&big, Limits::default()).body_ref.unwrap();
    assert_ne!(a, b);
    assert_eq!(store.get(&a), None);
    assert_eq!(store.get(&b), Some(big.as_str()));
    assert_eq!(store.evicted(), 1);
}

proptest! {
    #[test]
    fn previews_respect_limits(body in "(\\PC{0,30}\\n?){0,400}", max_lines in 3usize..300, max_bytes in 200usize..10_000) {
        let limits = Limits { max_bytes, max_lines };
        let p = truncate(&body, limits, Some("body-42"));
        if p.truncated {
            prop_assert!(p.text.len() <= max_bytes, "{} > {}", p.text.len(), max_bytes);
            prop_assert!(p.text.lines().count() <= max_lines);
        } else {
            prop_assert_eq!(&p.text, &body);
        }
        prop_assert_eq!(p.total_bytes, body.len());
    }
}
