//! The updates the reducers produce rebuild their view: on every capture, a webview that
//! applies the updates taken after each event, or after all of them, or a resync snapshot
//! part-way followed by the updates after it, or every update twice, holds what the final
//! view's snapshot holds; and so for any split of a stream into batches.

use bb_normalize::{RawEvent, SessionView};
use bb_protocol::v1::{UpdatedView, WebviewUpdate};
use proptest::prelude::*;

use crate::captures::{captures, read};

/// The updates `view` has ready, decoded.
fn take(view: &mut SessionView) -> Vec<WebviewUpdate<'static>> {
    let mut out = Vec::new();
    view.take_updates(&mut out);
    out.iter().map(|j| serde_json::from_str(j.get()).expect("an update decodes")).collect()
}

/// The updates that rebuild `view`, applied to an empty webview view.
fn snapshot(view: &SessionView) -> UpdatedView {
    let mut out = Vec::new();
    view.snapshot_updates(&mut out);
    let mut applied = UpdatedView::new();
    for j in &out {
        let u: WebviewUpdate<'static> = serde_json::from_str(j.get()).expect("an update decodes");
        applied.apply(&u);
    }
    applied
}

/// The events reduced in batches cut at `cuts` (sorted indexes), updates taken after each
/// batch and applied (twice each when `twice`); the reduced view too.
fn in_batches(events: &[RawEvent], cuts: &[usize], twice: bool) -> (SessionView, UpdatedView) {
    let mut view = SessionView::new();
    let mut applied = UpdatedView::new();
    let mut start = 0;
    for &end in cuts.iter().chain(std::iter::once(&events.len())) {
        let end = end.clamp(start, events.len());
        for ev in &events[start..end] {
            view.apply_event(ev.clone());
        }
        for u in take(&mut view) {
            applied.apply(&u);
            if twice {
                applied.apply(&u);
            }
        }
        start = end;
    }
    (view, applied)
}

#[test]
fn updates_rebuild_the_view_on_every_capture() {
    let all = captures();
    assert!(all.len() >= 40, "captures missing: {}", all.len());
    for (engine, path) in all {
        let events = read(engine, &path);
        let name = path.display();
        let every: Vec<usize> = (1..events.len()).collect();
        let (view, one_by_one) = in_batches(&events, &every, false);
        let expected = snapshot(&view);
        assert_eq!(expected.missed, 0, "{name}");
        assert_eq!(one_by_one, expected, "{name}: event by event");
        let (_, at_once) = in_batches(&events, &[], false);
        assert_eq!(at_once, expected, "{name}: all at once");
        let (_, doubled) = in_batches(&events, &every, true);
        assert_eq!(doubled, expected, "{name}: every update twice");

        // A resync part-way: the snapshot then, then the updates taken after it.
        let mid = events.len() / 2;
        let mut view = SessionView::new();
        for ev in &events[..mid] {
            view.apply_event(ev.clone());
        }
        let _ = take(&mut view);
        let mut resynced = snapshot(&view);
        for ev in &events[mid..] {
            view.apply_event(ev.clone());
            for u in take(&mut view) {
                resynced.apply(&u);
            }
        }
        assert_eq!(resynced, expected, "{name}: resync part-way");
        // Updates never taken until the end (nobody asked) still rebuild everything.
        let mut late = SessionView::new();
        for ev in &events {
            late.apply_event(ev.clone());
        }
        let mut applied = UpdatedView::new();
        for u in take(&mut late) {
            applied.apply(&u);
        }
        assert_eq!(applied, expected, "{name}: taken once at the end");
    }
}

#[test]
fn every_update_fits_a_message() {
    for (engine, path) in captures() {
        let mut view = SessionView::new();
        let mut out = Vec::new();
        for ev in read(engine, &path) {
            view.apply_event(ev);
            view.take_updates(&mut out);
        }
        view.snapshot_updates(&mut out);
        for j in &out {
            assert!(j.get().len() < 256 * 1024, "{}: {} bytes", path.display(), j.get().len());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_split_into_batches_gives_the_same_end_state(
        which in 0usize..64,
        cuts in proptest::collection::vec(0usize..400, 0..24),
        twice in any::<bool>(),
    ) {
        let all = captures();
        let (engine, path) = &all[which % all.len()];
        let events = read(*engine, path);
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (events.len() + 1)).collect();
        cuts.sort_unstable();
        let (view, applied) = in_batches(&events, &cuts, twice);
        prop_assert_eq!(applied, snapshot(&view), "{}", path.display());
    }
}
