//! The permission state machine: a table of scripted steps, and a property that the pending
//! count always equals the open set and nothing is answered twice.

use std::collections::BTreeSet;
use std::time::Duration;

use proptest::prelude::*;

use crate::Clock;

use crate::permissions::{
    AnswerError, AnswerOutcome, PermissionConfig, Permissions, RequestKey, RequestKind,
    RequestState,
};

fn key(session: &str, request: &str) -> RequestKey {
    RequestKey {
        engine: "kilo".into(),
        directory: "/w".into(),
        session: session.into(),
        request: request.into(),
    }
}

/// One scripted step and what it must give.
#[derive(Debug, Clone)]
enum Step {
    Raise(&'static str, RequestKind, bool),
    Answer(&'static str, bool, bool, Result<(), &'static str>),
    Done(&'static str, AnswerOutcome),
    Replied(&'static str),
    Cancel(usize),
    Relist(Vec<&'static str>, Vec<&'static str>),
    State(&'static str, RequestState),
    Count(u64),
}

fn check(name: &str, steps: Vec<Step>) {
    let now = super::clock().now();
    let mut p = Permissions::new(PermissionConfig::default());
    for (i, step) in steps.into_iter().enumerate() {
        let at = format!("{name}: step {i} {step:?}");
        match step {
            Step::Raise(r, kind, shown) => {
                assert_eq!(p.raised(key("s", r), kind, now), shown, "{at}")
            }
            Step::Answer(r, approve, trusted, want) => {
                let got = p.begin_answer(&key("s", r), approve, trusted).map_err(|e| e.code());
                assert_eq!(got, want, "{at}");
            }
            Step::Done(r, outcome) => {
                p.answer_done(&key("s", r), outcome);
            }
            Step::Replied(r) => {
                p.replied(&key("s", r));
            }
            Step::Cancel(told) => {
                assert_eq!(p.cancel_session("kilo", "/w", "s").len(), told, "{at}")
            }
            Step::Relist(listed, shown) => {
                let listed = listed.iter().map(|r| ((*r).to_owned(), RequestKind::Exec)).collect();
                let (new, _) = p.relisted("kilo", "/w", "s", listed, now);
                let new: Vec<&str> = new.iter().map(|k| k.request.as_str()).collect();
                assert_eq!(new, shown, "{at}");
            }
            Step::State(r, state) => {
                assert_eq!(p.get(&key("s", r)).map(|e| e.state), Some(state), "{at}")
            }
            Step::Count(n) => assert_eq!(p.pending_count(None), n, "{at}"),
        }
    }
}

#[test]
fn permission_table() {
    use RequestKind::*;
    use Step::*;
    let ok = Ok(());
    let not_pending = Err("permission_not_pending");
    let untrusted = Err("workspace_untrusted");
    let cases: Vec<(&str, Vec<Step>)> = vec![
        ("shown once", vec![Raise("p1", Exec, true), Raise("p1", Exec, false), Count(1)]),
        (
            "allow once settles",
            vec![
                Raise("p1", Exec, true),
                Answer("p1", true, true, ok),
                State("p1", RequestState::Answering { approve: true }),
                Count(1),
                Done("p1", AnswerOutcome::Accepted),
                State("p1", RequestState::Settled),
                Count(0),
            ],
        ),
        (
            "a second answer is refused",
            vec![
                Raise("p1", Write, true),
                Answer("p1", false, false, ok),
                Answer("p1", false, false, not_pending),
                Done("p1", AnswerOutcome::Accepted),
                Answer("p1", true, true, not_pending),
            ],
        ),
        (
            "untrusted approval stays pending, deny works",
            vec![
                Raise("p1", Exec, true),
                Answer("p1", true, false, untrusted),
                State("p1", RequestState::Pending),
                Count(1),
                Answer("p1", false, false, ok),
            ],
        ),
        (
            "reads and questions need no trust, other kinds do",
            vec![
                Raise("r", Read, true),
                Raise("q", Question, true),
                Raise("o", Other, true),
                Answer("r", true, false, ok),
                Answer("q", true, false, ok),
                Answer("o", true, false, untrusted),
            ],
        ),
        ("unknown is not pending", vec![Answer("nope", false, true, not_pending)]),
        (
            "stale on 404, pending again on failure",
            vec![
                Raise("p1", Exec, true),
                Raise("p2", Exec, true),
                Answer("p1", true, true, ok),
                Done("p1", AnswerOutcome::Unknown),
                State("p1", RequestState::Stale),
                Answer("p2", true, true, ok),
                Done("p2", AnswerOutcome::Failed),
                State("p2", RequestState::Pending),
                Answer("p2", true, true, ok),
                Count(1),
            ],
        ),
        (
            "cancel tells the engine about pending ones only",
            vec![
                Raise("p1", Exec, true),
                Raise("p2", Exec, true),
                Answer("p2", false, true, ok),
                Cancel(1),
                State("p1", RequestState::Cancelled),
                State("p2", RequestState::Cancelled),
                Count(0),
                Answer("p1", false, true, not_pending),
                Done("p2", AnswerOutcome::Accepted),
                State("p2", RequestState::Cancelled),
            ],
        ),
        (
            "the engine's own reply settles",
            vec![Raise("p1", Write, true), Replied("p1"), State("p1", RequestState::Settled)],
        ),
        (
            "relist shows new ones, stales vanished ones, settles answered ones",
            vec![
                Raise("p1", Exec, true),
                Raise("p2", Exec, true),
                Answer("p2", true, true, ok),
                Relist(vec!["p3"], vec!["p3"]),
                State("p1", RequestState::Stale),
                State("p2", RequestState::Settled),
                State("p3", RequestState::Pending),
                Relist(vec!["p3"], vec![]),
                Count(1),
            ],
        ),
    ];
    for (name, steps) in cases {
        check(name, steps);
    }
}

#[test]
fn pending_requests_expire_at_their_deadline() {
    let t0 = super::clock().now();
    let ttl = Duration::from_secs(30);
    let mut p = Permissions::new(PermissionConfig { pending_ttl: Some(ttl), ..Default::default() });
    p.raised(key("s", "p1"), RequestKind::Exec, t0);
    p.raised(key("s", "p2"), RequestKind::Exec, t0 + Duration::from_secs(10));
    assert_eq!(p.poll_timeout(), Some(t0 + ttl));
    assert!(p.handle_timeout(t0 + ttl - Duration::from_millis(1)).is_empty());
    let expired = p.handle_timeout(t0 + ttl);
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].state, RequestState::Expired);
    assert_eq!(p.pending_count(None), 1);
    let err = p.begin_answer(&key("s", "p1"), false, true).unwrap_err();
    assert_eq!(err, AnswerError::NotPending { request: "p1".into(), why: "expired" });
    assert_eq!(p.poll_timeout(), Some(t0 + Duration::from_secs(40)));
}

#[test]
fn finished_entries_are_bounded() {
    let now = super::clock().now();
    let mut p = Permissions::new(PermissionConfig { keep_finished: 2, ..Default::default() });
    for r in ["a", "b", "c"] {
        p.raised(key("s", r), RequestKind::Read, now);
        p.replied(&key("s", r));
    }
    assert!(p.get(&key("s", "a")).is_none());
    assert!(p.get(&key("s", "c")).is_some());
}

#[derive(Debug, Clone)]
enum Op {
    Raise(u8, u8),
    Answer(u8, u8, bool, bool),
    Done(u8, u8, u8),
    Replied(u8, u8),
    Cancel(u8),
    Relist(u8, Vec<u8>),
}

fn op() -> impl Strategy<Value = Op> {
    let s = 0u8..3;
    let r = 0u8..6;
    prop_oneof![
        (s.clone(), r.clone()).prop_map(|(s, r)| Op::Raise(s, r)),
        (s.clone(), r.clone(), any::<bool>(), any::<bool>())
            .prop_map(|(s, r, a, t)| Op::Answer(s, r, a, t)),
        (s.clone(), r.clone(), 0u8..3).prop_map(|(s, r, o)| Op::Done(s, r, o)),
        (s.clone(), r.clone()).prop_map(|(s, r)| Op::Replied(s, r)),
        s.clone().prop_map(Op::Cancel),
        (s, proptest::collection::vec(r, 0..4)).prop_map(|(s, l)| Op::Relist(s, l)),
    ]
}

proptest! {
    /// Whatever happens: the count equals the open set, a request is shown at most once,
    /// and at most one answer per request reaches the engine.
    #[test]
    fn count_matches_open_set_and_answers_are_unique(ops in proptest::collection::vec(op(), 0..60)) {
        let now = super::clock().now();
        let mut p = Permissions::new(PermissionConfig::default());
        let k = |s: u8, r: u8| key(&format!("s{s}"), &format!("r{r}"));
        let mut shown = BTreeSet::new();
        let mut answered = BTreeSet::new();
        for op in ops {
            match op {
                Op::Raise(s, r) => {
                    if p.raised(k(s, r), RequestKind::Exec, now) {
                        prop_assert!(shown.insert(k(s, r)), "shown twice");
                    }
                }
                Op::Answer(s, r, approve, trusted) => {
                    if p.begin_answer(&k(s, r), approve, trusted).is_ok() {
                        prop_assert!(trusted || !approve);
                        // A failed answer reopens the request; only an accepted one counts.
                        answered.insert(k(s, r));
                    }
                }
                Op::Done(s, r, o) => {
                    let outcome = [AnswerOutcome::Accepted, AnswerOutcome::Unknown, AnswerOutcome::Failed][usize::from(o)];
                    if let Some(c) = p.answer_done(&k(s, r), outcome)
                        && c.state == RequestState::Pending
                    {
                        answered.remove(&k(s, r));
                    }
                }
                Op::Replied(s, r) => { p.replied(&k(s, r)); }
                Op::Cancel(s) => { p.cancel_session("kilo", "/w", &format!("s{s}")); }
                Op::Relist(s, listed) => {
                    let listed = listed.iter().map(|r| (format!("r{r}"), RequestKind::Exec)).collect();
                    for new in p.relisted("kilo", "/w", &format!("s{s}"), listed, now).0 {
                        prop_assert!(shown.insert(new), "shown twice after relist");
                    }
                }
            }
            let open = (0..3u8).flat_map(|s| (0..6u8).map(move |r| (s, r)))
                .filter(|&(s, r)| p.get(&k(s, r)).is_some_and(|e| e.state.is_open()))
                .count() as u64;
            prop_assert_eq!(p.pending_count(None), open);
            let per: u64 = (0..3u8).map(|s| p.pending_count(Some(("kilo", "/w", &format!("s{s}"))))).sum();
            prop_assert_eq!(per, open);
        }
    }
}
