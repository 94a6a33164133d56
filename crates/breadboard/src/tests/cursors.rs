//! The BreadBoard resume positions: they move only past events the runtime confirmed as
//! written to a webview (once it confirms any), never past what was handed over, never back;
//! changes reach the file soon (at most one save per interval) and in full at exit.

use std::sync::Arc;
use std::time::Duration;

use crate::client::CursorStore;

use crate::cursors::Cursors;
use bb_service::SystemClock;

fn saved(dir: &std::path::Path, session: &str) -> Option<u64> {
    CursorStore::open(dir, Duration::ZERO).ok()?.get(session)
}

/// The writer thread saves a change soon (no timed assertion: the bound only ends a wait
/// that would otherwise hang, at 2000 polls).
fn eventually_saved(dir: &std::path::Path, session: &str, want: Option<u64>) {
    for _ in 0..2000 {
        if saved(dir, session) == want {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("{session} never saved as {want:?}");
}

#[test]
fn without_confirmations_a_handed_event_counts() {
    let dir = tempfile::tempdir().unwrap();
    let cursors = Cursors::open(dir.path(), Arc::new(SystemClock));
    cursors.handed(&mut None, "s", 3);
    assert_eq!(cursors.get("s"), Some(3));
    eventually_saved(dir.path(), "s", Some(3));
    cursors.close();
}

#[test]
fn once_confirmed_only_written_events_move_the_position() {
    let dir = tempfile::tempdir().unwrap();
    let cursors = Cursors::open(dir.path(), Arc::new(SystemClock));
    cursors.handed(&mut None, "s", 2);
    cursors.delivered("s", "2");
    for seq in 3..=9 {
        cursors.handed(&mut None, "s", seq);
    }
    assert_eq!(cursors.get("s"), Some(2), "handed but not written: the position stays");
    cursors.delivered("s", "5");
    assert_eq!(cursors.get("s"), Some(5));
    assert_eq!(
        cursors.resume_from("s"),
        Some(9),
        "a new stream here starts after what is in flight"
    );
    eventually_saved(dir.path(), "s", Some(5));
    cursors.delivered("s", "4");
    assert_eq!(cursors.get("s"), Some(5), "never backwards");
    cursors.delivered("s", "bridge-warning-1");
    cursors.delivered("s", "42");
    assert_eq!(cursors.get("s"), Some(9), "never past what was handed over");
    cursors.delivered("other", "7");
    assert_eq!(cursors.get("other"), None, "nothing handed for it");
    cursors.forget("s");
    assert_eq!(cursors.get("s"), None);
    cursors.close();
    assert_eq!(saved(dir.path(), "s"), None);
}

/// A stream task keeps a handle on its session's handed position from its first event: later
/// events move the table's entry through it (never back), and a session forgotten meanwhile
/// (its task aborted, or ending) is not entered again by it.
#[test]
fn a_stream_tasks_handle_moves_the_handed_position_until_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let cursors = Cursors::open(dir.path(), Arc::new(SystemClock));
    cursors.strict();
    let mut held = None;
    cursors.handed(&mut held, "s", 4);
    assert!(held.is_some(), "taken at the first event");
    cursors.handed(&mut held, "s", 7);
    cursors.handed(&mut held, "s", 6);
    assert_eq!(cursors.resume_from("s"), Some(7), "moved through the handle, never back");
    cursors.handed(&mut None, "s", 8);
    cursors.delivered("s", "9");
    assert_eq!(cursors.get("s"), Some(8), "one entry, whoever moves it");
    cursors.forget("s");
    cursors.handed(&mut held, "s", 9);
    assert_eq!(cursors.resume_from("s"), None, "forgotten: not entered again");
    cursors.close();
}

#[test]
fn moves_between_saves_are_written_at_exit() {
    let dir = tempfile::tempdir().unwrap();
    let cursors = Cursors::open(dir.path(), Arc::new(SystemClock));
    cursors.handed(&mut None, "s", 1);
    eventually_saved(dir.path(), "s", Some(1));
    // Within the save interval after that save: these wait for the next one, or for exit.
    for seq in 2..=9 {
        cursors.handed(&mut None, "s", seq);
    }
    cursors.close();
    assert_eq!(saved(dir.path(), "s"), Some(9));
}

/// The writer thread starts with the first change, not at open: a bridge whose sessions never
/// stream has none. A change is saved by it, and a bridge that closes without one writes the
/// table it opened.
#[test]
fn the_writer_starts_with_the_first_change() {
    let dir = tempfile::tempdir().unwrap();
    let cursors = Cursors::open(dir.path(), Arc::new(SystemClock));
    assert!(!cursors.writer_started(), "no change yet");
    assert_eq!(cursors.get("s"), None);
    cursors.handed(&mut None, "s", 1);
    assert!(cursors.writer_started());
    eventually_saved(dir.path(), "s", Some(1));
    cursors.close();

    let idle = Cursors::open(dir.path(), Arc::new(SystemClock));
    assert_eq!(idle.get("s"), Some(1), "the saved position read back");
    assert!(!idle.writer_started(), "reading starts no thread");
    idle.close();
    assert_eq!(saved(dir.path(), "s"), Some(1), "the table is kept");
}
