//! Flush cadence by priority (selected session 33 ms, others 500 ms), immediate-flush
//! classes, and the publish rate under a flood of deltas, in simulated time.

use std::time::Duration;

use bb_protocol::v1::{EngineEvent, V1Topic};
use serde_json::{Value, json};

use super::{clock, drain, ev, event_of as kilo, ready_host, ready_host_of, run_to_idle, summary};
use crate::{Clock, Engine, FakeClock, Host, HostConfig, Input};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn send(h: &mut Host, c: &FakeClock, session: &str, events: Vec<EngineEvent>) {
    h.handle(super::events_in(h, session, events), c.now());
}

fn kilo_delta(id: &str, text: &str) -> EngineEvent {
    kilo(
        id,
        "message.part.delta",
        json!({"sessionID": "s", "messageID": "m", "partID": "p", "field": "text", "delta": text}),
    )
}

/// Two sessions, `a` selected: both publish their first event at once, then `a` waits out
/// 33 ms and `b` 500 ms.
#[test]
fn cadence_follows_the_selected_session() {
    let c = clock();
    let mut h = ready_host(&c);
    h.handle(Input::SessionsListed(vec![summary("a"), summary("b")]), c.now());
    h.handle(Input::select(0, "a"), c.now());
    drain(&mut h);
    let t0 = c.now();
    send(&mut h, &c, "a", vec![ev("a0")]);
    send(&mut h, &c, "b", vec![ev("b0")]);
    assert_eq!(drain(&mut h).len(), 2, "first events leave at once");
    c.advance(ms(1));
    send(&mut h, &c, "a", vec![ev("a1")]);
    send(&mut h, &c, "b", vec![ev("b1")]);
    assert!(drain(&mut h).is_empty());
    assert_eq!(h.poll_timeout(), Some(t0 + ms(33)));
    c.advance_to(t0 + ms(33));
    h.handle_timeout(c.now());
    assert_eq!(super::ids(&drain(&mut h), "a"), ["a1"]);
    assert_eq!(h.poll_timeout(), Some(t0 + ms(500)), "the background session waits 500 ms");
    c.advance_to(t0 + ms(499));
    h.handle_timeout(c.now());
    assert!(drain(&mut h).is_empty());
    c.advance_to(t0 + ms(500));
    h.handle_timeout(c.now());
    assert_eq!(super::ids(&drain(&mut h), "b"), ["b1"]);
}

/// Selecting a session moves its pending batch to the active cadence at once.
#[test]
fn selecting_a_session_speeds_up_its_pending_batch() {
    let c = clock();
    let mut h = ready_host(&c);
    h.handle(Input::SessionsListed(vec![summary("a"), summary("b")]), c.now());
    h.handle(Input::select(0, "a"), c.now());
    let t0 = c.now();
    send(&mut h, &c, "b", vec![ev("b0")]);
    c.advance(ms(1));
    send(&mut h, &c, "b", vec![ev("b1")]);
    assert_eq!(h.poll_timeout(), Some(t0 + ms(500)));
    h.handle(Input::select(0, "b"), c.now());
    // The state change flushed the batch (it must not overtake the events)...
    let out = drain(&mut h);
    assert_eq!(super::ids(&out, "b"), ["b0", "b1"]);
    // ...and the session now runs at the active cadence.
    c.advance(ms(2));
    send(&mut h, &c, "b", vec![ev("b2")]);
    assert_eq!(h.poll_timeout(), Some(t0 + ms(1) + ms(33)));
}

/// While the webview is hidden every session runs at the background cadence.
#[test]
fn hidden_webview_uses_the_background_cadence() {
    let c = clock();
    let mut h = ready_host(&c);
    h.handle(Input::SessionUpserted(Box::new(summary("a"))), c.now());
    h.handle(Input::select(0, "a"), c.now());
    h.handle(Input::visibility(0, false), c.now());
    let t0 = c.now();
    send(&mut h, &c, "a", vec![ev("a0")]);
    c.advance(ms(1));
    send(&mut h, &c, "a", vec![ev("a1")]);
    assert_eq!(h.poll_timeout(), Some(t0 + ms(500)));
    h.handle(Input::visibility(0, true), c.now());
    c.advance(ms(1));
    send(&mut h, &c, "a", vec![ev("a2")]);
    assert_eq!(h.poll_timeout(), Some(t0 + ms(33)));
}

/// Permission requests, errors and run ends leave at once with everything before them,
/// even from a background session inside its cadence.
#[test]
fn immediate_classes_flush_at_once() {
    let kilo_cases = [
        ("permission.asked", json!({"sessionID": "b", "id": "per_1"})),
        ("session.error", json!({"sessionID": "b", "error": {"name": "x"}})),
        ("session.idle", json!({"sessionID": "b"})),
    ];
    let bb_cases = [
        ("permission_request", json!({"request_id": "p"})),
        ("error", json!({"message": "x"})),
        ("run_finished", json!({})),
        ("completion", json!({})),
    ];
    let cases = kilo_cases
        .into_iter()
        .map(|(k, p)| (Engine::Kilo, k, p))
        .chain(bb_cases.into_iter().map(|(k, p)| (Engine::BreadBoard, k, p)));
    for (engine, kind, payload) in cases {
        let c = clock();
        let mut h = ready_host_of(engine, HostConfig::default(), &c);
        h.handle(Input::SessionsListed(vec![summary("a"), summary("b")]), c.now());
        h.handle(Input::select(0, "a"), c.now());
        drain(&mut h);
        send(&mut h, &c, "b", vec![ev("b0")]);
        c.advance(ms(1));
        send(&mut h, &c, "b", vec![ev("b1")]);
        drain(&mut h);
        c.advance(ms(1));
        send(&mut h, &c, "b", vec![kilo("urgent", kind, payload)]);
        let out = drain(&mut h);
        assert_eq!(super::ids(&out, "b"), ["b1", "urgent"], "{engine:?} {kind}");
    }
}

/// Publishes per simulated second of one session under a delta every millisecond.
fn flood_rate(selected: bool) -> (usize, String) {
    let c = clock();
    let mut h = ready_host_of(Engine::Kilo, HostConfig::default(), &c);
    h.handle(Input::SessionsListed(vec![summary("s"), summary("other")]), c.now());
    let chosen = if selected { "s" } else { "other" };
    h.handle(Input::select(0, chosen), c.now());
    drain(&mut h);
    let mut publishes = 0;
    let mut text = String::new();
    let mut count = |out: Vec<V1Topic>, text: &mut String| {
        for topic in out {
            if let V1Topic::Events(batch) = topic {
                publishes += 1;
                for e in batch.events.items().iter() {
                    text.push_str(e.payload.get("delta").and_then(Value::as_str).unwrap_or(""));
                }
            }
        }
    };
    for i in 0..10_000 {
        send(&mut h, &c, "s", vec![kilo_delta(&format!("e{i}"), "x")]);
        count(drain(&mut h), &mut text);
        c.advance(ms(1));
        h.handle_timeout(c.now());
        count(drain(&mut h), &mut text);
    }
    count(run_to_idle(&mut h, &c), &mut text);
    (publishes, text)
}

#[test]
fn a_flood_publishes_at_the_cadence() {
    let (active, text) = flood_rate(true);
    assert_eq!(text.len(), 10_000, "no delta text lost");
    // 10 s of simulated time: the first delta at once, then one publish per 33 ms, and the
    // rest at the end: about 30 a second.
    assert!((300..=10_000 / 33 + 2).contains(&active), "{active} publishes in 10 s");
    let (background, text) = flood_rate(false);
    assert_eq!(text.len(), 10_000);
    assert!((20..=21).contains(&background), "{background} publishes in 10 s");
}

/// A removed session's pending events still leave, before the state that drops it.
#[test]
fn a_removed_session_flushes_its_events_first() {
    let c = clock();
    let mut h = ready_host(&c);
    h.handle(Input::SessionsListed(vec![summary("a"), summary("b")]), c.now());
    h.handle(Input::select(0, "a"), c.now());
    drain(&mut h);
    send(&mut h, &c, "b", vec![ev("b0")]);
    c.advance(ms(1));
    send(&mut h, &c, "b", vec![ev("b1")]);
    drain(&mut h);
    h.handle(Input::SessionRemoved("b".into()), c.now());
    let out = drain(&mut h);
    assert_eq!(super::ids(&out, "b"), ["b1"]);
    assert!(matches!(out.last(), Some(V1Topic::State(s)) if s.sessions.len() == 1));
    assert_eq!(h.poll_timeout(), None);
}

/// A state change flushes only the sessions it concerns: `b`'s pending events leave before
/// the state that shows `b` running, `a`'s keep their 33 ms cadence.
#[test]
fn a_state_change_flushes_only_its_sessions_events() {
    let c = clock();
    let mut h = ready_host(&c);
    h.handle(Input::SessionsListed(vec![summary("a"), summary("b")]), c.now());
    h.handle(Input::select(0, "a"), c.now());
    drain(&mut h);
    send(&mut h, &c, "a", vec![ev("a0")]);
    send(&mut h, &c, "b", vec![ev("b0")]);
    c.advance(ms(1));
    send(&mut h, &c, "a", vec![ev("a1")]);
    send(&mut h, &c, "b", vec![ev("b1")]);
    drain(&mut h);

    h.handle(Input::SessionRunning { session_id: "b".into(), running: true }, c.now());
    let out = drain(&mut h);
    assert_eq!(super::ids(&out, "b"), ["b1"]);
    assert!(super::ids(&out, "a").is_empty(), "a's batch is not due yet: {out:?}");
    let running = |s: &bb_protocol::v1::StatePayload| {
        s.sessions.iter().any(|x| x.session_id == "b" && x.status.as_deref() == Some("running"))
    };
    assert!(matches!(out.last(), Some(V1Topic::State(s)) if running(s)), "{out:?}");

    c.advance(ms(33));
    h.handle_timeout(c.now());
    assert_eq!(super::ids(&drain(&mut h), "a"), ["a1"]);
}

/// A change made while no webview could see it still flushes its session before the first
/// state a connection gets.
#[test]
fn a_change_no_webview_saw_yet_flushes_before_the_first_state() {
    let c = clock();
    let mut h = Host::new(Engine::Kilo, HostConfig::default());
    h.handle(Input::SessionsListed(vec![summary("a")]), c.now());
    send(&mut h, &c, "a", vec![kilo("a0", "message.updated", json!({}))]);
    c.advance(ms(1));
    send(&mut h, &c, "a", vec![kilo("a1", "message.updated", json!({}))]);
    h.handle(Input::SessionRunning { session_id: "a".into(), running: true }, c.now());
    h.handle(Input::Opened(0), c.now());
    h.handle(Input::ready(0), c.now());
    let out = drain(&mut h);
    assert_eq!(super::ids(&out, "a"), ["a0", "a1"]);
    assert!(matches!(out.last(), Some(V1Topic::State(_))), "{out:?}");
}

/// State changes of inputs handled in a row go out as one `bb/state` message, the latest,
/// after the events of the sessions they concern.
#[test]
fn state_changes_before_a_poll_go_out_as_one_message() {
    let c = clock();
    let mut h = ready_host(&c);
    h.handle(Input::SessionsListed(vec![summary("a"), summary("b")]), c.now());
    drain(&mut h);
    for (session, running) in [("a", true), ("b", true), ("a", false)] {
        send(&mut h, &c, session, vec![kilo(&format!("{session}-{running}"), "x", json!({}))]);
        h.handle(Input::SessionRunning { session_id: session.into(), running }, c.now());
        c.advance(ms(1));
    }
    let out = drain(&mut h);
    let states: Vec<_> = out
        .iter()
        .filter_map(|t| match t {
            V1Topic::State(s) => {
                Some(s.sessions.iter().map(|x| x.status.clone()).collect::<Vec<_>>())
            }
            _ => None,
        })
        .collect();
    let idle_running = vec![Some("idle".to_owned()), Some("running".to_owned())];
    assert_eq!(states, [idle_running], "{out:?}");
    assert!(matches!(out.last(), Some(V1Topic::State(_))), "{out:?}");
    assert_eq!(super::ids(&out, "a"), ["a-true", "a-false"]);
}

/// Background sessions publish together: a batch waiting out the 500 ms cadence is due at the
/// next point of the 100 ms grid the lanes share (counted from the host's first queued
/// event), so sessions whose cadences end at different times publish on one wake-up; their
/// first events still leave at once, and the selected session keeps its own 33 ms cadence.
#[test]
fn background_sessions_publish_on_one_grid() {
    let c = clock();
    let mut h = ready_host(&c);
    h.handle(Input::SessionsListed(vec![summary("a"), summary("b"), summary("d")]), c.now());
    h.handle(Input::select(0, "a"), c.now());
    drain(&mut h);
    let t0 = c.now();
    send(&mut h, &c, "a", vec![ev("a0")]);
    c.advance(ms(30));
    send(&mut h, &c, "b", vec![ev("b0")]);
    c.advance(ms(40));
    send(&mut h, &c, "d", vec![ev("d0")]);
    assert_eq!(drain(&mut h).len(), 3, "first events leave at once");
    c.advance(ms(1));
    send(&mut h, &c, "b", vec![ev("b1")]);
    send(&mut h, &c, "d", vec![ev("d1")]);
    send(&mut h, &c, "a", vec![ev("a1")]);
    assert_eq!(super::ids(&drain(&mut h), "a"), ["a1"], "a's cadence ended at 33 ms");
    c.advance(ms(1));
    send(&mut h, &c, "a", vec![ev("a2")]);
    assert_eq!(h.poll_timeout(), Some(t0 + ms(71 + 33)), "the selected session is not moved");
    c.advance_to(t0 + ms(104));
    h.handle_timeout(c.now());
    assert_eq!(super::ids(&drain(&mut h), "a"), ["a2"]);
    // b's cadence ends at 530 ms, d's at 570 ms: both are due at 600 ms.
    assert_eq!(h.poll_timeout(), Some(t0 + ms(600)));
    c.advance_to(t0 + ms(599));
    h.handle_timeout(c.now());
    assert!(drain(&mut h).is_empty(), "nothing before the grid point");
    c.advance(ms(1));
    h.handle_timeout(c.now());
    let out = drain(&mut h);
    assert_eq!(super::ids(&out, "b"), ["b1"]);
    assert_eq!(super::ids(&out, "d"), ["d1"]);
}

/// The lanes' earliest due time and beat the host keeps between looks are, after every
/// input, poll and timeout, what a visit of every lane finds: queued events, flushes at the
/// cadence and on the grid, immediate classes, a selection that changes priorities, a
/// state change that flushes, a removed session.
#[test]
fn the_kept_deadlines_are_the_lanes_own() {
    use crate::lane::Lane;
    fn check(h: &Host, c: &FakeClock, step: usize) {
        let due = h.slots.lanes().filter_map(Lane::poll_timeout).min();
        assert_eq!(h.lanes_due(), due, "due after step {step}");
        let now = c.now();
        let beat = h.slots.lanes().filter_map(Lane::next_beat).filter(|b| *b > now).min();
        assert_eq!(h.next_beat(now), beat, "beat after step {step}");
    }
    let c = clock();
    let mut h = ready_host(&c);
    let sessions = ["a", "b", "d"];
    h.handle(Input::SessionsListed(sessions.iter().map(|s| summary(s)).collect()), c.now());
    drain(&mut h);
    // A fixed walk through the operations, dense enough that each follows each.
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for step in 0..2_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let session = sessions[usize::try_from(x % 3).unwrap_or(0)];
        match (x >> 8) % 9 {
            0..=3 => send(&mut h, &c, session, vec![ev(&format!("e{step}"))]),
            4 => send(&mut h, &c, session, vec![kilo_delta(&format!("e{step}"), "t")]),
            5 => c.advance(ms((x >> 16) % 40)),
            6 => h.handle_timeout(c.now()),
            7 if (x >> 16).is_multiple_of(4) => h.handle(Input::select(0, session), c.now()),
            7 => {
                drain(&mut h);
            }
            _ if (x >> 16).is_multiple_of(64) => {
                h.handle(Input::SessionRemoved(session.to_owned()), c.now())
            }
            _ => {
                c.advance(ms((x >> 24) % 120));
                h.handle_timeout(c.now());
            }
        }
        check(&h, &c, step);
    }
}
