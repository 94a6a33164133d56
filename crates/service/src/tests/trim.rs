//! When the loop returns memory: once, a quiet spell after a burst of engine inputs; never
//! while inputs keep coming, never after a few, never without a hook.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::trim::{AFTER_INPUTS, MemoryTrim, QUIET, Trimmer};

fn counted() -> (Trimmer, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let hook = MemoryTrim::new(move || {
        seen.fetch_add(1, Ordering::Relaxed);
    });
    (Trimmer::new(Some(hook)), calls)
}

#[test]
fn memory_is_returned_once_the_engine_is_quiet_after_a_burst() {
    #[allow(clippy::disallowed_methods)] // one real instant to count from
    let start = Instant::now();
    let (mut trimmer, calls) = counted();
    let ms = |n: u64| start + Duration::from_millis(n);

    // A few inputs are no burst.
    trimmer.inputs(AFTER_INPUTS - 1, ms(0));
    assert_eq!(trimmer.deadline(), None);
    // The burst: each round of inputs moves the deadline; nothing while they keep coming.
    let mut at = 0;
    for _ in 0..20 {
        trimmer.inputs(64, ms(at));
        assert_eq!(trimmer.deadline(), Some(ms(at) + QUIET));
        at += 50;
        assert!(!trimmer.poll(ms(at)), "inputs came {at} ms ago: not quiet yet");
    }
    let last = at - 50;
    assert!(trimmer.poll(ms(last) + QUIET), "quiet for {QUIET:?} after the last input");
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    // Once: no deadline until the next burst.
    assert_eq!(trimmer.deadline(), None);
    assert!(!trimmer.poll(ms(10_000)));
    trimmer.inputs(AFTER_INPUTS, ms(20_000));
    assert!(trimmer.poll(ms(20_000) + QUIET));
    assert_eq!(calls.load(Ordering::Relaxed), 2);
}

#[test]
fn without_a_hook_nothing_is_scheduled() {
    #[allow(clippy::disallowed_methods)] // one real instant to count from
    let now = Instant::now();
    let mut trimmer = Trimmer::new(None);
    trimmer.inputs(AFTER_INPUTS * 4, now);
    assert_eq!(trimmer.deadline(), None, "no wake-up for nothing");
    assert!(!trimmer.poll(now + QUIET));
}
