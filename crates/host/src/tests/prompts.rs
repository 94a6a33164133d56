//! Prompts: the table's rules step by step, a property that the open count always equals
//! the open set and nothing is shown or answered twice, and the host around it (the trust
//! gate, expiry in simulated time, withdrawals, a restart, reused ids, a sub-agent's prompt
//! on its ancestor's tab).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use bb_normalize::EventClass;
use bb_protocol::v1::{
    AppliedBlock, EngineEvent, EventItem, Receive, SessionSummary, UpdatedView, V1Topic,
};
use proptest::prelude::*;
use serde_json::json;

use super::{clock, drain, event_of as event, ready_host_of, run_to_idle, states, summary};
use crate::prompts::{
    AnswerError, AnswerOutcome, PromptConfig, PromptKind, PromptState, Prompts, Raised, Verdict,
};
use crate::{Clock, Engine, FakeClock, Host, HostConfig, Input, PROMPT_CLOSED_EVENT, Prompt};

fn prompt(session: &str, request: &str, kind: PromptKind) -> Prompt {
    Prompt::new(session, request, kind)
}

/// One scripted step and what it must give.
#[derive(Debug, Clone)]
enum Step {
    Raise(&'static str, PromptKind, Raised),
    Answer(&'static str, bool, bool, Result<(), &'static str>),
    Reply(&'static str, Result<(), &'static str>),
    Done(&'static str, AnswerOutcome),
    Settled(&'static str),
    Cancel(usize),
    Relist(Vec<&'static str>, Vec<usize>),
    State(&'static str, PromptState),
    Count(u64),
}

fn check(name: &str, steps: Vec<Step>) {
    let now = clock().now();
    let mut p = Prompts::new(PromptConfig::default());
    for (i, step) in steps.into_iter().enumerate() {
        let at = format!("{name}: step {i} {step:?}");
        match step {
            Step::Raise(r, kind, want) => {
                assert_eq!(p.raise(&prompt("s", r, kind), now), want, "{at}");
            }
            Step::Answer(r, approve, trusted, want) => {
                let verdict = if approve { Verdict::Allow } else { Verdict::Deny };
                let got = p.begin("s", r, verdict, trusted).map(|_| ()).map_err(|e| e.code());
                assert_eq!(got, want, "{at}");
            }
            Step::Reply(r, want) => {
                let got = p.begin("s", r, Verdict::Reply, false).map(|_| ()).map_err(|e| e.code());
                assert_eq!(got, want, "{at}");
            }
            Step::Done(r, outcome) => {
                p.answered("s", r, outcome);
            }
            Step::Settled(r) => {
                p.settled("s", r);
            }
            Step::Cancel(told) => assert_eq!(p.cancel_session("s").0.len(), told, "{at}"),
            Step::Relist(listed, shown) => {
                let listed: Vec<Prompt> =
                    listed.iter().map(|r| prompt("s", r, PromptKind::Exec)).collect();
                assert_eq!(p.relist("s", &listed, now).0, shown, "{at}");
            }
            Step::State(r, state) => {
                assert_eq!(p.get("s", r).map(|e| e.state), Some(state), "{at}");
            }
            Step::Count(n) => assert_eq!(p.open_count(None), n, "{at}"),
        }
    }
}

#[test]
fn prompt_table() {
    use PromptKind::*;
    use Raised::{New, Repeat};
    use Step::*;
    let ok = Ok(());
    let not_pending = Err("permission_not_pending");
    let untrusted = Err("workspace_untrusted");
    let cases: Vec<(&str, Vec<Step>)> = vec![
        ("shown once", vec![Raise("p1", Exec, New), Raise("p1", Exec, Repeat), Count(1)]),
        (
            "allow once settles",
            vec![
                Raise("p1", Exec, New),
                Answer("p1", true, true, ok),
                State("p1", PromptState::Answering { approve: true }),
                Count(1),
                Done("p1", AnswerOutcome::Accepted),
                State("p1", PromptState::Settled),
                Count(0),
            ],
        ),
        (
            "a second answer is refused",
            vec![
                Raise("p1", Write, New),
                Answer("p1", false, false, ok),
                Answer("p1", false, false, not_pending),
                Done("p1", AnswerOutcome::Accepted),
                Answer("p1", true, true, not_pending),
            ],
        ),
        (
            "an id reused after its request settled is a new prompt",
            vec![
                Raise("permission_1", Write, New),
                Answer("permission_1", true, true, ok),
                Done("permission_1", AnswerOutcome::Accepted),
                Raise("permission_1", Write, New),
                State("permission_1", PromptState::Pending),
                Count(1),
                Answer("permission_1", true, true, ok),
                Raise("permission_1", Write, Repeat),
            ],
        ),
        (
            "untrusted approval stays pending, deny works",
            vec![
                Raise("p1", Exec, New),
                Answer("p1", true, false, untrusted),
                State("p1", PromptState::Pending),
                Count(1),
                Answer("p1", false, false, ok),
            ],
        ),
        (
            "reads and network need no trust; writes, commands and unknown kinds do",
            vec![
                Raise("r", Read, New),
                Raise("n", Network, New),
                Raise("w", Write, New),
                Raise("u", Unknown, New),
                Answer("r", true, false, ok),
                Answer("n", true, false, ok),
                Answer("w", true, false, untrusted),
                Answer("u", true, false, untrusted),
            ],
        ),
        (
            "a question is denied, never approved here",
            vec![
                Raise("q", Question, New),
                Answer("q", true, true, Err("invalid_params")),
                Answer("q", false, false, ok),
            ],
        ),
        (
            "a question is replied to without trust; a permission is not",
            vec![
                Raise("q", Question, New),
                Raise("w", Write, New),
                Reply("w", Err("invalid_params")),
                Reply("q", ok),
            ],
        ),
        ("unknown is not pending", vec![Answer("nope", false, true, not_pending)]),
        (
            "stale on 404, pending again on failure",
            vec![
                Raise("p1", Exec, New),
                Raise("p2", Exec, New),
                Answer("p1", true, true, ok),
                Done("p1", AnswerOutcome::Unknown),
                State("p1", PromptState::Stale),
                Answer("p2", true, true, ok),
                Done("p2", AnswerOutcome::Failed),
                State("p2", PromptState::Pending),
                Answer("p2", true, true, ok),
                Count(1),
            ],
        ),
        (
            "cancel withdraws pending ones only",
            vec![
                Raise("p1", Exec, New),
                Raise("p2", Exec, New),
                Answer("p2", false, true, ok),
                Cancel(1),
                State("p1", PromptState::Cancelled),
                State("p2", PromptState::Cancelled),
                Count(0),
                Answer("p1", false, true, not_pending),
                Done("p2", AnswerOutcome::Accepted),
                State("p2", PromptState::Cancelled),
            ],
        ),
        (
            "the engine's own reply settles",
            vec![Raise("p1", Write, New), Settled("p1"), State("p1", PromptState::Settled)],
        ),
        (
            "relist shows new ones, stales vanished ones, settles answered ones",
            vec![
                Raise("p1", Exec, New),
                Raise("p2", Exec, New),
                Answer("p2", true, true, ok),
                Relist(vec!["p3"], vec![0]),
                State("p1", PromptState::Stale),
                State("p2", PromptState::Settled),
                State("p3", PromptState::Pending),
                Relist(vec!["p3"], vec![]),
                Count(1),
            ],
        ),
        (
            "a relist does not show a closed request again",
            vec![
                Raise("p1", Exec, New),
                Cancel(1),
                Relist(vec!["p1"], vec![]),
                State("p1", PromptState::Cancelled),
                Count(0),
            ],
        ),
    ];
    for (name, steps) in cases {
        check(name, steps);
    }
}

#[test]
fn pending_requests_expire_at_their_deadline() {
    let t0 = clock().now();
    let ttl = Duration::from_secs(30);
    let mut p = Prompts::new(PromptConfig { pending_ttl: Some(ttl), ..PromptConfig::default() });
    p.raise(&prompt("s", "p1", PromptKind::Exec), t0);
    p.raise(&prompt("s", "p2", PromptKind::Exec), t0 + Duration::from_secs(10));
    assert_eq!(p.poll_timeout(), Some(t0 + ttl));
    assert!(p.handle_timeout(t0 + ttl - Duration::from_millis(1)).is_empty());
    let expired = p.handle_timeout(t0 + ttl);
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].state, PromptState::Expired);
    assert_eq!(p.open_count(None), 1);
    let err = p.begin("s", "p1", Verdict::Deny, true).unwrap_err();
    assert_eq!(
        err,
        AnswerError::NotPending { request: "p1".into(), why: "expired", answered: None }
    );
    assert_eq!(p.poll_timeout(), Some(t0 + Duration::from_secs(40)));
}

#[test]
fn closed_entries_are_bounded() {
    let now = clock().now();
    let mut p = Prompts::new(PromptConfig { keep_finished: 2, ..PromptConfig::default() });
    for r in ["a", "b", "c"] {
        p.raise(&prompt("s", r, PromptKind::Read), now);
        p.settled("s", r);
    }
    assert!(p.get("s", "a").is_none());
    assert!(p.get("s", "c").is_some());
}

#[derive(Debug, Clone)]
enum Op {
    Raise(u8, u8),
    Answer(u8, u8, bool, bool),
    Done(u8, u8, u8),
    Settled(u8, u8),
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
        (s.clone(), r.clone()).prop_map(|(s, r)| Op::Settled(s, r)),
        s.clone().prop_map(Op::Cancel),
        (s, proptest::collection::vec(r, 0..4)).prop_map(|(s, l)| Op::Relist(s, l)),
    ]
}

proptest! {
    /// Whatever happens: the count equals the open set, a request is shown at most once
    /// while it is open, and at most one answer per request is on its way at a time.
    #[test]
    fn count_matches_open_set_and_answers_are_unique(ops in proptest::collection::vec(op(), 0..60)) {
        let now = clock().now();
        let mut p = Prompts::new(PromptConfig::default());
        let key = |s: u8, r: u8| (format!("s{s}"), format!("r{r}"));
        let mut shown_open = BTreeSet::new();
        let mut answering = BTreeSet::new();
        for op in ops {
            match op {
                Op::Raise(s, r) => {
                    let (session, request) = key(s, r);
                    if p.raise(&prompt(&session, &request, PromptKind::Exec), now) == Raised::New {
                        prop_assert!(shown_open.insert(key(s, r)), "shown twice while open");
                    }
                }
                Op::Answer(s, r, approve, trusted) => {
                    let (session, request) = key(s, r);
                    let verdict = if approve { Verdict::Allow } else { Verdict::Deny };
                    if p.begin(&session, &request, verdict, trusted).is_ok() {
                        prop_assert!(trusted || !approve, "an untrusted approval went through");
                        prop_assert!(answering.insert(key(s, r)), "two answers on their way");
                    }
                }
                Op::Done(s, r, o) => {
                    let (session, request) = key(s, r);
                    let outcome = [AnswerOutcome::Accepted, AnswerOutcome::Unknown, AnswerOutcome::Failed][usize::from(o)];
                    p.answered(&session, &request, outcome);
                }
                Op::Settled(s, r) => {
                    let (session, request) = key(s, r);
                    p.settled(&session, &request);
                }
                Op::Cancel(s) => { p.cancel_session(&format!("s{s}")); }
                Op::Relist(s, listed) => {
                    let session = format!("s{s}");
                    let listed: Vec<Prompt> = listed.iter().map(|r| prompt(&session, &format!("r{r}"), PromptKind::Exec)).collect();
                    for i in p.relist(&session, &listed, now).0 {
                        let k = (session.clone(), listed[i].request_id.clone());
                        prop_assert!(shown_open.insert(k), "shown twice after relist");
                    }
                }
            }
            // What closed may be shown again (a reused id); what is not answering any more
            // may be answered again.
            shown_open.retain(|(s, r)| p.get(s, r).is_some_and(|e| e.state.is_open()));
            answering.retain(|(s, r)| {
                p.get(s, r).is_some_and(|e| matches!(e.state, PromptState::Answering { .. }))
            });
            let open = (0..3u8).flat_map(|s| (0..6u8).map(move |r| (s, r)))
                .filter(|&(s, r)| { let (s, r) = key(s, r); p.get(&s, &r).is_some_and(|e| e.state.is_open()) })
                .count() as u64;
            prop_assert_eq!(p.open_count(None), open);
            let per: u64 = (0..3u8).map(|s| p.open_count(Some(&format!("s{s}")))).sum();
            prop_assert_eq!(per, open);
        }
    }
}

// The host around the table.

fn asked(session: &str, request: &str, id: &str) -> (EngineEvent, EventClass) {
    let e = event(id, "permission.asked", json!({"sessionID": session, "id": request}));
    (e, EventClass::PermissionRequest)
}

fn replied(session: &str, request: &str, id: &str) -> (EngineEvent, EventClass) {
    let body = json!({"sessionID": session, "requestID": request, "reply": "once"});
    (event(id, "permission.replied", body), EventClass::PermissionResponse)
}

fn raise(h: &mut Host, c: &FakeClock, session: &str, request: &str, kind: PromptKind, id: &str) {
    let input = Input::PromptRaised {
        prompt: Box::new(prompt(session, request, kind)),
        event: Some(Box::new(asked(session, request, id))),
    };
    h.handle(input, c.now());
}

/// Every item the webview was sent, with its message's session and tab.
fn items(out: &[V1Topic]) -> Vec<(String, Option<String>, EventItem)> {
    out.iter()
        .filter_map(|t| match t {
            V1Topic::Events(p) => Some(
                p.events
                    .items()
                    .into_owned()
                    .into_iter()
                    .map(|i| (p.session_id.to_string(), p.tab_id.as_deref().map(str::to_owned), i))
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        })
        .flatten()
        .collect()
}

fn pending(out: &[V1Topic]) -> Option<u64> {
    states(out).last().and_then(|s| s.pending_permission_count)
}

fn host(c: &FakeClock, config: HostConfig) -> Host {
    let mut h = ready_host_of(Engine::Kilo, config, c);
    h.handle(Input::SessionUpserted(Box::new(summary("s"))), c.now());
    h.handle(Input::select(0, "s"), c.now());
    drain(&mut h);
    h
}

#[test]
fn a_repeat_is_not_shown_and_a_reused_id_is() {
    let c = clock();
    let mut h = host(&c, HostConfig::default());
    raise(&mut h, &c, "s", "permission_1", PromptKind::Write, "e1");
    raise(&mut h, &c, "s", "permission_1", PromptKind::Write, "e2");
    let out = run_to_idle(&mut h, &c);
    let shown: Vec<String> =
        items(&out).into_iter().map(|(_, _, i)| String::from(i.event.id)).collect();
    assert_eq!(shown, ["e1"], "the repeat is not shown");
    assert_eq!(pending(&out), Some(1));

    h.handle(Input::Trusted(true), c.now());
    let answer = h.begin_answer("s", "permission_1", Verdict::Allow).unwrap();
    assert_eq!((answer.session_id.as_str(), answer.kind), ("s", PromptKind::Write));
    let done = Input::PromptAnswered {
        session_id: "s".into(),
        request_id: "permission_1".into(),
        outcome: AnswerOutcome::Accepted,
    };
    h.handle(done, c.now());
    assert_eq!(pending(&run_to_idle(&mut h, &c)), Some(0));
    assert_eq!(h.prompt_counters().write_allow, 1);

    // The next turn asks `permission_1` again: a new prompt.
    raise(&mut h, &c, "s", "permission_1", PromptKind::Write, "e3");
    let out = run_to_idle(&mut h, &c);
    let shown: Vec<String> =
        items(&out).into_iter().map(|(_, _, i)| String::from(i.event.id)).collect();
    assert_eq!(shown, ["e3"]);
    assert_eq!(pending(&out), Some(1));
    assert!(h.begin_answer("s", "permission_1", Verdict::Allow).is_ok());
    assert_eq!(h.prompt_counters().shown, 2);
}

#[test]
fn a_session_removed_and_created_again_shows_its_requests_again() {
    // A closed request's entry is kept to answer late replies, and the event that showed it
    // repeated is a replay; once its session is removed, a session of the same id is new.
    let c = clock();
    let mut h = host(&c, HostConfig::default());
    raise(&mut h, &c, "s", "per_1", PromptKind::Exec, "e1");
    h.begin_answer_from(0, "s", "per_1", Verdict::Deny, "deny").unwrap();
    let done = Input::PromptAnswered {
        session_id: "s".into(),
        request_id: "per_1".into(),
        outcome: AnswerOutcome::Accepted,
    };
    h.handle(done, c.now());
    run_to_idle(&mut h, &c);
    raise(&mut h, &c, "s", "per_1", PromptKind::Exec, "e1");
    let out = run_to_idle(&mut h, &c);
    assert!(items(&out).iter().all(|(_, _, i)| i.event.id != "e1"), "a replay shows nothing");

    h.handle(Input::SessionRemoved("s".into()), c.now());
    h.handle(Input::SessionUpserted(Box::new(summary("s"))), c.now());
    h.handle(Input::select(0, "s"), c.now());
    drain(&mut h);
    raise(&mut h, &c, "s", "per_1", PromptKind::Exec, "e1");
    let out = run_to_idle(&mut h, &c);
    let shown: Vec<String> =
        items(&out).into_iter().map(|(_, _, i)| String::from(i.event.id)).collect();
    assert_eq!(shown, ["e1"], "the new session's request is shown");
    assert_eq!(pending(&out), Some(1));
    assert!(h.begin_answer("s", "per_1", Verdict::Deny).is_ok());
}

#[test]
fn the_trust_gate_says_how_to_grant_trust_and_deny_always_works() {
    let c = clock();
    let mut h = host(&c, HostConfig::default());
    raise(&mut h, &c, "s", "w", PromptKind::Write, "e1");
    raise(&mut h, &c, "s", "x", PromptKind::Exec, "e2");
    let mut with_path = prompt("s", "u", PromptKind::Unknown);
    with_path.paths = vec!["../outside.txt".into()];
    h.handle(Input::PromptRaised { prompt: Box::new(with_path), event: None }, c.now());
    for request in ["w", "x", "u"] {
        let err = h.begin_answer("s", request, Verdict::Allow).unwrap_err();
        assert_eq!(err.code(), "workspace_untrusted");
        let message = err.to_string();
        assert!(message.contains("--trusted") && message.contains("workspaceTrusted"), "{message}");
    }
    assert!(
        h.begin_answer("s", "u", Verdict::Allow)
            .unwrap_err()
            .to_string()
            .contains("../outside.txt")
    );
    assert!(h.begin_answer("s", "w", Verdict::Deny).is_ok(), "deny needs no trust");
    // The webview trusts the workspace, then takes it back; `--trusted` stays.
    h.handle(Input::Trusted(true), c.now());
    assert!(h.begin_answer("s", "x", Verdict::Allow).is_ok());
    h.handle(Input::Trusted(false), c.now());
    assert_eq!(h.begin_answer("s", "u", Verdict::Allow).unwrap_err().code(), "workspace_untrusted");
    let mut cli = host(&c, HostConfig { trusted: true, ..HostConfig::default() });
    raise(&mut cli, &c, "s", "x", PromptKind::Exec, "e1");
    cli.handle(Input::Trusted(false), c.now());
    assert!(cli.begin_answer("s", "x", Verdict::Allow).is_ok());
}

#[test]
fn an_unanswered_prompt_expires_in_simulated_time_and_is_withdrawn() {
    let c = clock();
    let ttl = Duration::from_secs(30);
    let mut h = host(&c, HostConfig { prompt_ttl: Some(ttl), ..HostConfig::default() });
    let t0 = c.now();
    raise(&mut h, &c, "s", "p1", PromptKind::Exec, "e1");
    drain(&mut h);
    assert_eq!(h.poll_timeout(), Some(t0 + ttl));
    c.advance_to(t0 + ttl);
    h.handle_timeout(c.now());
    let withdraw = h.poll_withdraw().expect("the engine is told to deny it");
    assert_eq!(withdraw.why, PromptState::Expired);
    assert_eq!(withdraw.prompt, prompt("s", "p1", PromptKind::Exec));
    assert!(h.poll_withdraw().is_none());
    assert_eq!(pending(&drain(&mut h)), Some(0));
    assert_eq!(
        h.begin_answer("s", "p1", Verdict::Deny).unwrap_err().code(),
        "permission_not_pending"
    );
    assert_eq!(h.poll_timeout(), None);
}

#[test]
fn a_stop_withdraws_pending_prompts_and_a_restart_closes_the_rest() {
    let c = clock();
    let mut h = host(&c, HostConfig { trusted: true, ..HostConfig::default() });
    raise(&mut h, &c, "s", "p1", PromptKind::Exec, "e1");
    raise(&mut h, &c, "s", "p2", PromptKind::Exec, "e2");
    h.begin_answer("s", "p2", Verdict::Allow).unwrap();
    assert_eq!(pending(&run_to_idle(&mut h, &c)), Some(2));
    h.handle(Input::PromptsCancelled { session_id: "s".into() }, c.now());
    let withdrawn: Vec<String> =
        std::iter::from_fn(|| h.poll_withdraw()).map(|w| w.prompt.request_id).collect();
    assert_eq!(withdrawn, ["p1"], "the answer on its way needs no withdrawal");
    assert_eq!(pending(&run_to_idle(&mut h, &c)), Some(0));

    raise(&mut h, &c, "s", "p3", PromptKind::Exec, "e3");
    drain(&mut h);
    h.handle(Input::EngineRestarted, c.now());
    let out = run_to_idle(&mut h, &c);
    let closing = items(&out)
        .into_iter()
        .map(|(_, _, i)| i)
        .find(|i| i.event.event_type == PROMPT_CLOSED_EVENT)
        .expect("the host says the prompt closed");
    assert_eq!(closing.class, "permission.response");
    assert_eq!(closing.event.payload["requestId"], "p3");
    assert_eq!(closing.event.payload["decision"], "cancelled");
    assert_eq!(pending(&out), Some(0));
    assert!(h.poll_withdraw().is_none(), "a restarted engine has nothing to deny");
}

/// A tabbed webview shows `parent` in tab `t`; `child` (its sub-agent) is shown by no tab.
fn family(c: &FakeClock) -> Host {
    let mut h =
        ready_host_of(Engine::Kilo, HostConfig { trusted: true, ..HostConfig::default() }, c);
    let select =
        Input::SessionSelected { conn: 0, session_id: "parent".into(), tab_id: Some("t".into()) };
    h.handle(Input::TabNamed { conn: 0, tab_id: "t".into() }, c.now());
    h.handle(select, c.now());
    let child = SessionSummary { parent_id: Some("parent".into()), ..summary("child") };
    h.handle(Input::SessionUpserted(Box::new(child)), c.now());
    let grandchild = SessionSummary { parent_id: Some("child".into()), ..summary("grandchild") };
    h.handle(Input::SessionUpserted(Box::new(grandchild)), c.now());
    drain(&mut h);
    h
}

#[test]
fn a_sub_agent_prompt_is_shown_and_answered_on_its_ancestors_tab() {
    let c = clock();
    let mut h = family(&c);
    raise(&mut h, &c, "grandchild", "per_9", PromptKind::Exec, "e1");
    let out = run_to_idle(&mut h, &c);
    let shown = items(&out);
    assert_eq!(shown.len(), 1, "{shown:#?}");
    let (session, tab, item) = &shown[0];
    assert_eq!((session.as_str(), tab.as_deref()), ("parent", Some("t")));
    assert_eq!(item.session_id.as_deref(), Some("grandchild"));
    assert_eq!(item.class, "permission.request");
    let state = states(&out).pop().unwrap();
    let listed: Vec<_> = state
        .sessions
        .iter()
        .map(|s| (s.session_id.as_str(), s.parent_id.as_deref(), s.pending_permission_count))
        .collect();
    assert!(listed.contains(&("grandchild", Some("child"), Some(1))), "{listed:?}");
    assert!(listed.contains(&("child", Some("parent"), None)), "{listed:?}");

    // Answered with the session of the tab it was shown on: it reaches the sub-agent's.
    let answer = h.begin_answer("parent", "per_9", Verdict::Allow).unwrap();
    assert_eq!(answer.session_id, "grandchild");
    let settled = Input::PromptSettled {
        session_id: "grandchild".into(),
        request_id: "per_9".into(),
        event: Some(Box::new(replied("grandchild", "per_9", "e2"))),
    };
    h.handle(settled, c.now());
    let out = run_to_idle(&mut h, &c);
    let shown = items(&out);
    assert_eq!(shown.len(), 1, "{shown:#?}");
    assert_eq!(shown[0].0, "parent");
    assert_eq!(shown[0].2.session_id.as_deref(), Some("grandchild"));
    assert_eq!(shown[0].2.class, "permission.response");
    assert_eq!(pending(&out), Some(0));
}

#[test]
fn a_prompt_no_tab_can_show_waits_and_state_names_its_session() {
    let c = clock();
    let mut h = family(&c);
    let orphan = SessionSummary { parent_id: Some("elsewhere".into()), ..summary("orphan") };
    h.handle(Input::SessionUpserted(Box::new(orphan)), c.now());
    raise(&mut h, &c, "orphan", "per_1", PromptKind::Exec, "e1");
    let out = run_to_idle(&mut h, &c);
    assert!(items(&out).is_empty(), "no tab shows it or an ancestor: it waits");
    let state = states(&out).pop().unwrap();
    let waiting: Vec<&str> = state
        .sessions
        .iter()
        .filter(|s| s.pending_permission_count.is_some())
        .map(|s| s.session_id.as_str())
        .collect();
    assert_eq!(waiting, ["orphan"]);
    // The first tab that shows it gets the prompt with its session's early events.
    h.handle(
        Input::SessionSelected { conn: 0, session_id: "orphan".into(), tab_id: Some("t2".into()) },
        c.now(),
    );
    let out = run_to_idle(&mut h, &c);
    let shown = items(&out);
    assert_eq!(shown.len(), 1);
    assert_eq!((shown[0].0.as_str(), shown[0].2.session_id.as_deref()), ("orphan", None));
}

#[test]
fn a_webview_without_tabs_gets_the_sub_agent_prompt_once_in_its_own_session() {
    let c = clock();
    let mut h = ready_host_of(Engine::Kilo, HostConfig::default(), &c);
    h.handle(Input::SessionUsed { conn: 0, session_id: "parent".into(), tab_id: None }, c.now());
    let child = SessionSummary { parent_id: Some("parent".into()), ..summary("child") };
    h.handle(Input::SessionUpserted(Box::new(child)), c.now());
    drain(&mut h);
    raise(&mut h, &c, "child", "per_1", PromptKind::Exec, "e1");
    let shown = items(&run_to_idle(&mut h, &c));
    assert_eq!(shown.len(), 1, "{shown:#?}");
    assert_eq!((shown[0].0.as_str(), shown[0].2.session_id.as_deref()), ("child", None));
}

/// The approval cards a webview receiving updates holds, per message session: each card's
/// request id, the session it names (a sub-agent's) and whether it is resolved.
fn cards(out: &[V1Topic], page: &mut BTreeMap<String, UpdatedView>) -> Vec<CardSeen> {
    for t in out {
        if let V1Topic::Events(p) = t {
            let view = page.entry(p.session_id.to_string()).or_default();
            if p.resync == Some(true) {
                *view = UpdatedView::new();
            }
            for u in p.updates.as_ref().map(|u| u.items()).unwrap_or_default() {
                view.apply(&u);
            }
        }
    }
    page.iter()
        .flat_map(|(s, v)| {
            v.blocks.iter().filter_map(move |(_, b)| match b {
                AppliedBlock::Ask(a) => Some(CardSeen {
                    on: s.clone(),
                    request: a.permission_id.as_deref().unwrap_or_default().to_owned(),
                    names: a.session_id.as_deref().map(str::to_owned),
                    resolved: a.resolved,
                }),
                _ => None,
            })
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct CardSeen {
    on: String,
    request: String,
    names: Option<String>,
    resolved: bool,
}

fn card(on: &str, request: &str, names: Option<&str>, resolved: bool) -> CardSeen {
    CardSeen { on: on.into(), request: request.into(), names: names.map(str::to_owned), resolved }
}

#[test]
fn prompt_cards_in_updates_follow_the_hosts_prompts_with_a_sub_agents_session() {
    let c = clock();
    let mut h = family(&c);
    h.handle(Input::Receive { conn: 0, receive: Receive::Updates }, c.now());
    drain(&mut h);
    let mut page = BTreeMap::new();
    // The sub-agent and the parent both ask `per_9`: two cards on the parent's tab.
    raise(&mut h, &c, "grandchild", "per_9", PromptKind::Exec, "e1");
    raise(&mut h, &c, "parent", "per_9", PromptKind::Exec, "e2");
    // A repeat the host does not show again adds no card.
    raise(&mut h, &c, "grandchild", "per_9", PromptKind::Exec, "e3");
    let seen = cards(&run_to_idle(&mut h, &c), &mut page);
    assert_eq!(
        seen,
        [card("parent", "per_9", Some("grandchild"), false), card("parent", "per_9", None, false)]
    );
    // Settled by the engine: only the sub-agent's card resolves.
    let settled = Input::PromptSettled {
        session_id: "grandchild".into(),
        request_id: "per_9".into(),
        event: Some(Box::new(replied("grandchild", "per_9", "e4"))),
    };
    h.handle(settled, c.now());
    let seen = cards(&run_to_idle(&mut h, &c), &mut page);
    assert_eq!(
        seen,
        [card("parent", "per_9", Some("grandchild"), true), card("parent", "per_9", None, false)]
    );
    // A new sub-agent prompt, then the engine restarts: the host closes both open ones.
    raise(&mut h, &c, "grandchild", "per_10", PromptKind::Exec, "e5");
    run_to_idle(&mut h, &c);
    h.handle(Input::EngineRestarted, c.now());
    let seen = cards(&run_to_idle(&mut h, &c), &mut page);
    assert!(seen.iter().all(|s| s.resolved), "{seen:#?}");
    assert!(seen.contains(&card("parent", "per_10", Some("grandchild"), true)), "{seen:#?}");
    // A second window opening the parent's tab is sent the same cards as a view.
    let mut fresh = BTreeMap::new();
    h.handle(Input::Opened(1), c.now());
    h.handle(Input::Receive { conn: 1, receive: Receive::Updates }, c.now());
    h.handle(Input::ready(1), c.now());
    h.handle(
        Input::SessionSelected { conn: 1, session_id: "parent".into(), tab_id: Some("t9".into()) },
        c.now(),
    );
    let out: Vec<V1Topic> = std::iter::from_fn(|| h.poll_output())
        .filter(|(conn, _)| *conn == 1)
        .map(|(_, t)| t)
        .collect();
    assert_eq!(cards(&out, &mut fresh), seen);
}

/// Two windows show one session: the first answer wins, the engine is told once, and once
/// it took the answer every window's card resolves with how and by whom (connection and
/// tab); the other window's late answer is refused saying the same.
#[test]
fn the_first_answer_wins_and_every_window_is_told_who_answered() {
    let c = clock();
    let mut h = Host::new(Engine::Kilo, HostConfig { trusted: true, ..HostConfig::default() });
    h.handle(Input::SessionUpserted(Box::new(summary("s"))), c.now());
    for (conn, tab) in [(0, "tab-a"), (1, "tab-b")] {
        h.handle(Input::ready(conn), c.now());
        h.handle(
            Input::SessionSelected { conn, session_id: "s".into(), tab_id: Some(tab.into()) },
            c.now(),
        );
    }
    raise(&mut h, &c, "s", "p1", PromptKind::Exec, "e1");
    run_to_idle(&mut h, &c);

    let first = h.begin_answer_from(0, "s", "p1", Verdict::Allow, "allow_once").unwrap();
    assert_eq!(first.request_id, "p1");
    let late = h.begin_answer_from(1, "s", "p1", Verdict::Deny, "deny").unwrap_err();
    assert_eq!(late.code(), "permission_not_pending", "at most one answer reaches the engine");
    let done = Input::PromptAnswered {
        session_id: "s".into(),
        request_id: "p1".into(),
        outcome: AnswerOutcome::Accepted,
    };
    h.handle(done, c.now());
    let out = run_to_idle(&mut h, &c);
    let closed: Vec<(Option<String>, serde_json::Value)> = items(&out)
        .into_iter()
        .filter(|(_, _, i)| i.event.event_type == PROMPT_CLOSED_EVENT)
        .map(|(_, tab, i)| (tab, serde_json::to_value(&i.event.payload).unwrap()))
        .collect();
    let want = json!({"sessionID": "s", "requestId": "p1", "decision": "allow_once",
                      "answeredBy": {"connection": 0, "tabId": "tab-a"}});
    assert_eq!(
        closed,
        [(Some("tab-a".into()), want.clone()), (Some("tab-b".into()), want)],
        "both windows resolve the card"
    );
    let again = h.begin_answer_from(1, "s", "p1", Verdict::Deny, "deny").unwrap_err();
    let message = again.to_string();
    assert!(
        message.contains("the first answer won: allow_once from tab tab-a of connection 0"),
        "{message}"
    );

    // An engine that reports the close before its reply to the answer (BreadBoard): the
    // windows are told who answered at the close, once.
    raise(&mut h, &c, "s", "p2", PromptKind::Exec, "e2");
    run_to_idle(&mut h, &c);
    h.begin_answer_from(1, "s", "p2", Verdict::Deny, "deny").unwrap();
    let settled = Input::PromptSettled {
        session_id: "s".into(),
        request_id: "p2".into(),
        event: Some(Box::new(replied("s", "p2", "e3"))),
    };
    h.handle(settled, c.now());
    let done = Input::PromptAnswered {
        session_id: "s".into(),
        request_id: "p2".into(),
        outcome: AnswerOutcome::Accepted,
    };
    h.handle(done, c.now());
    let out = run_to_idle(&mut h, &c);
    let types: Vec<(Option<String>, String)> =
        items(&out).into_iter().map(|(_, tab, i)| (tab, i.event.event_type.to_string())).collect();
    let both = |tab: &str| {
        vec![
            (Some(tab.to_owned()), PROMPT_CLOSED_EVENT.to_owned()),
            (Some(tab.to_owned()), "permission.replied".to_owned()),
        ]
    };
    assert_eq!(types, [both("tab-a"), both("tab-b")].concat(), "ours first, once per window");
    let by = items(&out)
        .into_iter()
        .find(|(_, _, i)| i.event.event_type == PROMPT_CLOSED_EVENT)
        .map(|(_, _, i)| serde_json::to_value(&i.event.payload).unwrap()["answeredBy"].clone());
    assert_eq!(by, Some(json!({"connection": 1, "tabId": "tab-b"})));
}

/// What outlives a restart: the open prompts are taken to be saved when they change (not
/// otherwise), each with the event that showed it; a new host given them back shows them
/// again with their original ids and lets them be answered; those the engine no longer
/// knows close as stale, every view told so.
#[test]
fn open_prompts_are_saved_when_they_change_and_restored_after_a_restart() {
    let c = clock();
    let mut h = host(&c, HostConfig { trusted: true, ..HostConfig::default() });
    assert_eq!(h.take_saved(), Some(Vec::new()), "the first take says what there is");
    assert_eq!(h.take_saved(), None, "nothing changed");
    raise(&mut h, &c, "s", "p1", PromptKind::Exec, "e1");
    raise(&mut h, &c, "s", "p2", PromptKind::Write, "e2");
    raise(&mut h, &c, "s", "p3", PromptKind::Read, "e3");
    h.handle(
        Input::PromptSettled { session_id: "s".into(), request_id: "p3".into(), event: None },
        c.now(),
    );
    let saved = h.take_saved().expect("changed");
    let ids: Vec<&str> = saved.iter().map(|s| s.prompt.request_id.as_str()).collect();
    assert_eq!(ids, ["p1", "p2"], "the open ones");
    assert_eq!(saved[0].event.as_ref().map(|(e, _)| e.id.as_str()), Some("e1"));
    raise(&mut h, &c, "s", "p1", PromptKind::Exec, "e1-again");
    assert_eq!(h.take_saved(), None, "a repeat changes nothing");

    // The bridge restarts: a new host, a new window.
    let c2 = clock();
    let mut h2 = host(&c2, HostConfig { trusted: true, ..HostConfig::default() });
    h2.handle(Input::PromptsRestored(saved.clone()), c2.now());
    let out = run_to_idle(&mut h2, &c2);
    let shown: Vec<String> =
        items(&out).into_iter().map(|(_, _, i)| String::from(i.event.id)).collect();
    assert_eq!(shown, ["e1", "e2"], "shown again as first shown");
    assert_eq!(pending(&out), Some(2));
    assert_eq!(h2.take_saved(), None, "what was read back is what is saved");
    h2.handle(Input::PromptsRestored(saved), c2.now());
    assert!(items(&run_to_idle(&mut h2, &c2)).is_empty(), "restored twice, shown once");

    // The engine still knows p1: the answer goes to it under its original id.
    let allowed = h2.begin_answer("s", "p1", Verdict::Allow).expect("pending again");
    assert_eq!((allowed.request_id.as_str(), allowed.kind), ("p1", PromptKind::Exec));
    // It no longer knows p2: stale, said so.
    h2.handle(Input::PromptsForgotten(vec![("s".into(), "p2".into())]), c2.now());
    let out = run_to_idle(&mut h2, &c2);
    let closing = items(&out)
        .into_iter()
        .map(|(_, _, i)| i)
        .find(|i| i.event.event_type == PROMPT_CLOSED_EVENT)
        .expect("the card is closed");
    assert_eq!(closing.event.payload["requestId"], "p2");
    assert_eq!(closing.event.payload["decision"], "stale");
    assert_eq!(pending(&out), Some(1), "p1 is still open (being answered)");
    let late = h2.begin_answer("s", "p2", Verdict::Deny).unwrap_err();
    assert_eq!(late.code(), "permission_not_pending");
    assert!(late.to_string().contains("no longer known to the engine"), "{late}");
    let saved = h2.take_saved().expect("p2 closed");
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0].prompt.request_id, "p1");
}

/// An answer on its way is saved with its prompt (write-ahead), and a restarted host does not
/// ask it again: the card is shown and closed at once with that answer and who gave it, a
/// late answer is refused naming it, and the answer stays saved until the engine's word on
/// the sending again settles it (accepted, or refused as not pending: it took the first).
/// One the engine could not be given is asked again; one it no longer knows closes without
/// a second closing.
#[test]
fn an_answer_saved_on_its_way_is_delivered_after_a_restart_not_asked_again() {
    let c = clock();
    let mut h = host(&c, HostConfig { trusted: true, ..HostConfig::default() });
    for (request, event) in [("p1", "e1"), ("p2", "e2"), ("p3", "e3")] {
        raise(&mut h, &c, "s", request, PromptKind::Exec, event);
    }
    h.take_saved();
    for request in ["p1", "p2", "p3"] {
        let prompt = h.begin_answer_from(0, "s", request, Verdict::Allow, "allow_once").unwrap();
        h.keep_answer_call(&prompt, json!({"method": "bb.approvePermission", "n": request}));
    }
    let saved = h.take_saved().expect("the answers changed what is saved");
    let answer = saved[0].answer.as_ref().expect("saved with its answer");
    assert_eq!(answer.decision, "allow_once");
    assert_eq!(answer.by.connection, 0);
    assert_eq!(answer.call, Some(json!({"method": "bb.approvePermission", "n": "p1"})));

    let c2 = clock();
    let mut h2 = host(&c2, HostConfig { trusted: true, ..HostConfig::default() });
    h2.handle(Input::PromptsRestored(saved), c2.now());
    let out = run_to_idle(&mut h2, &c2);
    let shown: Vec<(String, String)> = items(&out)
        .into_iter()
        .map(|(_, _, i)| {
            let decision = i.event.payload["decision"].as_str().unwrap_or_default().to_owned();
            (i.event.event_type.to_string(), decision)
        })
        .collect();
    let closed = |d: &str| (PROMPT_CLOSED_EVENT.to_owned(), d.to_owned());
    let raised = || ("permission.asked".to_owned(), String::new());
    assert_eq!(
        shown,
        [
            raised(),
            closed("allow_once"),
            raised(),
            closed("allow_once"),
            raised(),
            closed("allow_once")
        ],
        "each card closes with the answer given before the restart"
    );
    let late = h2.begin_answer("s", "p1", Verdict::Deny).unwrap_err();
    assert_eq!(late.code(), "permission_not_pending");
    assert!(late.to_string().contains("allow_once"), "{late}");
    let again = h2.take_saved();
    assert_eq!(again, None, "what was read back is what is saved");

    // p1: the engine took the first sending (409 to the second); p2: it takes this one; p3:
    // it could not be told: asked again, its card shown anew.
    for (request, outcome) in [
        ("p1", AnswerOutcome::Unknown),
        ("p2", AnswerOutcome::Accepted),
        ("p3", AnswerOutcome::Failed),
    ] {
        let resent =
            Input::PromptResent { session_id: "s".into(), request_id: request.into(), outcome };
        h2.handle(resent, c2.now());
    }
    let out = run_to_idle(&mut h2, &c2);
    let ids: Vec<String> =
        items(&out).into_iter().map(|(_, _, i)| String::from(i.event.id)).collect();
    assert_eq!(ids, ["e3"], "only the undelivered one is asked again");
    assert_eq!(pending(&out), Some(1));
    let saved = h2.take_saved().expect("settled and pending again");
    assert_eq!(saved.len(), 1);
    assert_eq!((saved[0].prompt.request_id.as_str(), &saved[0].answer), ("p3", &None));
    h2.begin_answer("s", "p3", Verdict::Deny).expect("answerable again");
    // The resumed stream replays the event that showed p1: the same request, not a new
    // card; p2 raised by another event is a new request of a reused id.
    raise(&mut h2, &c2, "s", "p1", PromptKind::Exec, "e1");
    raise(&mut h2, &c2, "s", "p2", PromptKind::Exec, "e9");
    let out = run_to_idle(&mut h2, &c2);
    let ids: Vec<String> =
        items(&out).into_iter().map(|(_, _, i)| String::from(i.event.id)).collect();
    assert_eq!(ids, ["e9"], "a replay is not a new card");

    // Restored with its answer again, the engine then no longer knows it: settled, the card
    // keeps the answer (no stale closing over it).
    let mut h3 = host(&c2, HostConfig { trusted: true, ..HostConfig::default() });
    let prompt = raised_and_denied(&mut h3, &c2);
    let saved = h3.take_saved().unwrap();
    let mut h4 = host(&c2, HostConfig { trusted: true, ..HostConfig::default() });
    h4.handle(Input::PromptsRestored(saved), c2.now());
    run_to_idle(&mut h4, &c2);
    h4.handle(Input::PromptsForgotten(vec![("s".into(), prompt)]), c2.now());
    let out = run_to_idle(&mut h4, &c2);
    assert!(items(&out).is_empty(), "no second closing");
    assert_eq!(pending(&out), Some(0));
}

fn raised_and_denied(h: &mut Host, c: &FakeClock) -> String {
    raise(h, c, "s", "q1", PromptKind::Exec, "e1");
    h.begin_answer_from(0, "s", "q1", Verdict::Deny, "deny").unwrap();
    "q1".to_owned()
}

/// An engine restart the bridge noticed late (BreadBoard: a health poll finds a new engine at
/// the same address) cancels the requests that died with the old engine, not those of the
/// sessions the new one already holds: a session created on it before the poll, whose turn
/// asks, kept its card open (it was closed `cancelled` while the engine waited on it: a turn
/// stuck for good in a 10-minute soak).
#[test]
fn an_engine_restart_noticed_late_spares_the_prompts_of_the_sessions_the_new_engine_holds() {
    let c = clock();
    let mut h = host(&c, HostConfig { trusted: true, ..HostConfig::default() });
    raise(&mut h, &c, "old", "p1", PromptKind::Exec, "e1");
    raise(&mut h, &c, "new", "p1", PromptKind::Exec, "e1");
    run_to_idle(&mut h, &c);
    h.handle(Input::EngineRestartedHolding { sessions: vec!["new".into()] }, c.now());
    let out = run_to_idle(&mut h, &c);
    assert_eq!(pending(&out), Some(1), "the new engine's request is still open");
    let gone = h.begin_answer("old", "p1", Verdict::Deny).unwrap_err();
    assert!(gone.to_string().contains("cancelled"), "{gone}");
    h.begin_answer("new", "p1", Verdict::Allow).expect("the new engine's request is answerable");
    // Without the list (it could not be read), every open request died with the engine.
    raise(&mut h, &c, "new", "p2", PromptKind::Exec, "e2");
    h.handle(Input::EngineRestarted, c.now());
    assert!(h.begin_answer("new", "p2", Verdict::Deny).is_err());
}
