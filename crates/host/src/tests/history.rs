//! Paged attach: a window that opens a long session is sent its recent turns (and what is
//! pending), and pages back through the rest with `Host::history`.

use bb_protocol::v1::{Receive, UpdatedView, V1Topic, WebviewUpdate};
use serde_json::json;

use super::{clock, drain, event_of, events_in, run_to_idle, summary};
use crate::{Clock, Engine, Host, HostConfig, Input, RECENT_TURNS};

/// `turns` Kilo turns of `session`: a user message and an assistant reply each.
fn kilo_turns(h: &Host, session: &str, turns: usize) -> Input {
    let mut events = Vec::new();
    for i in 0..turns {
        for (role, text) in
            [("user", format!("question {i}")), ("assistant", format!("answer {i}"))]
        {
            let msg = format!("msg_{role}{i}");
            events.push(event_of(
                &format!("e{i}{role}1"),
                "message.updated",
                json!({"sessionID": session, "info": {"id": msg, "sessionID": session, "role": role}}),
            ));
            events.push(event_of(
                &format!("e{i}{role}2"),
                "message.part.updated",
                json!({"sessionID": session, "part": {"id": format!("prt_{role}{i}"), "messageID": msg,
                       "sessionID": session, "type": "text", "text": text}}),
            ));
        }
    }
    events_in(h, session, events)
}

fn decode(u: &bb_protocol::v1::Updates) -> Vec<WebviewUpdate<'static>> {
    u.written().iter().map(|j| serde_json::from_str(j.get()).expect("an update decodes")).collect()
}

fn users(updates: &[WebviewUpdate<'_>]) -> usize {
    updates.iter().filter(|u| matches!(u, WebviewUpdate::UserMessage(_))).count()
}

#[test]
fn a_late_window_gets_the_recent_turns_then_pages_back_to_the_first() {
    let c = clock();
    let mut h = Host::new(Engine::Kilo, HostConfig::default());
    h.handle(Input::SessionUpserted(Box::new(summary("s"))), c.now());
    h.handle(Input::Receive { conn: 0, receive: Receive::Updates }, c.now());
    h.handle(Input::ready(0), c.now());
    h.handle(
        Input::SessionSelected { conn: 0, session_id: "s".into(), tab_id: Some("a".into()) },
        c.now(),
    );
    let turns = RECENT_TURNS * 2 + 7;
    let input = kilo_turns(&h, "s", turns);
    h.handle(input, c.now());
    // The first window saw every turn live.
    let mut live = UpdatedView::new();
    for t in run_to_idle(&mut h, &c) {
        if let V1Topic::Events(p) = t {
            live.apply_all(&decode(p.updates.as_ref().expect("updates")));
        }
    }
    // A second window opens the session: one resync, the last RECENT_TURNS turns.
    h.handle(Input::Receive { conn: 1, receive: Receive::Updates }, c.now());
    h.handle(Input::ready(1), c.now());
    h.handle(
        Input::SessionSelected { conn: 1, session_id: "s".into(), tab_id: Some("b".into()) },
        c.now(),
    );
    let resyncs: Vec<_> = drain(&mut h)
        .into_iter()
        .filter_map(|t| match t {
            V1Topic::Events(p) if p.tab_id.as_deref() == Some("b") => Some(p),
            _ => None,
        })
        .collect();
    assert_eq!(resyncs.len(), 1, "{resyncs:#?}");
    let resync = &resyncs[0];
    assert_eq!(resync.resync, Some(true));
    let recent = decode(resync.updates.as_ref().expect("updates"));
    assert_eq!(users(&recent), RECENT_TURNS);
    let earlier = resync.earlier.expect("older turns left out");
    assert_eq!(earlier.turns, (turns - RECENT_TURNS) as u64);
    let mut view = UpdatedView::new();
    view.apply_all(&recent);
    // Pages of 40 turns, each prepended, rebuild what the first window holds.
    let mut before = Some(earlier);
    let mut pages = 0;
    while let Some(e) = before {
        let page = h.history("s", e.before, Some(40)).expect("the session's view");
        assert!(users(&decode(&page.updates)) <= 40);
        view.prepend(&decode(&page.updates));
        before = page.earlier;
        pages += 1;
    }
    assert_eq!(pages, 2, "{} older turns in pages of 40", turns - RECENT_TURNS);
    assert_eq!(view, live);
    assert!(h.history("gone", 1, None).is_none(), "a session without a view has no history");
}
