//! Tabs, per-tab seq, rings, replay on `bb.init({lastSeen})`, declared resyncs, byte-bounded
//! buffering while hidden, splitting and truncation for size, engine status, in simulated
//! time.

use std::collections::BTreeMap;
use std::time::Duration;

use bb_protocol::v1::{EngineEvent, EventsPayload, SessionSummary, V1Event, V1Message, V1Topic};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::{clock, ev, events_in, summary};
use crate::{Clock, ConnId, Engine, FakeClock, Host, HostConfig, Input};

fn all(h: &mut Host) -> Vec<(ConnId, V1Topic)> {
    std::iter::from_fn(|| h.poll_output()).collect()
}

fn settle(h: &mut Host, c: &FakeClock) -> Vec<(ConnId, V1Topic)> {
    let mut out = all(h);
    while let Some(at) = h.poll_timeout() {
        c.advance_to(at);
        h.handle_timeout(c.now());
        out.extend(all(h));
    }
    out
}

fn batches(out: &[(ConnId, V1Topic)], conn: ConnId) -> Vec<EventsPayload> {
    out.iter()
        .filter_map(|(c, t)| match t {
            V1Topic::Events(p) if *c == conn => Some(p.clone()),
            _ => None,
        })
        .collect()
}

fn seqs(batches: &[EventsPayload]) -> Vec<u64> {
    batches.iter().filter_map(|p| p.seq).collect()
}

fn event_ids(batches: &[EventsPayload]) -> Vec<String> {
    batches.iter().flat_map(|p| p.events.ids().map(str::to_owned)).collect()
}

fn config() -> HostConfig {
    HostConfig { max_batch: 4, max_buffered_events: 8, ..HostConfig::default() }
}

fn host(c: &FakeClock, config: HostConfig) -> Host {
    let mut h = Host::new(Engine::Kilo, config);
    h.handle(Input::ready(0), c.now());
    all(&mut h);
    h
}

fn bind(h: &mut Host, c: &FakeClock, conn: ConnId, tab: &str, session: &str) {
    let input =
        Input::SessionSelected { conn, session_id: session.into(), tab_id: Some(tab.into()) };
    h.handle(input, c.now());
}

fn push(h: &mut Host, c: &FakeClock, session: &str, ids: &[String]) {
    let events = ids.iter().map(|i| ev(i)).collect();
    h.handle(events_in(h, session, events), c.now());
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

#[test]
fn each_tab_gets_its_session_with_its_own_seq() {
    let c = clock();
    let mut h = host(&c, config());
    bind(&mut h, &c, 0, "ta", "a");
    bind(&mut h, &c, 0, "tb", "b");
    for round in 0..3 {
        push(&mut h, &c, "a", &names(&format!("a{round}."), 2));
        push(&mut h, &c, "b", &names(&format!("b{round}."), 1));
        c.advance(Duration::from_secs(1));
        h.handle_timeout(c.now());
    }
    let out = settle(&mut h, &c);
    let got = batches(&out, 0);
    for (tab, session) in [("ta", "a"), ("tb", "b")] {
        let mine: Vec<_> =
            got.iter().filter(|p| p.tab_id.as_deref() == Some(tab)).cloned().collect();
        assert!(mine.iter().all(|p| &*p.session_id == session), "{tab} shows only {session}");
        let s = seqs(&mine);
        assert_eq!(s, (1..=s.len() as u64).collect::<Vec<_>>());
    }
    assert!(got.iter().all(|p| p.events.classes().all(|c| c == "transcript.assistant_stream")));
}

#[test]
fn binding_a_tab_moves_it_atomically() {
    let c = clock();
    let mut h = host(&c, config());
    bind(&mut h, &c, 0, "t1", "a");
    bind(&mut h, &c, 0, "t2", "a");
    bind(&mut h, &c, 0, "t1", "b");
    push(&mut h, &c, "a", &names("a", 1));
    push(&mut h, &c, "b", &names("b", 1));
    let out = settle(&mut h, &c);
    let got = batches(&out, 0);
    let route: Vec<_> =
        got.iter().map(|p| (p.tab_id.as_deref().unwrap(), &*p.session_id)).collect();
    assert_eq!(route, [("t2", "a"), ("t1", "b")]);
}

#[test]
fn a_recreated_webview_gets_exactly_what_it_missed() {
    let c = clock();
    let mut h = host(&c, config());
    bind(&mut h, &c, 0, "t", "s");
    for i in 0..5 {
        push(&mut h, &c, "s", &[format!("e{i}")]);
        c.advance(Duration::from_secs(1));
        h.handle_timeout(c.now());
    }
    let first = batches(&settle(&mut h, &c), 0);
    assert_eq!(seqs(&first), [1, 2, 3, 4, 5]);
    h.handle(Input::Closed(0), c.now());
    push(&mut h, &c, "s", &["e5".to_owned()]);
    settle(&mut h, &c);
    let last_seen = BTreeMap::from([("t".to_owned(), 2)]);
    h.handle(Input::WebviewReady { conn: 1, last_seen }, c.now());
    let replay = batches(&all(&mut h), 1);
    assert_eq!(seqs(&replay), [3, 4, 5, 6]);
    assert_eq!(event_ids(&replay), ["e2", "e3", "e4", "e5"]);
    // Events are written once, when published: the ring holds that text, and the replay
    // sends the same bytes.
    assert!(first.iter().chain(&replay).all(|p| p.events.is_written()));
    let text = |p: &EventsPayload| serde_json::to_string(&p.events).unwrap();
    let sent: Vec<_> = first[2..].iter().map(text).collect();
    assert_eq!(replay[..3].iter().map(text).collect::<Vec<_>>(), sent);
    push(&mut h, &c, "s", &["e6".to_owned()]);
    let next = batches(&settle(&mut h, &c), 1);
    assert_eq!(seqs(&next), [7]);
}

#[test]
fn a_ring_keeps_little_of_what_was_handed_and_all_that_was_not() {
    // The size of one single-event message as the host counts it.
    let c = clock();
    let mut probe = host(&c, config());
    bind(&mut probe, &c, 0, "t", "s");
    push(&mut probe, &c, "s", &names("p", 1));
    let sent = batches(&settle(&mut probe, &c), 0);
    let one = EventsPayload { tab_id: None, seq: None, ..sent[0].clone() };
    let size = serde_json::to_vec(&one).unwrap().len();
    // Room for two handed messages; the ring's own bounds hold all twelve below.
    let config =
        HostConfig { max_buffered_events: 100, max_handed_bytes: size * 5 / 2, ..config() };
    let run = |hidden: bool, last_seen: u64| {
        let mut h = host(&c, config);
        bind(&mut h, &c, 0, "t", "s");
        settle(&mut h, &c);
        if hidden {
            h.handle(Input::visibility(0, false), c.now());
        }
        for id in names("e", 6) {
            push(&mut h, &c, "s", &[id]);
            c.advance(Duration::from_secs(1));
            h.handle_timeout(c.now());
        }
        let live = batches(&settle(&mut h, &c), 0);
        if hidden {
            assert!(live.is_empty(), "nothing reaches a hidden webview");
            h.handle(Input::visibility(0, true), c.now());
            return batches(&all(&mut h), 0);
        }
        assert_eq!(seqs(&live), [1, 2, 3, 4, 5, 6]);
        h.handle(Input::Closed(0), c.now());
        let last_seen = BTreeMap::from([("t".to_owned(), last_seen)]);
        h.handle(Input::WebviewReady { conn: 1, last_seen }, c.now());
        batches(&all(&mut h), 1)
    };
    // A hidden webview's messages were not handed: all six wait, and are replayed exactly.
    let shown = run(true, 0);
    assert_eq!(seqs(&shown), [1, 2, 3, 4, 5, 6]);
    assert_eq!(event_ids(&shown), names("e", 6));
    // Handed messages: the last two are kept for a webview that lost them in flight.
    let replay = run(false, 4);
    assert_eq!((seqs(&replay), event_ids(&replay)), (vec![5, 6], names("e", 6)[4..].to_vec()));
    // Older ones are not kept twice (the view holds them): a declared resync stands for them.
    let behind = run(false, 2);
    assert_eq!(behind.len(), 1, "one declared resync: {behind:?}");
    assert_eq!((behind[0].resync, behind[0].seq), (Some(true), Some(7)));
    let view = behind[0].view.as_ref().expect("the view model");
    assert_eq!(view["debug"]["lastEventId"], "e5", "the view holds every event");
}

#[test]
fn a_webview_behind_the_ring_gets_a_declared_resync() {
    let c = clock();
    let mut h = host(&c, config());
    bind(&mut h, &c, 0, "t", "s");
    for i in 0..12 {
        push(&mut h, &c, "s", &[format!("e{i}")]);
        c.advance(Duration::from_secs(1));
        h.handle_timeout(c.now());
    }
    settle(&mut h, &c);
    let last_seen = BTreeMap::from([("t".to_owned(), 1)]);
    h.handle(Input::WebviewReady { conn: 0, last_seen }, c.now());
    let got = batches(&all(&mut h), 0);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].resync, Some(true));
    assert_eq!(got[0].seq, Some(13));
    assert_eq!(got[0].view.as_ref().unwrap()["debug"]["lastEventId"], "e11");
}

#[test]
fn an_unknown_tab_continues_after_the_seq_the_webview_saw() {
    let c = clock();
    let mut h = Host::new(Engine::Kilo, config());
    h.handle(
        Input::WebviewReady { conn: 0, last_seen: BTreeMap::from([("t".into(), 40)]) },
        c.now(),
    );
    bind(&mut h, &c, 0, "t", "s");
    push(&mut h, &c, "s", &["x".to_owned()]);
    assert_eq!(seqs(&batches(&settle(&mut h, &c), 0)), [41]);
}

#[test]
fn two_connections_do_not_see_each_others_sessions() {
    let c = clock();
    let mut h = host(&c, config());
    h.handle(Input::ready(1), c.now());
    h.handle(Input::select(0, "a"), c.now());
    h.handle(Input::select(1, "b"), c.now());
    push(&mut h, &c, "a", &names("a", 3));
    push(&mut h, &c, "b", &names("b", 3));
    let out = settle(&mut h, &c);
    assert_eq!(event_ids(&batches(&out, 0)), ["a0", "a1", "a2"]);
    assert_eq!(event_ids(&batches(&out, 1)), ["b0", "b1", "b2"]);
    // A session nobody selected goes to every implicit tab (the single-webview behaviour).
    push(&mut h, &c, "free", &names("f", 1));
    let out = settle(&mut h, &c);
    assert_eq!(event_ids(&batches(&out, 0)), ["f0"]);
    assert_eq!(event_ids(&batches(&out, 1)), ["f0"]);
}

#[test]
fn an_oversized_event_is_truncated_with_a_ref_to_the_full_body() {
    let c = clock();
    let mut h = Host::new(Engine::BreadBoard, HostConfig::default());
    h.handle(Input::ready(0), c.now());
    let big = "line of tool output\n".repeat(100_000);
    let mut payload = Map::new();
    payload.insert("output".into(), Value::String(big.clone()));
    let before = ev("before");
    let tool = EngineEvent {
        id: "tool".into(),
        event_type: "tool_result".into(),
        turn: None,
        ts: None,
        payload: payload.into(),
    };
    let events = vec![before, tool, ev("after")];
    h.handle(events_in(&h, "s", events), c.now());
    let out = batches(&settle(&mut h, &c), 0);
    assert_eq!(event_ids(&out), ["before", "tool", "after"], "nothing is dropped");
    for p in &out {
        assert!(serde_json::to_vec(p).unwrap().len() < bb_protocol::DEFAULT_MAX_BYTES);
    }
    let item =
        out.iter().flat_map(|p| p.events.items().into_owned()).find(|e| e.id == "tool").unwrap();
    assert_eq!(item.class, "tool.result");
    let t = item.truncated.as_ref().expect("marked truncated");
    assert_eq!(t.fields, ["/output"]);
    let output = item.payload["output"].as_str().unwrap();
    assert!(output.len() <= 8 * 1024 && output.contains(&t.body_ref));
    let full: Value = serde_json::from_str(h.body(&t.body_ref).expect("held")).unwrap();
    assert_eq!(full["output"], big);
}

#[test]
fn large_batches_are_split_by_bytes() {
    let c = clock();
    let mut h = host(&c, HostConfig::default());
    let events: Vec<EngineEvent> = (0..5)
        .map(|i| {
            let mut payload = Map::new();
            payload.insert("text".into(), json!("x".repeat(400_000)));
            EngineEvent {
                id: format!("e{i}").into(),
                event_type: "message.part.delta".into(),
                turn: None,
                ts: None,
                payload: payload.into(),
            }
        })
        .collect();
    h.handle(events_in(&h, "s", events), c.now());
    let out = batches(&settle(&mut h, &c), 0);
    assert!(out.len() >= 3);
    assert_eq!(event_ids(&out), ["e0", "e1", "e2", "e3", "e4"]);
    assert!(out.iter().all(|p| p.events.items().iter().all(|e| e.truncated.is_none())));
    for p in &out {
        assert!(serde_json::to_vec(p).unwrap().len() < bb_protocol::DEFAULT_MAX_BYTES);
    }
}

#[test]
fn an_event_with_a_count_out_of_range_is_rejected_alone() {
    let c = clock();
    let mut h = host(&c, HostConfig::default());
    let huge = EngineEvent { turn: Some(1 << 60), ..ev("huge") };
    let events = vec![ev("before"), huge, ev("after")];
    h.handle(events_in(&h, "s", events), c.now());
    let out = batches(&settle(&mut h, &c), 0);
    assert_eq!(event_ids(&out), ["before", "huge", "after"]);
    let lines: Vec<_> = out
        .into_iter()
        .map(|p| {
            let ids: Vec<_> = p.events.ids().map(str::to_owned).collect();
            let message = V1Message::Event(V1Event::new(V1Topic::Events(p)));
            (ids, message.to_line(&bb_protocol::Limits::default()).is_ok())
        })
        .collect();
    // A turn JavaScript cannot hold fails the outbound check; its neighbours still go out.
    assert_eq!(
        lines,
        [
            (vec!["before".to_owned()], true),
            (vec!["huge".to_owned()], false),
            (vec!["after".to_owned()], true)
        ]
    );
}

#[test]
fn engine_status_is_reported_not_invented() {
    let c = clock();
    let mut h = host(&c, config());
    let failed = SessionSummary { status: Some("failed".into()), ..summary("f") };
    h.handle(Input::SessionUpserted(Box::new(failed)), c.now());
    h.handle(Input::SessionUpserted(Box::new(summary("quiet"))), c.now());
    h.handle(Input::SessionRunning { session_id: "r".into(), running: true }, c.now());
    let statuses: BTreeMap<_, _> = h
        .state(0)
        .sessions
        .into_iter()
        .map(|s| (s.session_id, s.status.unwrap_or_default()))
        .collect();
    assert_eq!(statuses["f"], "failed");
    assert_eq!(statuses["quiet"], "idle");
    assert_eq!(statuses["r"], "running");
}

#[test]
fn an_alive_session_without_a_turn_is_idle_and_named_by_its_first_prompt() {
    // BreadBoard says `running` of every live session; the run flag says whether a turn runs.
    let c = clock();
    let mut h = host(&c, config());
    let alive = SessionSummary { status: Some("running".into()), title: None, ..summary("s") };
    h.handle(Input::SessionUpserted(Box::new(alive)), c.now());
    let first = |h: &Host| h.state(0).sessions.into_iter().next().unwrap();
    assert_eq!(first(&h).status.as_deref(), Some("idle"));
    h.handle(Input::SessionRunning { session_id: "s".into(), running: true }, c.now());
    assert_eq!(first(&h).status.as_deref(), Some("running"));
    h.handle(Input::SessionRunning { session_id: "s".into(), running: false }, c.now());
    assert_eq!(first(&h).status.as_deref(), Some("idle"));
    assert_eq!(first(&h).title, None);
    let prompt = EngineEvent {
        id: "1".into(),
        event_type: "user_message".into(),
        turn: None,
        ts: None,
        payload: json!({"text": "Add a Makefile\nfor the C skeleton"})
            .as_object()
            .cloned()
            .unwrap()
            .into(),
    };
    let mut h2 = Host::new(Engine::BreadBoard, config());
    h2.handle(Input::ready(0), c.now());
    let events = events_in(&h2, "s", vec![prompt]);
    h2.handle(events, c.now());
    settle(&mut h2, &c);
    assert_eq!(first(&h2).title.as_deref(), Some("Add a Makefile"));
}

#[test]
fn message_id_marks_the_reply_until_it_ends() {
    let c = clock();
    let mut h = host(&c, config());
    h.handle(Input::MessageSent { session_id: "s".into(), message_id: "m1".into() }, c.now());
    let end = EngineEvent {
        id: "end".into(),
        event_type: "session.idle".into(),
        turn: None,
        ts: None,
        payload: Map::new().into(),
    };
    h.handle(events_in(&h, "s", vec![ev("a"), end, ev("later")]), c.now());
    let out = batches(&settle(&mut h, &c), 0);
    let marks: Vec<_> =
        out.iter().flat_map(|p| p.events.items().into_owned()).map(|e| e.message_id).collect();
    assert_eq!(marks, [Some("m1".into()), Some("m1".into()), None]);
}

#[derive(Debug, Clone)]
enum Step {
    Events(usize),
    Wait(u64),
    Hide,
    Show,
    /// The webview is recreated and says it saw everything but the last `n` messages.
    Recreate(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (1usize..6).prop_map(Step::Events),
        2 => (0u64..700).prop_map(Step::Wait),
        1 => Just(Step::Hide),
        1 => Just(Step::Show),
        1 => (0u64..12).prop_map(Step::Recreate),
    ]
}

proptest! {
    /// Per tab, what a webview receives is 1, 2, 3, … with nothing repeated or skipped
    /// (a replay after a recreate is exactly the missed suffix), except where a declared
    /// resync stands for what the ring no longer held; every event reaches it once or is
    /// covered by a resync; the ring never holds more bytes than its bound.
    #[test]
    fn delivery_is_exact_or_declared(steps in proptest::collection::vec(step(), 1..80)) {
        let c = clock();
        let config = HostConfig { max_batch: 3, max_buffered_events: 6, max_buffered_bytes: 2_000, ..HostConfig::default() };
        let mut h = host(&c, config);
        bind(&mut h, &c, 0, "t", "s");
        let mut received: Vec<EventsPayload> = Vec::new();
        let mut n = 0;
        let mut sent: Vec<String> = Vec::new();
        let mut visible = true;
        let mut base = 0;
        for s in steps {
            match s {
                Step::Events(k) => {
                    let ids: Vec<String> = (0..k).map(|_| { n += 1; format!("e{n}") }).collect();
                    sent.extend(ids.iter().cloned());
                    push(&mut h, &c, "s", &ids);
                }
                Step::Wait(ms) => { c.advance(Duration::from_millis(ms)); h.handle_timeout(c.now()); }
                Step::Hide => { visible = false; h.handle(Input::visibility(0, false), c.now()); }
                Step::Show => { visible = true; h.handle(Input::visibility(0, true), c.now()); }
                Step::Recreate(back) => {
                    // A webview can lose what came after the state it shows, not before it.
                    let last = received.last().and_then(|p| p.seq).unwrap_or(base);
                    let seen = last.saturating_sub(back).max(base);
                    received.retain(|p| p.seq.unwrap_or(0) <= seen);
                    let last_seen = BTreeMap::from([("t".to_owned(), seen)]);
                    h.handle(Input::WebviewReady { conn: 0, last_seen }, c.now());
                }
            }
            received.extend(batches(&all(&mut h), 0));
            if let Some(p) = received.iter().rev().find(|p| p.resync == Some(true)) {
                base = base.max(p.seq.unwrap_or(0) - 1);
            }
            prop_assert!(h.buffered_bytes() <= 2_000, "ring bytes {}", h.buffered_bytes());
        }
        if !visible {
            h.handle(Input::visibility(0, true), c.now());
        }
        received.extend(batches(&settle(&mut h, &c), 0));
        // seq: +1 from 1, a jump only onto a declared resync.
        let mut last = 0;
        for p in &received {
            let seq = p.seq.unwrap_or(0);
            prop_assert!(seq == last + 1 || (seq > last && p.resync == Some(true)), "{} after {}", seq, last);
            last = seq;
        }
        // events: after the last resync, exactly the suffix of what was sent.
        let start = received.iter().rposition(|p| p.resync == Some(true));
        let tail: Vec<String> = match start {
            Some(i) => event_ids(&received[i + 1..]),
            None => event_ids(&received),
        };
        prop_assert!(sent.ends_with(&tail), "{:?} is not a suffix of {:?}", tail, sent);
        match start {
            None => prop_assert_eq!(tail, sent),
            Some(i) => {
                let view = received[i].view.as_ref().unwrap();
                let covered = view["debug"]["lastEventId"].as_str().map(str::to_owned);
                let before_tail = sent.len() - tail.len();
                prop_assert_eq!(covered, before_tail.checked_sub(1).map(|k| sent[k].clone()));
            }
        }
    }
}

#[test]
fn events_before_the_binding_reach_the_tab_that_binds_the_session() {
    let c = clock();
    let mut h = host(&c, config());
    h.handle(Input::ready(1), c.now());
    bind(&mut h, &c, 0, "t", "other");
    // A new session streams before `bb.createSession` has answered and bound it.
    push(&mut h, &c, "new", &names("n", 2));
    let out = settle(&mut h, &c);
    assert!(batches(&out, 0).is_empty(), "a webview using tabs sees no unclaimed session");
    assert_eq!(event_ids(&batches(&out, 1)), ["n0", "n1"], "a tab-less webview sees it");
    bind(&mut h, &c, 0, "t2", "new");
    push(&mut h, &c, "new", &names("m", 1));
    let out = batches(&settle(&mut h, &c), 0);
    assert_eq!(event_ids(&out), ["n0", "n1", "m0"], "the early events first, once");
    assert!(out.iter().all(|p| p.tab_id.as_deref() == Some("t2")));
    assert_eq!(seqs(&out), (1..=out.len() as u64).collect::<Vec<_>>());
}

#[test]
fn early_messages_are_bounded_in_total_and_the_largest_session_gives_way() {
    // The size of one single-event message as the host counts it.
    let c = clock();
    let mut probe = host(&c, config());
    push(&mut probe, &c, "a", &names("p", 1));
    let sent = batches(&settle(&mut probe, &c), 0);
    let one = EventsPayload { tab_id: None, seq: None, ..sent[0].clone() };
    let size = serde_json::to_vec(&one).unwrap().len();

    let limit = HostConfig { max_buffered_bytes: size * 11 / 2, ..config() };
    let mut h = host(&c, limit);
    bind(&mut h, &c, 0, "t", "other");
    for id in names("a", 4) {
        push(&mut h, &c, "a", &[id]);
        settle(&mut h, &c);
    }
    for id in names("b", 2) {
        push(&mut h, &c, "b", &[id]);
        settle(&mut h, &c);
    }
    // Six messages are more than the store holds: "a" (the most held) gave up its oldest.
    bind(&mut h, &c, 0, "tb", "b");
    let out = batches(&settle(&mut h, &c), 0);
    assert_eq!(event_ids(&out), ["b0", "b1"], "the smaller session kept everything");
    bind(&mut h, &c, 0, "ta", "a");
    let out = batches(&settle(&mut h, &c), 0);
    assert_eq!(out.len(), 1, "one declared resync: {out:?}");
    assert_eq!(out[0].resync, Some(true));
    let view = out[0].view.as_ref().expect("the view model");
    assert_eq!(view["debug"]["lastEventId"], "a3", "the view holds every event");
}

/// Events published before any webview wanted updates (a restarted bridge resuming a session,
/// or showing its saved prompts, before a webview is there) carry no updates: a tab receiving
/// both events and updates that is handed them gets the session's view as well, as a tab
/// receiving updates only does.
#[test]
fn a_tab_receiving_both_handed_events_published_without_updates_gets_the_view() {
    let c = clock();
    let mut h = Host::new(Engine::Kilo, config());
    let text = |id: &str| super::event_of(id, "assistant.message.delta", json!({"delta": id}));
    let input = events_in(&h, "s", vec![text("e1"), text("e2")]);
    h.handle(input, c.now());
    settle(&mut h, &c);
    h.handle(Input::Receive { conn: 1, receive: bb_protocol::v1::Receive::Both }, c.now());
    h.handle(Input::ready(1), c.now());
    bind(&mut h, &c, 1, "tab-1", "s");
    let got = batches(&settle(&mut h, &c), 1);
    // The deltas, coalesced, once.
    assert_eq!(event_ids(&got), ["e2"], "{got:?}");
    let view = got.iter().find(|p| p.resync == Some(true)).expect("the view: {got:?}");
    assert!(view.updates.as_ref().is_some_and(|u| !u.is_empty()), "{view:?}");
    // Nothing is sent twice after it.
    let input = events_in(&h, "s", vec![text("e3")]);
    h.handle(input, c.now());
    let more = batches(&settle(&mut h, &c), 1);
    assert!(more.iter().all(|p| p.resync.is_none()), "{more:?}");
}
