//! Unit tests of the host core with a fake clock: batching, ordering, state projection,
//! hidden-webview buffering; cadence and coalescing in `tests/`.

mod cadence;
mod cards;
mod claims;
mod coalesce;
mod delivery;
mod history;
mod prompts;
mod resume;
mod unshown;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bb_protocol::v1::{
    ConnectionPayload, ConnectionStatus, EngineEvent, EventsPayload, SessionSummary, StatePayload,
    V1Topic,
};
use proptest::prelude::*;
use serde_json::{Map, Value};

use crate::{Clock, Engine, FakeClock, Host, HostConfig, Input, Prompt, PromptKind};

#[allow(clippy::disallowed_methods)] // tests need one real instant to start the fake clock from
pub(super) fn clock() -> FakeClock {
    FakeClock::new(Instant::now(), 1_700_000_000_000)
}

/// An event of `kind` with `payload` (an object; anything else is `{}`).
pub(super) fn event_of(id: &str, kind: &str, payload: Value) -> EngineEvent {
    let payload = match payload {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    EngineEvent {
        id: id.into(),
        event_type: kind.to_owned().into(),
        turn: None,
        ts: None,
        payload: payload.into(),
    }
}

/// An event that never coalesces (a Kilo delta without message and part ids).
pub(super) fn ev(id: &str) -> EngineEvent {
    EngineEvent {
        id: id.into(),
        event_type: "message.part.delta".into(),
        turn: None,
        ts: None,
        payload: Map::new().into(),
    }
}

pub(super) fn summary(id: &str) -> SessionSummary {
    SessionSummary {
        session_id: id.into(),
        title: Some(format!("title {id}")),
        ..SessionSummary::default()
    }
}

/// `events` of `session` as an adapter hands them over: each with the class of the host's
/// engine's table.
pub(super) fn events_in(h: &Host, session: &str, events: Vec<EngineEvent>) -> Input {
    let engine = h.engine();
    let events = events
        .into_iter()
        .map(|e| {
            let raw = bb_normalize::RawEvent::new(engine, e.event_type.clone(), e.payload.clone());
            let class = bb_normalize::classify(&raw);
            (e, class)
        })
        .collect();
    Input::Events { session_id: session.into(), events }
}

pub(super) fn config() -> HostConfig {
    HostConfig { max_batch: 4, max_buffered_events: 6, ..HostConfig::default() }
}

pub(super) fn ready_host(c: &FakeClock) -> Host {
    ready_host_of(Engine::Kilo, config(), c)
}

pub(super) fn ready_host_of(engine: Engine, config: HostConfig, c: &FakeClock) -> Host {
    let mut h = Host::new(engine, config);
    h.handle(Input::ready(0), c.now());
    drain(&mut h);
    h
}

pub(super) fn drain(h: &mut Host) -> Vec<V1Topic> {
    std::iter::from_fn(|| h.poll_output().map(|(_, t)| t)).collect()
}

/// Advances the fake clock to each deadline until nothing is pending; returns all output.
pub(super) fn run_to_idle(h: &mut Host, c: &FakeClock) -> Vec<V1Topic> {
    let mut out = drain(h);
    while let Some(at) = h.poll_timeout() {
        c.advance_to(at);
        h.handle_timeout(c.now());
        out.extend(drain(h));
    }
    out
}

pub(super) fn ids(topics: &[V1Topic], session: &str) -> Vec<String> {
    topics
        .iter()
        .filter_map(|t| match t {
            V1Topic::Events(b) if &*b.session_id == session => {
                Some(b.events.ids().map(str::to_owned).collect::<Vec<_>>())
            }
            _ => None,
        })
        .flatten()
        .collect()
}

pub(super) fn states(topics: &[V1Topic]) -> Vec<StatePayload> {
    topics
        .iter()
        .filter_map(|t| if let V1Topic::State(s) = t { Some(StatePayload::clone(s)) } else { None })
        .collect()
}

/// A message's size without its events is counted without building one.
#[test]
fn empty_message_bytes_are_the_empty_message_size() {
    use bb_protocol::v1::{Events, EventsPayload};
    for session in ["s1", "", "a \"quoted\" \\ id\n", "é😀\u{1}"] {
        let empty = EventsPayload::new(session, Events::default());
        let want = crate::fit::payload_bytes(&empty);
        assert_eq!(crate::fit::empty_bytes(session), want, "{session:?}");
    }
}

#[test]
fn nothing_leaves_before_init() {
    let c = clock();
    let mut h = Host::new(Engine::Kilo, config());
    h.handle(Input::Opened(0), c.now());
    h.handle(Input::SessionUpserted(Box::new(summary("s1"))), c.now());
    h.handle(events_in(&h, "s1", vec![ev("e1")]), c.now());
    c.advance(Duration::from_secs(1));
    h.handle_timeout(c.now());
    assert!(h.poll_output().map(|(_, t)| t).is_none());
    h.handle(Input::ready(0), c.now());
    let out = drain(&mut h);
    assert_eq!(ids(&out, "s1"), ["e1"]);
    let last = states(&out).pop().expect("state after init");
    assert_eq!(last.sessions.len(), 1);
}

#[test]
fn batches_flush_at_deadline_in_order() {
    let c = clock();
    let mut h = ready_host(&c);
    h.handle(Input::SessionUpserted(Box::new(summary("s1"))), c.now());
    h.handle(Input::select(0, "s1"), c.now());
    drain(&mut h);
    h.handle(events_in(&h, "s1", vec![ev("a")]), c.now());
    let first = drain(&mut h);
    assert_eq!(ids(&first, "s1"), ["a"], "the first event after a quiet spell leaves at once");
    c.advance(Duration::from_millis(5));
    h.handle(events_in(&h, "s1", vec![ev("b")]), c.now());
    assert!(drain(&mut h).is_empty(), "then the cadence holds events back");
    let deadline = h.poll_timeout().expect("armed");
    assert_eq!(deadline, c.now() + Duration::from_millis(28));
    c.advance(Duration::from_millis(5));
    h.handle(events_in(&h, "s1", vec![ev("c")]), c.now());
    assert_eq!(h.poll_timeout(), Some(deadline), "later events do not push the deadline back");
    let out = run_to_idle(&mut h, &c);
    assert_eq!(ids(&out, "s1"), ["b", "c"]);
    let batches = out.iter().filter(|t| matches!(t, V1Topic::Events(_))).count();
    assert_eq!(batches, 1);
}

#[test]
fn full_batch_flushes_at_once() {
    let c = clock();
    let mut h = ready_host(&c);
    let events = (0..9).map(|i| ev(&format!("e{i}"))).collect();
    h.handle(events_in(&h, "s1", events), c.now());
    let out = drain(&mut h);
    let sizes: Vec<usize> = out
        .iter()
        .filter_map(|t| if let V1Topic::Events(b) = t { Some(b.events.len()) } else { None })
        .collect();
    assert_eq!(sizes, [4, 4, 1]);
    assert_eq!(h.poll_timeout(), None);
}

#[test]
fn sessions_do_not_cross_talk() {
    let c = clock();
    let mut h = ready_host(&c);
    for i in 0..5 {
        h.handle(events_in(&h, "a", vec![ev(&format!("a{i}"))]), c.now());
        h.handle(events_in(&h, "b", vec![ev(&format!("b{i}"))]), c.now());
        c.advance(Duration::from_millis(3));
        h.handle_timeout(c.now());
    }
    let out = run_to_idle(&mut h, &c);
    assert_eq!(ids(&out, "a"), ["a0", "a1", "a2", "a3", "a4"]);
    assert_eq!(ids(&out, "b"), ["b0", "b1", "b2", "b3", "b4"]);
}

#[test]
fn messages_share_their_session_and_tab_ids() {
    let c = clock();
    let mut h = ready_host(&c);
    let mut out = Vec::new();
    for i in 0..3 {
        h.handle(events_in(&h, "a", vec![ev(&format!("a{i}"))]), c.now());
        out.extend(run_to_idle(&mut h, &c));
    }
    let sent: Vec<&EventsPayload> = out
        .iter()
        .filter_map(|t| if let V1Topic::Events(b) = t { Some(b) } else { None })
        .collect();
    assert_eq!(sent.len(), 3, "{out:?}");
    let tab = |p: &EventsPayload| p.tab_id.clone().expect("a tab");
    for p in &sent[1..] {
        assert!(Arc::ptr_eq(&p.session_id, &sent[0].session_id), "one copy of the session id");
        assert!(Arc::ptr_eq(&tab(p), &tab(sent[0])), "one copy of the tab id");
    }
}

#[test]
fn state_follows_events_of_the_turn() {
    let c = clock();
    let mut h = ready_host(&c);
    h.handle(Input::SessionUpserted(Box::new(summary("s1"))), c.now());
    h.handle(Input::select(0, "s1"), c.now());
    h.handle(Input::SessionRunning { session_id: "s1".into(), running: true }, c.now());
    h.handle(events_in(&h, "s1", vec![ev("last-text")]), c.now());
    h.handle(Input::SessionRunning { session_id: "s1".into(), running: false }, c.now());
    let out = drain(&mut h);
    let pos_events = out.iter().position(|t| matches!(t, V1Topic::Events(_))).expect("events");
    let pos_idle = out
        .iter()
        .rposition(|t| matches!(t, V1Topic::State(s) if s.running == Some(false) && s.active_session_id.is_some()))
        .expect("idle state");
    assert!(pos_events < pos_idle, "events leave before the idle state: {out:?}");
}

#[test]
fn state_projection() {
    let c = clock();
    let mut h = ready_host(&c);
    h.handle(Input::SessionsListed(vec![summary("a"), summary("b")]), c.now());
    h.handle(Input::select(0, "b"), c.now());
    h.handle(Input::SessionRunning { session_id: "b".into(), running: true }, c.now());
    for (session, request) in [("a", "p1"), ("a", "p2"), ("b", "p3")] {
        let prompt = Prompt::new(session, request, PromptKind::Exec);
        h.handle(Input::PromptRaised { prompt: Box::new(prompt), event: None }, c.now());
    }
    let s = h.state(0);
    assert_eq!(s.active_session_id.as_deref(), Some("b"));
    assert_eq!(s.running, Some(true));
    assert_eq!(s.pending_permission_count, Some(3));
    let waiting: Vec<_> =
        s.sessions.iter().map(|x| (x.session_id.as_str(), x.pending_permission_count)).collect();
    assert_eq!(waiting, [("a", Some(2)), ("b", Some(1))]);
    let statuses: Vec<_> =
        s.sessions.iter().map(|x| (x.session_id.as_str(), x.status.as_deref())).collect();
    assert_eq!(statuses, [("a", Some("idle")), ("b", Some("running"))]);

    h.handle(Input::SessionRemoved("b".into()), c.now());
    let s = h.state(0);
    assert_eq!(s.active_session_id, None);
    assert_eq!(s.running, Some(false));
    assert_eq!(s.pending_permission_count, Some(2));
    // Unchanged state is not re-sent.
    drain(&mut h);
    let repeat = Prompt::new("a", "p1", PromptKind::Exec);
    h.handle(Input::PromptRaised { prompt: Box::new(repeat), event: None }, c.now());
    assert!(drain(&mut h).is_empty());
}

#[test]
fn queued_prompts_show_on_their_session_then_clear() {
    let c = clock();
    let mut h = ready_host(&c);
    h.handle(Input::SessionsListed(vec![summary("a"), summary("b")]), c.now());
    h.handle(Input::SessionRunning { session_id: "a".into(), running: true }, c.now());
    drain(&mut h);
    h.handle(Input::QueuedPrompts { session_id: "a".into(), count: 2 }, c.now());
    let out = drain(&mut h);
    let Some(V1Topic::State(s)) = out.iter().rev().find(|t| matches!(t, V1Topic::State(_))) else {
        panic!("a queued prompt re-sends the state: {out:?}");
    };
    let queued: Vec<_> =
        s.sessions.iter().map(|x| (x.session_id.as_str(), x.queued_prompts)).collect();
    assert_eq!(queued, [("a", Some(2)), ("b", None)]);
    let json = serde_json::to_value(s).expect("serializes");
    assert_eq!(json["sessions"][0]["queuedPrompts"], 2);
    assert!(json["sessions"][1].get("queuedPrompts").is_none(), "{json}");
    // An engine upsert of the summary keeps the host's count.
    h.handle(Input::SessionUpserted(Box::new(summary("a"))), c.now());
    assert_eq!(h.state(0).sessions[0].queued_prompts, Some(2));
    // Unchanged: nothing re-sent; emptied: absent again.
    drain(&mut h);
    h.handle(Input::QueuedPrompts { session_id: "a".into(), count: 2 }, c.now());
    assert!(drain(&mut h).is_empty());
    h.handle(Input::QueuedPrompts { session_id: "a".into(), count: 0 }, c.now());
    assert!(!drain(&mut h).is_empty());
    assert_eq!(h.state(0).sessions[0].queued_prompts, None);
}

/// One prompt runs at a time per session; the host bounds what waits behind it: it counts
/// the prompts sent while a turn runs (one fewer per turn started) until the engine gives a
/// count of its own, which then stands.
#[test]
fn the_prompt_queue_is_bounded_and_counted() {
    let c = clock();
    let config = HostConfig { max_queued_prompts: 2, ..config() };
    let mut h = ready_host_of(Engine::BreadBoard, config, &c);
    h.handle(Input::SessionsListed(vec![summary("a")]), c.now());
    let running = |running| Input::SessionRunning { session_id: "a".into(), running };
    let queued = || Input::PromptQueued { session_id: "a".into() };
    // Idle: a prompt starts a turn, nothing waits.
    h.handle(queued(), c.now());
    assert_eq!(h.queue_room("a"), Ok(()));
    h.handle(running(true), c.now());
    for _ in 0..2 {
        assert_eq!(h.queue_room("a"), Ok(()));
        h.handle(queued(), c.now());
    }
    assert_eq!(h.queue_room("a"), Err((2, 2)), "full");
    assert_eq!(h.state(0).sessions[0].queued_prompts, Some(2));
    // The turn ends and the next (queued) one starts: one fewer waits.
    h.handle(running(false), c.now());
    h.handle(running(true), c.now());
    assert_eq!(h.state(0).sessions[0].queued_prompts, Some(1));
    assert_eq!(h.queue_room("a"), Ok(()));
    // The engine's own count replaces the host's, and a turn start no longer lowers it; a
    // send still counts at once (the engine's next count may come late).
    h.handle(Input::QueuedPrompts { session_id: "a".into(), count: 0 }, c.now());
    h.handle(queued(), c.now());
    h.handle(running(false), c.now());
    h.handle(running(true), c.now());
    assert_eq!(h.state(0).sessions[0].queued_prompts, Some(1));
    h.handle(queued(), c.now());
    assert_eq!(h.queue_room("a"), Err((2, 2)));
}

#[test]
fn hidden_webview_holds_then_replays_in_order() {
    let c = clock();
    let mut h = ready_host(&c);
    h.handle(Input::visibility(0, false), c.now());
    for i in 0..3 {
        h.handle(events_in(&h, "s", vec![ev(&format!("e{i}"))]), c.now());
        h.handle(Input::SessionRunning { session_id: "s".into(), running: i % 2 == 0 }, c.now());
    }
    let held = run_to_idle(&mut h, &c);
    assert!(held.is_empty());
    h.handle(Input::visibility(0, true), c.now());
    let out = drain(&mut h);
    assert_eq!(ids(&out, "s"), ["e0", "e1", "e2"]);
    assert_eq!(states(&out).len(), 1, "state updates coalesce while hidden");
}

#[test]
fn hidden_past_the_ring_gets_a_declared_resync() {
    let c = clock();
    let mut h = ready_host(&c);
    h.handle(Input::visibility(0, false), c.now());
    for i in 0..8 {
        let events = (0..3).map(|j| ev(&format!("e{i}.{j}"))).collect();
        h.handle(events_in(&h, "s", events), c.now());
        run_to_idle(&mut h, &c);
    }
    h.handle(Input::visibility(0, true), c.now());
    let out = drain(&mut h);
    let events: Vec<_> = out
        .iter()
        .filter_map(|t| if let V1Topic::Events(b) = t { Some(b) } else { None })
        .collect();
    assert_eq!(events.len(), 1, "one resync replaces what the ring lost: {out:?}");
    assert_eq!(events[0].resync, Some(true));
    assert_eq!(events[0].seq, Some(9), "the resync takes the next seq");
    let view = events[0].view.as_ref().expect("the view model");
    assert_eq!(view["debug"]["lastEventId"], "e7.2", "the view holds every event");
}

#[test]
fn resyncs_of_several_sessions_come_in_the_order_of_their_ids() {
    let c = clock();
    let mut h = ready_host(&c);
    h.handle(Input::visibility(0, false), c.now());
    for i in 0..8 {
        for s in ["s3", "s1", "s4", "s2"] {
            let events = (0..3).map(|j| ev(&format!("{s}.e{i}.{j}"))).collect();
            h.handle(events_in(&h, s, events), c.now());
        }
        run_to_idle(&mut h, &c);
    }
    h.handle(Input::visibility(0, true), c.now());
    let out = drain(&mut h);
    let resyncs: Vec<&str> = out
        .iter()
        .filter_map(|t| if let V1Topic::Events(b) = t { Some(b) } else { None })
        .filter(|b| b.resync == Some(true))
        .map(|b| &*b.session_id)
        .collect();
    assert_eq!(resyncs, ["s1", "s2", "s3", "s4"], "{out:?}");
}

#[test]
fn connection_flushes_pending_events_first() {
    let c = clock();
    let mut h = ready_host(&c);
    h.handle(Input::SessionUpserted(Box::new(summary("s"))), c.now());
    drain(&mut h);
    h.handle(events_in(&h, "s", vec![ev("x")]), c.now());
    let conn = ConnectionPayload {
        status: ConnectionStatus::Error,
        session_id: None,
        retry_count: None,
        last_error: Some("gone".into()),
        gap_detected: None,
        ..Default::default()
    };
    h.handle(Input::Connection(Box::new(conn.clone())), c.now());
    let out = drain(&mut h);
    assert!(matches!(&out[0], V1Topic::Events(_)));
    assert_eq!(out[1], V1Topic::Connection(conn));
}

#[test]
fn reinit_resends_connection_and_state() {
    let c = clock();
    let mut h = ready_host(&c);
    let conn = ConnectionPayload {
        status: ConnectionStatus::Connected,
        session_id: None,
        retry_count: None,
        last_error: None,
        gap_detected: None,
        ..Default::default()
    };
    h.handle(Input::Connection(Box::new(conn)), c.now());
    drain(&mut h);
    h.handle(Input::ready(0), c.now());
    let out = drain(&mut h);
    assert!(matches!(out.first(), Some(V1Topic::Connection(_))));
    assert_eq!(states(&out).len(), 1);
}

proptest! {
    /// Whatever the interleaving of sessions, timeouts and batch sizes, each session's events
    /// come out exactly once, in input order.
    #[test]
    fn order_and_completeness(steps in proptest::collection::vec((0u8..3, 0usize..6, 0u64..20), 0..60)) {
        let c = clock();
        let mut h = ready_host(&c);
        let mut expected: [Vec<String>; 3] = Default::default();
        let mut out = Vec::new();
        let mut n = 0;
        for (session, count, wait) in steps {
            let events: Vec<EngineEvent> = (0..count).map(|_| { n += 1; ev(&format!("e{n}")) }).collect();
            expected[usize::from(session)].extend(events.iter().map(|e| e.id.to_string()));
            h.handle(events_in(&h, &format!("s{session}"), events), c.now());
            c.advance(Duration::from_millis(wait));
            h.handle_timeout(c.now());
            out.extend(drain(&mut h));
        }
        out.extend(run_to_idle(&mut h, &c));
        for (i, want) in expected.iter().enumerate() {
            prop_assert_eq!(&ids(&out, &format!("s{i}")), want);
        }
    }
}

#[test]
fn repeated_connection_updates_are_sent_once() {
    let c = clock();
    let mut h = ready_host(&c);
    let conn = ConnectionPayload {
        status: ConnectionStatus::Connecting,
        session_id: None,
        retry_count: None,
        last_error: None,
        gap_detected: None,
        ..Default::default()
    };
    h.handle(Input::Connection(Box::new(conn.clone())), c.now());
    h.handle(Input::Connection(Box::new(conn.clone())), c.now());
    let out = drain(&mut h);
    assert_eq!(out, [V1Topic::Connection(conn)]);
}

/// The heartbeat: every interval, each ready connection gets the connection state again
/// (marked `heartbeat`, without session and gap marks), on the simulated clock; a hidden one
/// keeps only the latest; one that is not ready gets none.
#[test]
fn heartbeat_every_interval_to_ready_connections() {
    let c = clock();
    let every = Duration::from_secs(5);
    let mut h = Host::new(Engine::Kilo, HostConfig { heartbeat: Some(every), ..config() });
    let t0 = c.now();
    h.handle(Input::ready(0), t0);
    h.handle(Input::Opened(1), t0);
    let gap = ConnectionPayload { status: ConnectionStatus::Connected, ..Default::default() };
    h.handle(Input::Connection(Box::new(gap)), t0);
    h.handle(Input::Gap { session_id: Some("s".into()) }, t0);
    let first: Vec<_> = std::iter::from_fn(|| h.poll_output()).collect();
    assert!(first.iter().all(|(conn, _)| *conn == 0), "conn 1 is not ready: {first:?}");
    assert_eq!(h.poll_timeout(), Some(t0 + every), "armed by the first input");

    let want = V1Topic::Connection(ConnectionPayload {
        status: ConnectionStatus::Connected,
        heartbeat: Some(5000),
        ..Default::default()
    });
    for n in 1..=3u32 {
        c.advance(Duration::from_millis(4999));
        h.handle_timeout(c.now());
        assert_eq!(h.poll_output(), None, "nothing before the interval ({n})");
        c.advance(Duration::from_millis(1));
        h.handle_timeout(c.now());
        assert_eq!(h.poll_output(), Some((0, want.clone())), "beat {n}: gap and session left out");
        assert_eq!(h.poll_output(), None, "one beat per interval, none for the unready conn");
        assert_eq!(h.poll_timeout(), Some(t0 + every * (n + 1)), "fixed cadence");
    }

    // A late tick sends one beat, and the cadence stays on the grid.
    c.advance(Duration::from_secs(12));
    h.handle_timeout(c.now());
    assert_eq!(drain(&mut h), std::slice::from_ref(&want));
    assert_eq!(h.poll_timeout(), Some(t0 + every * 6));

    // Hidden: beats still arrive (the webview can tell the bridge is alive); events wait.
    h.handle(Input::visibility(0, false), c.now());
    h.handle(Input::SessionUpserted(Box::new(summary("s"))), c.now());
    h.handle(events_in(&h, "s", vec![ev("x")]), c.now());
    for _ in 0..2 {
        c.advance_to(h.poll_timeout().expect("armed"));
        h.handle_timeout(c.now());
        assert_eq!(
            drain(&mut h),
            std::slice::from_ref(&want),
            "a beat, nothing else, while hidden"
        );
    }
    h.handle(Input::visibility(0, true), c.now());
    let shown = run_until(&mut h, &c, c.now() + Duration::from_secs(1));
    assert_eq!(ids(&shown, "s"), ["x"], "events left when shown: {shown:?}");

    // Stalled: a real connection change queued is not replaced by a beat.
    h.handle(Input::Stalled { conn: 0, stalled: true }, c.now());
    let err = ConnectionPayload {
        status: ConnectionStatus::Error,
        last_error: Some("gone".into()),
        ..Default::default()
    };
    h.handle(Input::Connection(Box::new(err.clone())), c.now());
    c.advance(every);
    h.handle_timeout(c.now());
    assert_eq!(drain(&mut h), []);
    h.handle(Input::Stalled { conn: 0, stalled: false }, c.now());
    let out = drain(&mut h);
    assert!(out.contains(&V1Topic::Connection(err)), "{out:?}");
    assert!(!out.iter().any(|t| matches!(t, V1Topic::Connection(p) if p.heartbeat.is_some())));
}

/// Handles every deadline up to `until`; returns all output.
fn run_until(h: &mut Host, c: &FakeClock, until: Instant) -> Vec<V1Topic> {
    let mut out = drain(h);
    while let Some(at) = h.poll_timeout().filter(|at| *at <= until) {
        c.advance_to(at);
        h.handle_timeout(c.now());
        out.extend(drain(h));
    }
    out
}

#[test]
fn no_heartbeat_unless_configured() {
    let c = clock();
    let mut h = ready_host(&c);
    assert_eq!(h.poll_timeout(), None);
    c.advance(Duration::from_secs(60));
    h.handle_timeout(c.now());
    assert_eq!(drain(&mut h), []);
}

#[test]
fn a_burst_leaves_no_room_held_once_released() {
    let c = clock();
    let mut h = ready_host_of(Engine::Kilo, HostConfig::default(), &c);
    h.handle(Input::SessionUpserted(Box::new(summary("s1"))), c.now());
    h.handle(Input::select(0, "s1"), c.now());
    drain(&mut h);
    let events = (0..3000).map(|i| ev(&format!("e{i}"))).collect();
    h.handle(events_in(&h, "s1", events), c.now());
    let out = run_to_idle(&mut h, &c);
    assert_eq!(ids(&out, "s1").len(), 3000);
    assert!(h.slots.lane("s1").unwrap().spare() >= 3000, "the burst grew the queue");
    h.release_spare();
    assert_eq!(h.slots.lane("s1").unwrap().spare(), 0);
    h.handle(events_in(&h, "s1", vec![ev("after")]), c.now());
    assert_eq!(ids(&run_to_idle(&mut h, &c), "s1"), ["after"], "the queue grows again");
}

#[test]
fn merged_events_keep_their_order_one_inline_or_in_a_list() {
    let one = |id: &str| Input::Events {
        session_id: "s1".into(),
        events: crate::EngineEvents::one((ev(id), bb_normalize::EventClass::AssistantStream)),
    };
    let mut merged = one("a");
    assert_eq!(merged.merge(one("b")), None);
    let list = vec![
        (ev("c"), bb_normalize::EventClass::AssistantStream),
        (ev("d"), bb_normalize::EventClass::AssistantStream),
    ];
    assert_eq!(merged.merge(Input::Events { session_id: "s1".into(), events: list.into() }), None);
    let other = Input::Events {
        session_id: "s2".into(),
        events: crate::EngineEvents::one((ev("x"), bb_normalize::EventClass::AssistantStream)),
    };
    assert!(merged.merge(other).is_some(), "another session's events are handed back");
    let Input::Events { events, .. } = merged else { panic!("events") };
    let ids: Vec<String> = events.iter().map(|(e, _)| e.id.to_string()).collect();
    assert_eq!(ids, ["a", "b", "c", "d"]);
    assert_eq!(events.into_iter().len(), 4);
    assert_eq!(
        crate::EngineEvents::one((ev("a"), bb_normalize::EventClass::AssistantStream)),
        vec![(ev("a"), bb_normalize::EventClass::AssistantStream)].into(),
        "one event inline equals the same event in a list"
    );
}
