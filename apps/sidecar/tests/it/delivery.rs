//! Delivery through `bb-sidecar`'s stdio on BreadBoard (the demo and the fake engine): tabs,
//! per-tab `seq`, classes and `messageId` on items, two tabs without cross-talk, a recreated
//! webview replayed from `lastSeen` (exactly, or a declared resync past the ring), and a
//! webview hidden across 10,000 events.

use std::time::Duration;

use bb_fake_engine::{EngineConfig, FakeEngine, RunningEngine, ScriptSource};
use serde_json::{Value, json};

use crate::harness::{Sidecar, World, eventually};

const WAIT: Duration = Duration::from_secs(120);

/// Reads `bb/events` messages (whole payloads) until one holds an event of type `until`.
fn messages_until(sidecar: &mut Sidecar, until: &str) -> Vec<Value> {
    crate::harness::messages_until(sidecar, None, until)
}

fn seqs(messages: &[Value]) -> Vec<u64> {
    messages.iter().map(|m| m["seq"].as_u64().expect("every message has a seq")).collect()
}

fn demo(world: &World) -> Sidecar {
    let workspace = world.path("project").display().to_string();
    Sidecar::spawn(&["--workspace", &workspace], &world.env(), world.path("demo.err"))
}

/// A fake engine playing `script` for every message, and a sidecar attached to it.
fn attached(world: &World, script: String) -> (tokio::runtime::Runtime, RunningEngine, Sidecar) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let engine = runtime
        .block_on(
            FakeEngine::new(EngineConfig {
                ring_capacity: 20_000,
                default_workspace: world.path("project"),
                scripts: vec![ScriptSource::Inline(script)],
                ..EngineConfig::default()
            })
            .serve("127.0.0.1:0".parse().unwrap()),
        )
        .unwrap();
    let url = engine.url().to_owned();
    let state = world.path("state").display().to_string();
    let args = [
        "--engine",
        "breadboard",
        "--engine-url",
        &url,
        "--engine-config",
        "agent.yaml",
        "--state-dir",
        &state,
    ];
    let sidecar = Sidecar::spawn(&args, &world.env(), world.path("sidecar.err"));
    (runtime, engine, sidecar)
}

#[test]
fn every_message_has_its_tab_and_seq_and_every_item_its_class() {
    let world = World::new();
    let mut sidecar = demo(&world);
    sidecar.ok("bb.init", json!({}));
    let created = sidecar.ok("bb.createSession", json!({"tabId": "tab-1"}));
    let session = created["sessionId"].as_str().unwrap().to_owned();
    sidecar.ok(
        "bb.sendMessage",
        json!({"sessionId": session, "text": "Create a Makefile", "messageId": "msg-1"}),
    );
    let messages = messages_until(&mut sidecar, "permission_request");
    assert!(messages.iter().all(|m| m["tabId"] == "tab-1" && m["sessionId"] == session.as_str()));
    let s = seqs(&messages);
    assert_eq!(s, (1..=s.len() as u64).collect::<Vec<_>>(), "seq from 1, +1, no gap");
    let items: Vec<&Value> =
        messages.iter().flat_map(|m| m["events"].as_array().unwrap()).collect();
    for item in &items {
        assert!(item["class"].is_string(), "class on every item: {item}");
    }
    let class_of = |t: &str| items.iter().find(|e| e["type"] == t).map(|e| e["class"].clone());
    assert_eq!(class_of("tool_result"), Some(json!("tool.result")));
    assert_eq!(class_of("tool_call"), Some(json!("tool.call")));
    assert_eq!(class_of("permission_request"), Some(json!("permission.request")));
    let reply = items.iter().find(|e| e["type"] == "assistant.message.delta").unwrap();
    assert_eq!(reply["class"], "transcript.assistant_stream");
    assert_eq!(reply["messageId"], "msg-1", "the reply's events carry the messageId");
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(WAIT).success());
}

#[test]
fn two_tabs_on_two_sessions_never_cross() {
    let world = World::new();
    let mut sidecar = demo(&world);
    sidecar.ok("bb.init", json!({}));
    let a = sidecar.ok("bb.createSession", json!({"tabId": "tab-a"}))["sessionId"].clone();
    let b = sidecar.ok("bb.createSession", json!({"tabId": "tab-b"}))["sessionId"].clone();
    sidecar.ok("bb.sendMessage", json!({"sessionId": a, "text": "one"}));
    sidecar.ok("bb.sendMessage", json!({"sessionId": b, "text": "two"}));
    let mut by_tab: std::collections::BTreeMap<String, Vec<Value>> = Default::default();
    let mut waiting = 2;
    while waiting > 0 {
        let m = sidecar.wait_event(WAIT, "both permission prompts", |m| m["topic"] == "bb/events");
        let p = m["payload"].clone();
        let tab = p["tabId"].as_str().unwrap().to_owned();
        waiting -= p["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "permission_request")
            .count();
        by_tab.entry(tab).or_default().push(p);
    }
    assert_eq!(by_tab.keys().collect::<Vec<_>>(), ["tab-a", "tab-b"]);
    for (tab, session) in [("tab-a", &a), ("tab-b", &b)] {
        let mine = &by_tab[tab];
        assert!(mine.iter().all(|m| &m["sessionId"] == session), "{tab} shows only {session}");
        let s = seqs(mine);
        assert_eq!(s, (1..=s.len() as u64).collect::<Vec<_>>());
    }
}

/// 100 events of ~100 KB each: far more than a tab's 8 MiB ring.
fn bulky_script(count: usize, note_bytes: usize) -> String {
    let note = "n".repeat(note_bytes);
    (0..count)
        .map(|i| json!({"type": "log_link", "payload": {"url": format!("https://logs/{i}"), "note": note}}).to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_recreated_webview_gets_exactly_what_it_missed_or_a_declared_resync() {
    let world = World::new();
    let (_rt, _engine, mut sidecar) = attached(&world, bulky_script(100, 100_000));
    sidecar.ok("bb.init", json!({}));
    let session = sidecar.ok("bb.createSession", json!({"tabId": "t"}))["sessionId"].clone();
    sidecar.ok("bb.sendMessage", json!({"sessionId": session, "text": "go"}));
    let first = messages_until(&mut sidecar, "run_finished");
    let s = seqs(&first);
    let last = *s.last().unwrap();
    assert_eq!(s, (1..=last).collect::<Vec<_>>());
    for m in &first {
        assert!(m.to_string().len() < 1024 * 1024, "every message is under the limit");
    }

    // The webview is recreated and says it saw all but the last message: the ring keeps
    // 256 KiB of what was handed, and always the newest message, whatever its size (the
    // messages before it here are up to 1 MiB each, so how many more fit depends on how
    // the events were batched).
    sidecar.ok("bb.init", json!({"lastSeen": {"t": last - 1}}));
    let replay =
        sidecar.wait_event(WAIT, "the replay", |m| m["topic"] == "bb/events")["payload"].clone();
    assert_eq!(replay, first[first.len() - 1], "exactly the missed message, unchanged");

    // A webview that saw only the first message is behind the ring: a declared resync.
    sidecar.ok("bb.init", json!({"lastSeen": {"t": 1}}));
    let resync =
        sidecar.wait_event(WAIT, "the resync", |m| m["topic"] == "bb/events")["payload"].clone();
    assert_eq!(resync["resync"], true);
    assert_eq!(resync["seq"], last + 1, "a resync takes the next seq");
    assert_eq!(resync["sessionId"], session);
    let links = resync["view"]["run"]["logLinks"].as_array().unwrap();
    assert_eq!(links.len(), 100, "the view model holds every event");
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(WAIT).success());
}

#[test]
fn hidden_across_ten_thousand_events_then_shown_delivers_each_once_in_order() {
    let world = World::new();
    let (_rt, engine, mut sidecar) = attached(&world, bulky_script(10_000, 8));
    sidecar.ok("bb.init", json!({}));
    let session = sidecar.ok("bb.createSession", json!({"tabId": "t"}))["sessionId"].clone();
    let before = messages_until(&mut sidecar, "skills_selection");
    let shown_until = *seqs(&before).last().unwrap();
    sidecar.ok("bb.visibility", json!({"visible": false}));
    sidecar.ok("bb.sendMessage", json!({"sessionId": session, "text": "go"}));
    // The engine plays the whole turn while the webview is hidden.
    let sid = session.as_str().unwrap().to_owned();
    eventually(WAIT, "the engine's turn to end", || {
        engine.engine().last_seq(&sid).is_some_and(|seq| seq >= 10_000)
    });
    sidecar.ok("bb.visibility", json!({"visible": true}));
    let after = messages_until(&mut sidecar, "run_finished");
    let s = seqs(&after);
    assert_eq!(s, (shown_until + 1..=shown_until + s.len() as u64).collect::<Vec<_>>());
    let urls: Vec<String> = after
        .iter()
        .flat_map(|m| m["events"].as_array().unwrap().clone())
        .filter(|e| e["type"] == "log_link")
        .map(|e| e["payload"]["url"].as_str().unwrap().to_owned())
        .collect();
    let expected: Vec<String> = (0..10_000).map(|i| format!("https://logs/{i}")).collect();
    assert_eq!(urls, expected, "every event once, in order");
    // Held while hidden: nothing of the turn was written before the webview was shown.
    let shown_at = sidecar.seen.iter().position(|l| l.contains("\"visible\":true")).unwrap();
    let early = sidecar.seen[..shown_at].iter().any(|l| l.contains("https://logs/0\""));
    assert!(!early, "events reached the hidden webview");
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(WAIT).success());
}

#[test]
fn bb_state_reports_the_engines_own_session_status() {
    let world = World::new();
    let script = [
        json!({"type": "assistant.message.delta", "payload": {"delta": "working"}}).to_string(),
        json!({"type": "no_such_event_type", "payload": {}}).to_string(),
    ]
    .join("\n");
    let (_rt, _engine, mut sidecar) = attached(&world, script);
    sidecar.ok("bb.init", json!({}));
    let session =
        sidecar.ok("bb.createSession", json!({}))["sessionId"].as_str().unwrap().to_owned();
    sidecar.ok("bb.sendMessage", json!({"sessionId": session, "text": "go"}));
    // The engine fails the run on the unknown event type; its listing says so.
    let mut status = Value::Null;
    eventually(WAIT, "the engine to fail the run", || {
        status = sidecar.ok("bb.listSessions", json!({}))["sessions"][0]["status"].clone();
        status == "failed"
    });
    let state = sidecar.state(WAIT, "the failed session in bb/state", |s| {
        s["sessions"].as_array().is_some_and(|l| {
            l.iter().any(|x| x["sessionId"] == session.as_str() && x["status"] == "failed")
        })
    });
    assert_eq!(state["running"], false, "running comes from the events: the run ended");
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(WAIT).success());
}

/// `bb/events` messages until one carries an update of `kind` for which `pred` holds.
fn updates_until(
    sidecar: &mut Sidecar,
    kind: &str,
    mut pred: impl FnMut(&Value) -> bool,
) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        let m = sidecar.wait_event(WAIT, kind, |m| m["topic"] == "bb/events");
        let payload = m["payload"].clone();
        let done = payload["updates"]
            .as_array()
            .is_some_and(|u| u.iter().any(|u| u["kind"] == kind && pred(u)));
        out.push(payload);
        if done {
            return out;
        }
    }
}

#[test]
fn a_webview_that_asks_for_updates_gets_them_and_keeps_them_across_a_later_init() {
    let world = World::new();
    let mut sidecar = demo(&world);
    sidecar.ok("bb.init", json!({"receive": "updates"}));
    let created = sidecar.ok("bb.createSession", json!({"tabId": "tab-1"}));
    let session = created["sessionId"].as_str().unwrap().to_owned();
    sidecar.ok(
        "bb.sendMessage",
        json!({"sessionId": session, "text": "Create a Makefile", "messageId": "msg-1"}),
    );
    let mut messages = updates_until(&mut sidecar, "permissionRequest", |_| true);
    // A later `bb.init` that says nothing of `receive` (trust granted) keeps the updates.
    sidecar.ok("bb.init", json!({"workspaceTrusted": true}));
    let asked = messages
        .iter()
        .flat_map(|m| m["updates"].as_array().unwrap())
        .find(|u| u["kind"] == "permissionRequest")
        .unwrap()
        .clone();
    assert_eq!(asked["prompt"], "Edit Makefile", "{asked}");
    assert_eq!(asked["messageId"], "msg-1", "{asked}");
    sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": asked["permissionId"], "decision": "allow_once"}),
    );
    messages.extend(updates_until(&mut sidecar, "run", |u| u["outcome"] == "done"));
    assert!(messages.iter().all(|m| m["events"] == json!([]) && m["tabId"] == "tab-1"));
    let s = seqs(&messages);
    assert_eq!(s, (1..=s.len() as u64).collect::<Vec<_>>(), "seq from 1, +1, no gap");
    // What a webview rebuilds from them: the reply under its message, the approval settled.
    let mut view = bb_protocol::v1::UpdatedView::new();
    for m in &messages {
        for u in m["updates"].as_array().unwrap() {
            view.apply(&serde_json::from_value(u.clone()).unwrap());
        }
    }
    assert_eq!(view.missed, 0);
    let texts: Vec<(&Option<std::borrow::Cow<'_, str>>, &str)> = view
        .blocks
        .iter()
        .filter_map(|(_, b)| match b {
            bb_protocol::v1::AppliedBlock::Text(m, text) => Some((&m.message_id, text.as_str())),
            _ => None,
        })
        .collect();
    let last = texts.last().unwrap();
    assert_eq!(last.0.as_deref(), Some("msg-1"));
    assert!(last.1.ends_with("Run `make` to try it."), "{texts:?}");
    let settled = view.blocks.iter().any(|(_, b)| {
        matches!(b, bb_protocol::v1::AppliedBlock::Ask(a) if a.resolved && a.decision.as_deref() == Some("allowed once"))
    });
    assert!(settled, "{:?}", view.blocks);
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(WAIT).success());
}

/// A new window on a long session (through the binary): a second tab opening it is sent its
/// last 50 turns and `earlier`; `bb.history` pages back to the first, and the pages put
/// before the first page rebuild what the first tab holds.
#[test]
fn a_late_tab_gets_the_recent_turns_and_pages_back_with_bb_history() {
    let world = World::new();
    let turns = 70;
    let script = (0..turns)
        .flat_map(|i| {
            [
                json!({"type": "user_message", "payload": {"text": format!("question {i}")}}),
                json!({"type": "assistant_message", "payload": {"message_id": format!("m{i}"), "text": format!("answer {i}")}}),
            ]
        })
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    let (_rt, _engine, mut sidecar) = attached(&world, script);
    sidecar.ok("bb.init", json!({"receive": "updates"}));
    let session = sidecar.ok("bb.createSession", json!({"tabId": "a"}))["sessionId"].clone();
    sidecar.ok("bb.sendMessage", json!({"sessionId": session, "text": "go"}));
    let mut seen = bb_protocol::v1::UpdatedView::new();
    for m in updates_until(&mut sidecar, "run", |u| u["outcome"] == "done") {
        for u in m["updates"].as_array().unwrap() {
            seen.apply(&serde_json::from_value(u.clone()).unwrap());
        }
    }
    // A second tab opens the session: one resync, the last 50 turns.
    sidecar.ok("bb.selectSession", json!({"sessionId": session, "tabId": "b"}));
    let resync = sidecar.wait_event(WAIT, "tab b's resync", |m| {
        m["topic"] == "bb/events" && m["payload"]["tabId"] == "b"
    })["payload"]
        .clone();
    assert_eq!(resync["resync"], true);
    let recent = resync["updates"].as_array().unwrap();
    let users = |u: &[Value]| u.iter().filter(|u| u["kind"] == "userMessage").count();
    assert_eq!(users(recent), 50, "{resync}");
    let total = users(recent) as u64 + resync["earlier"]["turns"].as_u64().unwrap();
    assert!(total > 70, "the script's turns and the prompt's own: {total}");
    let mut view = bb_protocol::v1::UpdatedView::new();
    for u in recent {
        view.apply(&serde_json::from_value(u.clone()).unwrap());
    }
    let mut before = resync["earlier"]["before"].clone();
    let mut pages = 0;
    while !before.is_null() {
        let page =
            sidecar.ok("bb.history", json!({"sessionId": session, "before": before, "limit": 8}));
        let older: Vec<bb_protocol::v1::WebviewUpdate<'static>> =
            serde_json::from_value(page["updates"].clone()).unwrap();
        assert!(users(page["updates"].as_array().unwrap()) <= 8);
        view.prepend(&older);
        before = page["earlier"]["before"].clone();
        pages += 1;
    }
    assert_eq!(pages, 3, "{total} turns, 50 then pages of 8");
    assert_eq!(view.blocks, seen.blocks, "tab b rebuilt what tab a holds");
    // A session the bridge holds no view of says so.
    let refused = sidecar.call("bb.history", json!({"sessionId": "nope", "before": 3}));
    assert_eq!(refused["error"]["code"], "session_not_found", "{refused}");
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(WAIT).success());
}
