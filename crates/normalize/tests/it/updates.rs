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

/// A capture played `times` times over, each copy's engine ids made its own (so a copy is
/// a new turn of the same session, not a replay of the first).
fn repeated(engine: bb_normalize::Engine, path: &std::path::Path, times: usize) -> Vec<RawEvent> {
    let events = bb_test_support::captures::read(engine, path);
    let mut out = Vec::new();
    for k in 0..times {
        for e in &events {
            let data = ["msg_", "prt_", "evt_", "call_", "per_", "que_"]
                .iter()
                .fold(e.data.clone(), |d, p| d.replace(p, &format!("{p}k{k}_")));
            let id = e.id.as_ref().map(|id| format!("{id}-k{k}"));
            if let Ok(ev) = RawEvent::parse(engine, &data, id.as_deref()) {
                out.push(ev);
            }
        }
    }
    out
}

fn decoded(list: &[Box<serde_json::value::RawValue>]) -> Vec<WebviewUpdate<'static>> {
    list.iter().map(|j| serde_json::from_str(j.get()).expect("an update decodes")).collect()
}

/// A paged resync (the recent turns, the pending cards left out) followed by every older
/// page, each prepended as it arrives, rebuilds exactly the whole view's snapshot: on every
/// capture played three times over, for page sizes in turns and in bytes (down to a byte
/// budget smaller than one block, which pages block by block).
#[test]
fn recent_turns_then_older_pages_rebuild_the_view() {
    for (engine, path) in captures() {
        let name = path.display().to_string();
        let mut view = SessionView::new();
        for ev in repeated(engine, &path, 3) {
            view.apply_event(ev);
        }
        let expected = snapshot(&view);
        for (turns, bytes) in
            [(1, usize::MAX), (2, usize::MAX), (50, usize::MAX), (3, 2048), (1, 1)]
        {
            let mut out = Vec::new();
            let mut earlier = view.snapshot_recent_updates(&mut out, turns, bytes);
            let mut applied = UpdatedView::new();
            applied.apply_all(&decoded(&out));
            let mut pages = 0;
            while let Some(e) = earlier {
                let mut page = Vec::new();
                earlier = view.history_updates(&mut page, e.before, turns, bytes);
                assert!(!page.is_empty(), "{name}: a page before {} is empty", e.before);
                if let Some(next) = earlier {
                    assert!(next.before < e.before, "{name}: the cursor moves back");
                }
                applied.prepend(&decoded(&page));
                pages += 1;
                assert!(pages <= view.transcript_len(), "{name}: paging ends");
            }
            assert_eq!(applied, expected, "{name}: {turns} turns, {bytes} bytes a page");
        }
    }
}

/// The recent page is the last turns: with more turns than one, it leaves out the older
/// ones and says how many; the cursor is where they end.
#[test]
fn a_paged_resync_names_the_turns_it_left_out() {
    let (engine, path) = captures()
        .into_iter()
        .find(|(_, p)| p.ends_with("kilo/stream_text.sse"))
        .expect("the Kilo text capture");
    let mut view = SessionView::new();
    for ev in repeated(engine, &path, 10) {
        view.apply_event(ev);
    }
    let mut out = Vec::new();
    let earlier = view.snapshot_recent_updates(&mut out, 4, usize::MAX).expect("older turns");
    assert_eq!(earlier.turns, 6, "ten turns, four sent");
    let users = decoded(&out).iter().filter(|u| matches!(u, WebviewUpdate::UserMessage(_))).count();
    assert_eq!(users, 4);
    let mut all = Vec::new();
    assert_eq!(view.snapshot_recent_updates(&mut all, 10, usize::MAX), None, "all ten fit");
}
