//! Resume positions with several windows (`Host::poll_resume`): a session's position moves
//! only past what every tab showing it was written — a slow, hidden or detached window holds
//! it back —, a tab that stops showing the session stops holding it, a webview receiving
//! updates counts like one receiving events, and a session no tab shows keeps its position.
//! Simulated time.

use std::collections::BTreeMap;

use bb_protocol::v1::{Receive, V1Topic};

use super::{clock, ev, events_in};
use crate::{Clock, ConnId, Engine, FakeClock, Host, HostConfig, Input};

fn host() -> (Host, FakeClock) {
    let config = HostConfig { max_batch: 4, ..HostConfig::default() };
    (Host::new(Engine::Kilo, config), clock())
}

/// Runs the clock to idle; per tab, the last `seq` handed over.
fn settle(h: &mut Host, c: &FakeClock) -> BTreeMap<String, u64> {
    let mut last = BTreeMap::new();
    let mut take = |h: &mut Host| {
        while let Some((_, topic)) = h.poll_output() {
            if let V1Topic::Events(p) = topic
                && let (Some(tab), Some(seq)) = (p.tab_id, p.seq)
            {
                last.insert(tab.to_string(), seq);
            }
        }
    };
    take(h);
    while let Some(at) = h.poll_timeout() {
        c.advance_to(at);
        h.handle_timeout(c.now());
        take(h);
    }
    last
}

fn window(h: &mut Host, c: &FakeClock, conn: ConnId, tab: &str, session: &str) {
    h.handle(Input::ready(conn), c.now());
    let select =
        Input::SessionSelected { conn, session_id: session.into(), tab_id: Some(tab.into()) };
    h.handle(select, c.now());
}

fn stream(h: &mut Host, c: &FakeClock, session: &str, ids: &[&str]) {
    let input = events_in(h, session, ids.iter().map(|id| ev(id)).collect());
    h.handle(input, c.now());
}

fn written(h: &mut Host, c: &FakeClock, tab: &str, seq: u64) {
    h.handle(Input::Written(vec![(tab.into(), seq)]), c.now());
}

fn positions(h: &mut Host) -> Vec<(String, String)> {
    std::iter::from_fn(|| h.poll_resume()).collect()
}

fn at(session: &str, id: &str) -> Vec<(String, String)> {
    vec![(session.to_owned(), id.to_owned())]
}

#[test]
fn a_position_moves_only_past_what_every_window_showing_the_session_was_written() {
    let (mut h, c) = host();
    window(&mut h, &c, 1, "a", "s");
    window(&mut h, &c, 2, "b", "s");
    stream(&mut h, &c, "s", &["e1", "e2", "e3"]);
    let sent = settle(&mut h, &c);
    assert!(positions(&mut h).is_empty(), "nothing is written yet");
    // The first window is written everything, the second (slow) nothing.
    written(&mut h, &c, "a", sent["a"]);
    assert!(positions(&mut h).is_empty(), "the slow window was written nothing");
    written(&mut h, &c, "b", sent["b"]);
    assert_eq!(positions(&mut h), at("s", "e3"));

    // The slow window's connection closes: its detached tab still holds the position.
    stream(&mut h, &c, "s", &["e4", "e5"]);
    let sent = settle(&mut h, &c);
    written(&mut h, &c, "a", sent["a"]);
    h.handle(Input::Closed(2), c.now());
    assert!(positions(&mut h).is_empty(), "a detached window holds the position");
    // It comes back (a new connection reattaching its tab) and is written what it missed.
    let last_seen = BTreeMap::from([("b".to_owned(), 1)]);
    h.handle(Input::WebviewReady { conn: 3, last_seen }, c.now());
    let replayed = settle(&mut h, &c);
    assert!(positions(&mut h).is_empty(), "replayed, not yet written");
    written(&mut h, &c, "b", replayed["b"]);
    assert_eq!(positions(&mut h), at("s", "e5"));
    // Nothing moves twice.
    written(&mut h, &c, "b", replayed["b"]);
    assert!(positions(&mut h).is_empty());
}

#[test]
fn a_tab_that_stops_showing_the_session_stops_holding_it() {
    let (mut h, c) = host();
    window(&mut h, &c, 1, "a", "s");
    window(&mut h, &c, 2, "b", "s");
    stream(&mut h, &c, "s", &["e1", "e2"]);
    let sent = settle(&mut h, &c);
    written(&mut h, &c, "a", sent["a"]);
    assert!(positions(&mut h).is_empty());
    // The second window's tab switches to another session.
    let select =
        Input::SessionSelected { conn: 2, session_id: "t".into(), tab_id: Some("b".into()) };
    h.handle(select, c.now());
    assert_eq!(positions(&mut h), at("s", "e2"));
}

#[test]
fn a_window_receiving_updates_holds_and_moves_the_position_like_one_receiving_events() {
    let (mut h, c) = host();
    window(&mut h, &c, 1, "a", "s");
    h.handle(Input::Receive { conn: 2, receive: Receive::Updates }, c.now());
    window(&mut h, &c, 2, "b", "s");
    let text = |id: &str, delta: &str| {
        super::event_of(id, "assistant.message.delta", serde_json::json!({"delta": delta}))
    };
    let input = events_in(&h, "s", vec![text("e1", "hello "), text("e2", "world")]);
    h.handle(input, c.now());
    let sent = settle(&mut h, &c);
    assert!(sent.contains_key("b"), "the updates window was sent its updates: {sent:?}");
    written(&mut h, &c, "a", sent["a"]);
    assert!(positions(&mut h).is_empty(), "the updates window was written nothing yet");
    written(&mut h, &c, "b", sent["b"]);
    assert_eq!(positions(&mut h), at("s", "e2"));
}

#[test]
fn a_session_no_window_shows_keeps_its_position_until_one_is_written_it() {
    let (mut h, c) = host();
    // A window that names its tabs shows another session.
    window(&mut h, &c, 1, "a", "other");
    stream(&mut h, &c, "s", &["e1", "e2"]);
    settle(&mut h, &c);
    let sent = settle(&mut h, &c);
    assert!(!sent.contains_key("a"));
    assert!(positions(&mut h).is_empty(), "no window shows the session");
    // A window selects it: handed what the session streamed so far, written, the position
    // moves.
    window(&mut h, &c, 2, "b", "s");
    let sent = settle(&mut h, &c);
    written(&mut h, &c, "b", sent["b"]);
    assert_eq!(positions(&mut h), at("s", "e2"));
}

#[test]
fn a_window_written_in_parts_moves_the_position_to_each_part() {
    let (mut h, c) = host();
    window(&mut h, &c, 1, "a", "s");
    stream(&mut h, &c, "s", &["e1", "e2", "e3", "e4"]);
    let first = settle(&mut h, &c);
    stream(&mut h, &c, "s", &["e5", "e6", "e7", "e8"]);
    let second = settle(&mut h, &c);
    assert!(second["a"] > first["a"]);
    written(&mut h, &c, "a", first["a"]);
    assert_eq!(positions(&mut h), at("s", "e4"));
    written(&mut h, &c, "a", second["a"]);
    assert_eq!(positions(&mut h), at("s", "e8"));
}
