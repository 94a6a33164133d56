//! The permit table's deadline in simulated time: an unanswered request expires, leaves the
//! count, and a late answer is refused.

use std::sync::Arc;
use std::time::Duration;

use bb_host::permissions::{RequestKind, RequestState};
use bb_host::{Clock, FakeClock};

use crate::clock::SystemClock;
use crate::engine::EngineUpdate;
use crate::permits::Permits;

fn table(ttl: Option<Duration>) -> (Arc<FakeClock>, Permits) {
    let clock = Arc::new(FakeClock::new(SystemClock.now(), 0));
    let permits = Permits::new("kilo", "/w".into(), true, clock.clone()).with_pending_ttl(ttl);
    (clock, permits)
}

fn count(p: &Permits, session: &str) -> u64 {
    match p.count_update(session) {
        EngineUpdate::PendingPermissions { count, .. } => count,
        other => panic!("not a count: {other:?}"),
    }
}

#[test]
fn unanswered_request_expires_at_its_deadline() {
    let (clock, p) = table(Some(Duration::from_secs(60)));
    assert_eq!(p.pending_ttl(), Some(Duration::from_secs(60)));
    assert!(p.raised("s", "per_1", RequestKind::Write));
    clock.advance(Duration::from_secs(30));
    assert!(p.raised("s", "per_2", RequestKind::Read));
    clock.advance(Duration::from_secs(29));
    assert!(p.expire_due().is_empty(), "nothing is due before 60 s");
    assert_eq!(count(&p, "s"), 2);

    clock.advance(Duration::from_secs(1));
    assert_eq!(p.expire_due(), [("s".to_owned(), "per_1".to_owned())]);
    assert_eq!(p.state("s", "per_1"), Some(RequestState::Expired));
    assert_eq!(count(&p, "s"), 1);
    assert!(p.expire_due().is_empty(), "expired once");

    let late = p.begin("s", "per_1", false).expect_err("a late answer is refused");
    assert_eq!(late.code(), "permission_not_pending", "{late:?}");

    clock.advance(Duration::from_secs(30));
    assert_eq!(p.expire_due(), [("s".to_owned(), "per_2".to_owned())]);
    assert_eq!(count(&p, "s"), 0);
}

#[test]
fn answering_request_does_not_expire_and_no_deadline_waits_forever() {
    let (clock, p) = table(Some(Duration::from_secs(5)));
    assert!(p.raised("s", "per_1", RequestKind::Read));
    p.begin("s", "per_1", true).expect("answer may go");
    clock.advance(Duration::from_secs(60));
    assert!(p.expire_due().is_empty(), "an answer in flight is not expired");

    let (clock, p) = table(None);
    assert!(p.raised("s", "per_1", RequestKind::Read));
    clock.advance(Duration::from_secs(365 * 24 * 3600));
    assert!(p.expire_due().is_empty());
    assert_eq!(p.state("s", "per_1"), Some(RequestState::Pending));
}
