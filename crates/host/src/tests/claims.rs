//! Claims in simulated time: a session a connection's request in flight is about to bind
//! (`bb.createSession`, `bb.selectSession`) never reaches another connection; a tab-less
//! webview still sees every session no request claims.

use bb_protocol::v1::{EventsPayload, V1Topic};

use super::{clock, ev};
use crate::{Clock, ConnId, FakeClock, Host, HostConfig, Input};

fn settle(h: &mut Host, c: &FakeClock) -> Vec<(ConnId, V1Topic)> {
    let mut out: Vec<_> = std::iter::from_fn(|| h.poll_output()).collect();
    while let Some(at) = h.poll_timeout() {
        c.advance_to(at);
        h.handle_timeout(c.now());
        out.extend(std::iter::from_fn(|| h.poll_output()));
    }
    out
}

fn events_of(out: &[(ConnId, V1Topic)], conn: ConnId) -> Vec<EventsPayload> {
    out.iter()
        .filter_map(|(c, t)| match t {
            V1Topic::Events(p) if *c == conn => Some(p.clone()),
            _ => None,
        })
        .collect()
}

fn ids(out: &[(ConnId, V1Topic)], conn: ConnId) -> Vec<String> {
    events_of(out, conn).iter().flat_map(|p| p.events.ids().map(str::to_owned)).collect()
}

fn push(h: &mut Host, c: &FakeClock, session: &str, ids: &[&str]) {
    let events = ids.iter().map(|i| ev(i)).collect();
    h.handle(super::events_in(h, session, events), c.now());
}

/// Two ready connections, 0 and 1, that named no tab yet.
fn two(c: &FakeClock) -> Host {
    let config = HostConfig { max_batch: 4, max_buffered_events: 8, ..HostConfig::default() };
    let mut h = Host::new(crate::Engine::Kilo, config);
    h.handle(Input::ready(0), c.now());
    h.handle(Input::ready(1), c.now());
    settle(&mut h, c);
    h
}

fn create(conn: ConnId, request: &str) -> Input {
    Input::Claimed { conn, request_id: request.into(), session_id: None }
}

fn answered(conn: ConnId, request: &str) -> Input {
    Input::Answered { conn, request_id: request.into() }
}

fn used(conn: ConnId, session: &str, tab: Option<&str>) -> Input {
    Input::SessionUsed { conn, session_id: session.into(), tab_id: tab.map(Into::into) }
}

#[test]
fn a_session_streaming_before_its_create_answered_reaches_only_its_creator() {
    let c = clock();
    let mut h = two(&c);
    h.handle(create(1, "c1"), c.now());
    // The new session's first metadata events come before the create's response binds it.
    push(&mut h, &c, "new", &["n0", "n1"]);
    let out = settle(&mut h, &c);
    assert_eq!(ids(&out, 0), Vec::<String>::new(), "another window's implicit tab grabbed it");
    assert_eq!(ids(&out, 1), Vec::<String>::new(), "nothing before the binding");
    h.handle(used(1, "new", None), c.now());
    h.handle(answered(1, "c1"), c.now());
    push(&mut h, &c, "new", &["n2"]);
    let out = settle(&mut h, &c);
    assert_eq!(ids(&out, 0), Vec::<String>::new());
    assert_eq!(ids(&out, 1), ["n0", "n1", "n2"], "the creator gets it all, in order, once");
    let seqs: Vec<u64> = events_of(&out, 1).iter().filter_map(|p| p.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
}

#[test]
fn a_window_that_names_its_tab_later_never_gets_anothers_new_session() {
    let c = clock();
    let mut h = two(&c);
    // Window 1 creates in tab "t1" while window 0 has not named its tab yet.
    h.handle(create(1, "c1"), c.now());
    h.handle(Input::TabNamed { conn: 1, tab_id: "t1".into() }, c.now());
    push(&mut h, &c, "b", &["skills_catalog", "skills_selection"]);
    let out = settle(&mut h, &c);
    assert_eq!(ids(&out, 0), Vec::<String>::new());
    h.handle(used(1, "b", Some("t1")), c.now());
    h.handle(answered(1, "c1"), c.now());
    h.handle(create(0, "c0"), c.now());
    h.handle(Input::TabNamed { conn: 0, tab_id: "t0".into() }, c.now());
    push(&mut h, &c, "a", &["a0"]);
    h.handle(used(0, "a", Some("t0")), c.now());
    h.handle(answered(0, "c0"), c.now());
    push(&mut h, &c, "b", &["b0"]);
    let out = settle(&mut h, &c);
    assert_eq!(ids(&out, 0), ["a0"]);
    assert!(events_of(&out, 0).iter().all(|p| p.tab_id.as_deref() == Some("t0")));
    assert_eq!(ids(&out, 1), ["skills_catalog", "skills_selection", "b0"]);
    assert!(events_of(&out, 1).iter().all(|p| p.tab_id.as_deref() == Some("t1")));
}

#[test]
fn a_tabless_webview_still_sees_sessions_it_did_not_create() {
    let c = clock();
    let config = HostConfig { max_batch: 4, max_buffered_events: 8, ..HostConfig::default() };
    let mut h = Host::new(crate::Engine::Kilo, config);
    h.handle(Input::ready(0), c.now());
    // After a bridge restart: a session nobody created or selected here.
    push(&mut h, &c, "old", &["o0"]);
    assert_eq!(ids(&settle(&mut h, &c), 0), ["o0"]);
    // While its own create is in flight, a known session keeps flowing; an unknown one waits
    // for the create to bind its session, then comes, from its first event.
    h.handle(create(0, "c"), c.now());
    push(&mut h, &c, "old", &["o1"]);
    push(&mut h, &c, "other", &["x0"]);
    push(&mut h, &c, "mine", &["m0"]);
    let out = settle(&mut h, &c);
    assert_eq!(ids(&out, 0), ["o1"]);
    h.handle(used(0, "mine", None), c.now());
    let out = settle(&mut h, &c);
    assert_eq!(ids(&out, 0), ["m0"]);
    h.handle(answered(0, "c"), c.now());
    push(&mut h, &c, "other", &["x1"]);
    let out = settle(&mut h, &c);
    assert_eq!(ids(&out, 0), ["x0", "x1"], "released after the create answered, in order");
}

#[test]
fn a_select_in_flight_holds_its_session_until_answered() {
    let c = clock();
    let mut h = two(&c);
    let select = Input::Claimed { conn: 1, request_id: "s".into(), session_id: Some("x".into()) };
    h.handle(select, c.now());
    push(&mut h, &c, "x", &["x0"]);
    assert_eq!(ids(&settle(&mut h, &c), 0), Vec::<String>::new());
    // The select failed: nobody binds it, so the tab-less windows get it after all.
    h.handle(answered(1, "s"), c.now());
    let out = settle(&mut h, &c);
    assert_eq!(ids(&out, 0), ["x0"]);
    assert_eq!(ids(&out, 1), ["x0"]);
}

#[test]
fn a_closed_connection_releases_what_it_claimed() {
    let c = clock();
    let mut h = two(&c);
    h.handle(create(1, "c1"), c.now());
    push(&mut h, &c, "new", &["n0"]);
    assert_eq!(ids(&settle(&mut h, &c), 0), Vec::<String>::new());
    h.handle(Input::Closed(1), c.now());
    assert_eq!(ids(&settle(&mut h, &c), 0), ["n0"]);
}

#[test]
fn a_select_of_a_session_the_implicit_tab_already_shows_loses_nothing() {
    // A restarted bridge resumes a session's stream on its own: its first events reach the
    // tab-less window before the window's select of that session is answered.
    let c = clock();
    let mut h = two(&c);
    push(&mut h, &c, "x", &["x7", "x8"]);
    let out = settle(&mut h, &c);
    assert_eq!(ids(&out, 1), ["x7", "x8"]);
    let select = Input::Claimed { conn: 1, request_id: "s".into(), session_id: Some("x".into()) };
    h.handle(select, c.now());
    push(&mut h, &c, "x", &["x9", "x10"]);
    let held = settle(&mut h, &c);
    assert_eq!(ids(&held, 0), Vec::<String>::new(), "held for the select");
    h.handle(used(1, "x", None), c.now());
    h.handle(answered(1, "s"), c.now());
    push(&mut h, &c, "x", &["x11"]);
    let out = [held, settle(&mut h, &c)].concat();
    assert_eq!(ids(&out, 1), ["x9", "x10", "x11"], "the held events, once and in order");
    let seqs: Vec<u64> = events_of(&out, 1).iter().filter_map(|p| p.seq).collect();
    assert_eq!(seqs, [2, 3], "the tab's messages go on after the first one (x7, x8)");
    // The other window saw it while no tab showed it; now a tab does, so it gets no more.
    assert_eq!(ids(&out, 0), Vec::<String>::new());
}

#[test]
fn a_failed_select_of_a_shown_session_hands_the_held_events_on() {
    let c = clock();
    let mut h = two(&c);
    push(&mut h, &c, "x", &["x0"]);
    settle(&mut h, &c);
    let select = Input::Claimed { conn: 1, request_id: "s".into(), session_id: Some("x".into()) };
    h.handle(select, c.now());
    push(&mut h, &c, "x", &["x1"]);
    let held = settle(&mut h, &c);
    h.handle(answered(1, "s"), c.now());
    let out = [held, settle(&mut h, &c)].concat();
    assert_eq!(ids(&out, 0), ["x1"]);
    assert_eq!(ids(&out, 1), ["x1"]);
}

/// A tab-less webview that connects after a session began streaming gets the session's
/// earlier messages before its first direct one, numbered in order.
#[test]
fn a_webview_connecting_mid_stream_gets_what_streamed_before_it() {
    let c = clock();
    let config = HostConfig { max_batch: 2, ..HostConfig::default() };
    let mut h = Host::new(crate::Engine::Kilo, config);
    push(&mut h, &c, "s", &["e0", "e1", "e2"]);
    settle(&mut h, &c);
    h.handle(Input::ready(0), c.now());
    push(&mut h, &c, "s", &["e3"]);
    let out = settle(&mut h, &c);
    assert_eq!(ids(&out, 0), ["e0", "e1", "e2", "e3"]);
    let seqs: Vec<_> = events_of(&out, 0).iter().map(|p| p.seq).collect();
    let expected: Vec<_> = (1..=seqs.len() as u64).map(Some).collect();
    assert_eq!(seqs, expected);
}

/// When the store already dropped some of what streamed before the webview connected, its
/// first message of the session is a declared resync, not a silent gap.
#[test]
fn a_webview_connecting_after_the_early_store_overflowed_gets_a_resync() {
    let c = clock();
    let config = HostConfig { max_batch: 1, max_buffered_events: 2, ..HostConfig::default() };
    let mut h = Host::new(crate::Engine::Kilo, config);
    push(&mut h, &c, "s", &["e0", "e1", "e2", "e3"]);
    settle(&mut h, &c);
    h.handle(Input::ready(0), c.now());
    push(&mut h, &c, "s", &["e4"]);
    let out = settle(&mut h, &c);
    let events = events_of(&out, 0);
    assert_eq!(events.first().and_then(|p| p.resync), Some(true), "{events:?}");
    assert!(!ids(&out, 0).contains(&"e0".to_owned()), "{out:?}");
}

/// A restarted bridge resumes a saved stream on its own, before a reconnecting webview's
/// `bb.init({lastSeen})` names its tabs: what was recorded meanwhile for the connection's
/// implicit tab (it never reached the webview) is not sent besides what the named tab gets
/// when it selects the session again. Each event once, on the named tab, numbered after
/// `lastSeen`.
#[test]
fn a_webview_reattaching_named_tabs_to_a_restarted_bridge_gets_each_event_once() {
    let c = clock();
    let config = HostConfig { max_batch: 4, ..HostConfig::default() };
    let mut h = Host::new(crate::Engine::Kilo, config);
    h.handle(Input::Opened(0), c.now());
    push(&mut h, &c, "x", &["x1", "x2"]);
    settle(&mut h, &c);
    let last_seen = [("tab-a".to_owned(), 7)].into_iter().collect();
    h.handle(Input::WebviewReady { conn: 0, last_seen }, c.now());
    let before_select = settle(&mut h, &c);
    let select = Input::Claimed { conn: 0, request_id: "s".into(), session_id: Some("x".into()) };
    h.handle(select, c.now());
    h.handle(used(0, "x", Some("tab-a")), c.now());
    h.handle(answered(0, "s"), c.now());
    push(&mut h, &c, "x", &["x3"]);
    let out = [before_select, settle(&mut h, &c)].concat();
    assert_eq!(ids(&out, 0), ["x1", "x2", "x3"], "each event once");
    let tabs: Vec<_> = events_of(&out, 0).iter().map(|p| p.tab_id.clone()).collect();
    assert!(tabs.iter().all(|t| t.as_deref() == Some("tab-a")), "{tabs:?}");
    let seqs: Vec<u64> = events_of(&out, 0).iter().filter_map(|p| p.seq).collect();
    assert_eq!(seqs.first(), Some(&8), "numbered after lastSeen: {seqs:?}");
}

/// A tab that starts showing a session another tab was already sent messages of (a second
/// window, or windows re-selecting their sessions one after the other on a restarted
/// bridge) gets a declared resync with the session's view, then the live events: never a
/// silent start in the middle.
#[test]
fn a_tab_binding_a_session_another_tab_shows_gets_a_declared_resync_first() {
    let c = clock();
    let mut h = two(&c);
    h.handle(used(0, "x", Some("tab-a")), c.now());
    push(&mut h, &c, "x", &["x1", "x2"]);
    let out = settle(&mut h, &c);
    assert_eq!(ids(&out, 0), ["x1", "x2"]);
    h.handle(used(1, "x", Some("tab-b")), c.now());
    push(&mut h, &c, "x", &["x3"]);
    let out = settle(&mut h, &c);
    let b = events_of(&out, 1);
    assert_eq!(b[0].resync, Some(true), "{b:?}");
    assert!(b[0].view.is_some() && b[0].events.is_empty(), "{b:?}");
    assert_eq!(ids(&out, 1), ["x3"], "then the live events");
    assert_eq!(ids(&out, 0), ["x3"], "the first tab goes on as before");
}
