//! Every capture fed through the host, a webview receiving updates: the page state its
//! updates build is the same whether the events come in one go or in the lanes' batches,
//! with every message delivered twice, with a resync part-way (a declared one after a
//! hidden spell, or a second tab opening the session), and it is what a tab opening the
//! session at the end is sent. A webview that does not ask for updates gets the same messages
//! whether or not another one does.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bb_host::{Clock, ConnId, Engine, FakeClock, Host, HostConfig, Input};
use bb_normalize::RawEvent;
use bb_protocol::v1::{
    EngineEvent, EventsPayload, Receive, UpdatedView, V1Event, V1Message, V1Topic,
};

use crate::captures::{captures, read};

const SESSION: &str = "s1";

#[allow(clippy::disallowed_methods)] // one real instant to start the fake clock from
fn clock() -> FakeClock {
    FakeClock::new(Instant::now(), 1_700_000_000_000)
}

/// What a page holds: per session, the view its updates built.
#[derive(Debug, Default)]
struct Page {
    views: BTreeMap<String, UpdatedView>,
    messages: u64,
}

impl Page {
    fn apply(&mut self, p: &EventsPayload) {
        self.messages += 1;
        let view = self.views.entry(p.session_id.to_string()).or_default();
        if p.resync == Some(true) {
            *view = UpdatedView::new();
        }
        for u in p.updates.as_ref().map(|u| u.items()).unwrap_or_default() {
            view.apply(&u);
        }
    }

    fn view(&self) -> UpdatedView {
        self.views.get(SESSION).cloned().unwrap_or_default()
    }
}

/// A host with connection `conn` ready, receiving `receive`, showing the session in tab
/// `tab` (a named tab, or its implicit one).
fn open(h: &mut Host, c: &FakeClock, conn: ConnId, receive: Receive, tab: Option<&str>) {
    h.handle(Input::Opened(conn), c.now());
    h.handle(Input::Receive { conn, receive }, c.now());
    h.handle(Input::ready(conn), c.now());
    let select =
        Input::SessionSelected { conn, session_id: SESSION.into(), tab_id: tab.map(str::to_owned) };
    h.handle(select, c.now());
}

fn drain(h: &mut Host, out: &mut Vec<(ConnId, V1Topic)>) {
    out.extend(std::iter::from_fn(|| h.poll_output()));
}

/// Feeds `events` `chunk` at a time, 1 ms apart, publishing what is due after each chunk;
/// `between(h, c, i)` runs before chunk `i`. Returns every topic sent, in order.
fn feed(
    h: &mut Host,
    c: &FakeClock,
    events: &[EngineEvent],
    chunk: usize,
    mut between: impl FnMut(&mut Host, &FakeClock, usize, &mut Vec<(ConnId, V1Topic)>),
) -> Vec<(ConnId, V1Topic)> {
    let mut out = Vec::new();
    drain(h, &mut out);
    for (i, part) in events.chunks(chunk.max(1)).enumerate() {
        between(h, c, i, &mut out);
        let engine = h.engine();
        let events = part
            .iter()
            .map(|e| {
                let raw = RawEvent::new(engine, e.event_type.clone(), e.payload.clone());
                (e.clone(), bb_normalize::classify(&raw))
            })
            .collect();
        h.handle(Input::Events { session_id: SESSION.into(), events }, c.now());
        c.advance(Duration::from_millis(1));
        h.handle_timeout(c.now());
        drain(h, &mut out);
    }
    while let Some(at) = h.poll_timeout() {
        c.advance_to(at);
        h.handle_timeout(c.now());
        drain(h, &mut out);
    }
    out
}

fn messages(out: &[(ConnId, V1Topic)], conn: ConnId) -> Vec<EventsPayload> {
    out.iter()
        .filter_map(|(c, t)| match t {
            V1Topic::Events(p) if *c == conn => Some(p.clone()),
            _ => None,
        })
        .collect()
}

fn page_of(messages: &[EventsPayload], times: usize) -> Page {
    let mut page = Page::default();
    for m in messages {
        for _ in 0..times {
            page.apply(m);
        }
    }
    page
}

/// What a tab that opens the session now is sent: the session's view as updates.
fn opened_now(h: &mut Host, c: &FakeClock, conn: ConnId) -> UpdatedView {
    open(h, c, conn, Receive::Updates, Some("late"));
    let mut out = Vec::new();
    drain(h, &mut out);
    let sent = messages(&out, conn);
    assert!(sent.first().is_some_and(|m| m.resync == Some(true)), "a snapshot first");
    page_of(&sent, 1).view()
}

fn host_of(engine: Engine, config: HostConfig) -> Host {
    Host::new(engine, config)
}

#[test]
fn the_updates_rebuild_the_same_page_however_they_are_delivered() {
    let all = captures();
    assert!(all.iter().any(|(e, _)| *e == Engine::Acp), "no ACP capture under fixtures/engine/acp");
    assert!(all.len() >= 45, "captures missing: {}", all.len());
    let mut tested = 0;
    for (engine, path) in all {
        let name = path.display().to_string();
        let events = read(engine, &path);
        if events.is_empty() {
            // A capture of a refused or empty stream (a 409 body, an idle resume).
            continue;
        }
        tested += 1;

        // In the lanes' batches (8 events a millisecond), as a page receives them.
        let c = clock();
        let mut h = host_of(engine, HostConfig::default());
        open(&mut h, &c, 1, Receive::Updates, Some("t1"));
        let out = feed(&mut h, &c, &events, 8, |_, _, _, _| {});
        let sent = messages(&out, 1);
        assert!(
            sent.iter().all(|m| m.events.is_empty() && m.view.is_none()),
            "{name}: updates only"
        );
        let batched = page_of(&sent, 1);
        let expected = opened_now(&mut h, &c, 2);
        assert_eq!(expected.missed, 0, "{name}");
        assert_eq!(batched.view(), expected, "{name}: in batches");
        // Every message delivered twice.
        assert_eq!(page_of(&sent, 2).view(), expected, "{name}: every message twice");

        // In one go: one input, one flush.
        let c = clock();
        let mut h = host_of(engine, HostConfig::default());
        open(&mut h, &c, 1, Receive::Updates, Some("t1"));
        let out = feed(&mut h, &c, &events, events.len(), |_, _, _, _| {});
        assert_eq!(page_of(&messages(&out, 1), 1).view(), expected, "{name}: in one go");

        // A declared resync part-way: hidden while more than its ring holds goes by.
        let c = clock();
        let config = HostConfig { max_buffered_events: 1, ..HostConfig::default() };
        let mut h = host_of(engine, config);
        open(&mut h, &c, 1, Receive::Updates, Some("t1"));
        let half = events.len().div_ceil(8) / 2;
        let mut out = feed(&mut h, &c, &events, 8, |h, c, i, _| {
            if i == half.saturating_sub(2) {
                h.handle(Input::visibility(1, false), c.now());
            }
            if i == half + 2 {
                h.handle(Input::visibility(1, true), c.now());
            }
        });
        h.handle(Input::visibility(1, true), c.now());
        drain(&mut h, &mut out);
        let page = page_of(&messages(&out, 1), 1);
        assert_eq!(page.view(), expected, "{name}: resync after a hidden spell");

        // A second tab opens the session part-way: its snapshot, then what follows.
        let c = clock();
        let mut h = host_of(engine, HostConfig::default());
        open(&mut h, &c, 1, Receive::Updates, Some("t1"));
        let out = feed(&mut h, &c, &events, 8, |h, c, i, _| {
            if i == half {
                open(h, c, 3, Receive::Updates, Some("t3"));
            }
        });
        let second = messages(&out, 3);
        if half > 0 {
            let first = second.first();
            assert!(first.is_some_and(|m| m.resync == Some(true)), "{name}: a snapshot first");
        }
        assert_eq!(page_of(&second, 1).view(), expected, "{name}: second tab part-way");
    }
    assert!(tested >= 40, "only {tested} captures with events");
}

/// Every `bb/events` line sent to `conn`, as written.
fn lines(out: &[(ConnId, V1Topic)], conn: ConnId) -> Vec<String> {
    out.iter()
        .filter(|(c, _)| *c == conn)
        .map(|(_, t)| {
            let line = V1Message::Event(V1Event::new(t.clone())).to_line(&Default::default());
            line.expect("a valid line")
        })
        .collect()
}

#[test]
fn a_webview_that_does_not_ask_gets_the_same_messages_as_before() {
    for (engine, path) in captures() {
        let events = read(engine, &path);
        let run = |with_updates_peer: bool| {
            let c = clock();
            let mut h = host_of(engine, HostConfig::default());
            h.handle(Input::Opened(0), c.now());
            h.handle(Input::ready(0), c.now());
            h.handle(Input::select(0, SESSION), c.now());
            if with_updates_peer {
                open(&mut h, &c, 1, Receive::Updates, Some("t1"));
            }
            let out = feed(&mut h, &c, &events, 8, |_, _, _, _| {});
            lines(&out, 0)
        };
        let alone = run(false);
        let beside = run(true);
        assert!(alone.iter().all(|l| !l.contains("\"updates\"")), "{}", path.display());
        assert_eq!(alone, beside, "{}", path.display());
    }
}

#[test]
fn both_carries_the_events_and_their_updates() {
    let (engine, path) = captures().into_iter().find(|(e, _)| *e == Engine::Kilo).unwrap();
    let events = read(engine, &path);
    let c = clock();
    let mut h = host_of(engine, HostConfig::default());
    open(&mut h, &c, 0, Receive::Events, Some("t0"));
    open(&mut h, &c, 1, Receive::Both, Some("t1"));
    let out = feed(&mut h, &c, &events, 8, |_, _, _, _| {});
    let sent = messages(&out, 1);
    let ids = |m: &[EventsPayload]| -> Vec<String> {
        m.iter().flat_map(|p| p.events.ids().map(str::to_owned)).collect()
    };
    assert_eq!(ids(&sent), ids(&messages(&out, 0)), "the events, as an events webview gets them");
    let expected = opened_now(&mut h, &c, 2);
    assert_eq!(page_of(&sent, 1).view(), expected);
}

fn breadboard(kind: &str, payload: serde_json::Value) -> EngineEvent {
    EngineEvent {
        id: Default::default(),
        event_type: kind.to_owned().into(),
        turn: None,
        ts: None,
        payload: payload.as_object().cloned().unwrap_or_default().into(),
    }
}

#[test]
fn an_update_too_large_for_a_message_is_fetched_by_its_reference() {
    let c = clock();
    let config = HostConfig { max_message_bytes: 48 * 1024, ..HostConfig::default() };
    let mut h = host_of(Engine::BreadBoard, config);
    open(&mut h, &c, 1, Receive::Updates, Some("t1"));
    let text = "0123456789abcdef".repeat(4 * 1024); // 64 KiB: one piece, over half a message
    let reply = breadboard("assistant_message", serde_json::json!({"text": text}));
    let out = feed(&mut h, &c, &[reply], 1, |_, _, _, _| {});
    let sent = messages(&out, 1);
    let updates: Vec<_> = sent.iter().flat_map(|m| m.updates.as_ref().unwrap().items()).collect();
    let reference = updates
        .iter()
        .find_map(|u| match u {
            bb_protocol::v1::WebviewUpdate::Oversized(o) => Some(o.body_ref.to_string()),
            _ => None,
        })
        .expect("an oversized update");
    for m in &sent {
        let bytes = V1Message::Event(V1Event::new(V1Topic::Events(m.clone())))
            .to_line(&Default::default())
            .unwrap()
            .len();
        assert!(bytes <= 48 * 1024, "{bytes}");
    }
    // Its JSON, fetched, is the update that was left out: applied, the page holds the text.
    let json = h.session_body(SESSION, &reference).expect("held");
    let whole: bb_protocol::v1::WebviewUpdate<'static> = serde_json::from_str(json).unwrap();
    let mut view = page_of(&sent, 1).view();
    view.apply(&whole);
    let held = view.blocks.iter().find_map(|(_, b)| match b {
        bb_protocol::v1::AppliedBlock::Text(_, t) => Some(t.clone()),
        _ => None,
    });
    assert_eq!(held.as_deref(), Some(text.as_str()));
}

#[test]
fn a_webview_that_changes_what_it_receives_is_resynced() {
    let (engine, path) = captures().into_iter().find(|(e, _)| *e == Engine::Kilo).unwrap();
    let events = read(engine, &path);
    let c = clock();
    let mut h = host_of(engine, HostConfig::default());
    open(&mut h, &c, 1, Receive::Events, Some("t1"));
    let mut out = feed(&mut h, &c, &events, 8, |_, _, _, _| {});
    assert!(messages(&out, 1).iter().all(|m| m.updates.is_none()));
    // The same connection asks for updates now (a page upgraded in place).
    h.handle(Input::Receive { conn: 1, receive: Receive::Updates }, c.now());
    drain(&mut h, &mut out);
    let after: Vec<EventsPayload> =
        messages(&out, 1).into_iter().filter(|m| m.updates.is_some()).collect();
    assert!(after.first().is_some_and(|m| m.resync == Some(true)), "a resync first");
    assert_eq!(page_of(&after, 1).view(), opened_now(&mut h, &c, 2));
}
