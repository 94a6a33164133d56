//! The bound on the views of sessions no window shows, by counts (no time involved): past
//! it the least recently active unshown views are dropped, never one a tab shows, one still
//! running or one with an open prompt; a tab binding a dropped session is told so once.

use serde_json::json;

use super::{clock, drain, event_of, events_in, ready_host_of, run_to_idle, summary};
use crate::{
    Clock, Engine, FakeClock, Host, HostConfig, Input, Prompt, PromptKind, VIEW_DROPPED_NOTICE,
};

fn host(c: &FakeClock, limit: usize) -> Host {
    let config = HostConfig { max_unshown_views: limit, ..HostConfig::default() };
    let mut h = ready_host_of(Engine::BreadBoard, config, c);
    // A window that names its tabs: sessions no tab shows are unshown.
    h.handle(Input::TabNamed { conn: 0, tab_id: "t".into() }, c.now());
    h
}

/// One finished turn's events for `session`.
fn turn(h: &mut Host, c: &FakeClock, session: &str, n: u64) {
    h.handle(Input::SessionUpserted(Box::new(summary(session))), c.now());
    let events = vec![
        event_of(&format!("{session}-{n}a"), "assistant_message", json!({"text": "hi"})),
        event_of(&format!("{session}-{n}b"), "run_finished", json!({})),
    ];
    let input = events_in(h, session, events);
    h.handle(input, c.now());
    run_to_idle(h, c);
}

fn select(h: &mut Host, c: &FakeClock, session: &str) {
    let input =
        Input::SessionSelected { conn: 0, session_id: session.into(), tab_id: Some("t".into()) };
    h.handle(input, c.now());
}

#[test]
fn past_the_bound_the_least_recently_active_unshown_views_go() {
    let c = clock();
    let mut h = host(&c, 2);
    // s0 is shown; s1 asks something; s2..s5 finish a turn each, unshown.
    select(&mut h, &c, "s0");
    turn(&mut h, &c, "s0", 0);
    turn(&mut h, &c, "s1", 0);
    let asked = event_of("s1-p", "permission_request", json!({"request_id": "p1"}));
    let raised = Input::PromptRaised {
        prompt: Box::new(Prompt::new("s1", "p1", PromptKind::Exec)),
        event: Some(Box::new((asked, bb_normalize::EventClass::PermissionRequest))),
    };
    h.handle(raised, c.now());
    for s in ["s2", "s3", "s4", "s5"] {
        turn(&mut h, &c, s, 0);
    }
    // Unshown and droppable: s2..s5 (s1 has an open prompt): two kept, the two least recent
    // dropped, one at each new view past the bound.
    assert_eq!(h.views_dropped(), 2);
    // s2 and s3 were dropped; s4 active again keeps it over s5.
    turn(&mut h, &c, "s4", 1);
    turn(&mut h, &c, "s6", 0);
    assert_eq!(h.views_dropped(), 3, "s5, the least recently active, went");
    drain(&mut h);

    // Binding a dropped session: one notice, then what the engine sends.
    select(&mut h, &c, "s2");
    let out = run_to_idle(&mut h, &c);
    let notices = out
        .iter()
        .filter_map(|t| match t {
            bb_protocol::v1::V1Topic::Events(p) => Some(serde_json::to_string(p).unwrap()),
            _ => None,
        })
        .filter(|text| text.contains("dropped its copy of this session"))
        .count();
    assert_eq!(notices, 1, "{out:?}");
    assert!(VIEW_DROPPED_NOTICE.contains("dropped its copy"));
    // Shown again: not dropped while bound, even past the bound.
    for s in ["s7", "s8", "s9"] {
        turn(&mut h, &c, s, 0);
    }
    select(&mut h, &c, "s2");
    let again = run_to_idle(&mut h, &c);
    assert!(!again.iter().any(|t| format!("{t:?}").contains("dropped its copy")), "told once");
}

#[test]
fn a_window_without_tabs_shows_every_session_so_nothing_is_dropped() {
    let c = clock();
    let config = HostConfig { max_unshown_views: 1, ..HostConfig::default() };
    let mut h = ready_host_of(Engine::BreadBoard, config, &c);
    for s in ["s1", "s2", "s3"] {
        turn(&mut h, &c, s, 0);
    }
    assert_eq!(h.views_dropped(), 0);
}
