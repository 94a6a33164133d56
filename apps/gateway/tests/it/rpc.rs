//! The WebSocket envelope end to end: `bb.*` with v1 topics as event names, exactly one
//! response per request, platform and ACP methods, size limits, isolated connections.

use serde_json::{Value, json};

use crate::harness::Gateway;

fn events_of<'a>(events: &'a [Value], name: &str) -> impl Iterator<Item = &'a Value> {
    events.iter().filter(move |e| e["event"] == name)
}

#[tokio::test]
async fn bb_methods_are_served_with_v1_topics_as_event_names() {
    // Trusted: the demo's edit is approved below.
    let gw = Gateway::start(&["--trusted"]);
    let mut c = gw.connect().await;
    let mut events = Vec::new();
    let init = c.call("i1", "bb.init", json!({}), &mut events).await;
    assert_eq!(init["ok"], true, "{init}");
    assert_eq!(init["result"]["engine"]["kind"], "breadboard");
    assert_eq!(init["result"]["protocolVersion"], 1);

    let created = c.call("c1", "bb.createSession", json!({}), &mut events).await;
    assert_eq!(created["ok"], true, "{created}");
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let sent = c
        .call("m1", "bb.sendMessage", json!({"sessionId": session, "text": "go"}), &mut events)
        .await;
    assert_eq!(sent["ok"], true, "{sent}");
    // The demo turn streams and then asks for a permission.
    let permission = c
        .event_until(&mut events, |e| {
            e["event"] == "bb/events"
                && e["payload"]["events"]
                    .as_array()
                    .is_some_and(|evs| evs.iter().any(|ev| ev["type"] == "permission_request"))
        })
        .await;
    assert_eq!(permission["payload"]["sessionId"], session.as_str());
    let text: String = events_of(&events, "bb/events")
        .flat_map(|e| e["payload"]["events"].as_array().unwrap().iter())
        .filter(|ev| ev["type"] == "assistant.message.delta")
        .map(|ev| ev["payload"]["delta"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(text.starts_with("I'll look at the workspace"), "{text}");
    assert!(events_of(&events, "bb/state").next().is_some(), "bb/state arrives as an event");
    assert!(events_of(&events, "bb/connection").next().is_some(), "bb/connection too");
    for e in &events {
        assert_eq!(e["type"], "event");
        let name = e["event"].as_str().unwrap();
        assert!(["bb/connection", "bb/state", "bb/events"].contains(&name), "{e}");
    }
    let request_id = permission["payload"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|ev| ev["type"] == "permission_request")
        .map(|ev| ev["payload"]["request_id"].as_str().unwrap().to_owned())
        .unwrap();
    let approved = c
        .call(
            "p1",
            "bb.approvePermission",
            json!({"sessionId": session, "requestId": request_id, "decision": "allow_once"}),
            &mut events,
        )
        .await;
    assert_eq!(approved["ok"], true, "{approved}");
}

#[tokio::test]
async fn every_request_gets_exactly_one_response() {
    let gw = Gateway::start(&[]);
    let mut c = gw.connect().await;
    let mut events = Vec::new();
    // (id, method, params, expected error code or None for success)
    let cases: Vec<(&str, &str, Value, Option<&str>)> = vec![
        ("u1", "bb.nope", json!({}), Some("unknown_method")),
        ("u2", "dialog.save", json!({}), Some("unknown_method")),
        ("p1", "bb.sendMessage", json!({"sessionId": "s"}), Some("invalid_params")),
        (
            "s1",
            "bb.selectSession",
            json!({"sessionId": "no-such-session"}),
            Some("session_not_found"),
        ),
        ("d1", "dialog.open", json!({"title": "Pick"}), Some("unsupported")),
        ("o1", "shell.openPath", json!({"path": "/etc/passwd"}), Some("path_outside_workspace")),
        (
            "o2",
            "shell.openPath",
            json!({"path": "../../etc/passwd"}),
            Some("path_outside_workspace"),
        ),
        ("o3", "shell.openPath", json!({"path": "missing.txt"}), Some("not_found")),
        ("a1", "acp_connect", json!({"command": "no-such-agent-xyz"}), Some("acp_spawn_failed")),
        ("a2", "acp_session_new", json!({"connectionId": "c"}), Some("acp_connection_not_found")),
        ("l1", "bb.listSessions", json!({}), None),
    ];
    for (id, method, params, _) in &cases {
        c.send(id, method, params.clone()).await;
    }
    let mut answered = std::collections::BTreeMap::new();
    while answered.len() < cases.len() {
        let msg = c.next().await;
        if msg["type"] == "event" {
            events.push(msg);
            continue;
        }
        let id = msg["id"].as_str().unwrap().to_owned();
        assert!(answered.insert(id.clone(), msg).is_none(), "{id} answered twice");
    }
    for (id, method, _, code) in &cases {
        let response = &answered[*id];
        match code {
            None => assert_eq!(response["ok"], true, "{method}: {response}"),
            Some(code) => {
                assert_eq!(response["ok"], false, "{method}: {response}");
                assert_eq!(response["error"]["code"], *code, "{method}: {response}");
                assert!(!response["error"]["message"].as_str().unwrap().is_empty());
            }
        }
    }
    // Unparseable input has no id to answer; the connection keeps serving.
    c.send_raw("{not json".into()).await;
    let after = c.call("l2", "bb.listSessions", json!({}), &mut events).await;
    assert_eq!(after["ok"], true);
}

#[tokio::test]
async fn an_oversized_message_closes_only_its_connection() {
    let gw = Gateway::start(&["--max-message-bytes", "4096"]);
    let mut other = gw.connect().await;
    let mut big = gw.connect().await;
    let mut events = Vec::new();
    let fits = json!({"type": "request", "id": "f1", "method": "bb.listSessions", "params": {"pad": "x".repeat(3000)}});
    big.send_raw(fits.to_string()).await;
    assert_eq!(big.response("f1", &mut events).await["ok"], true);

    let huge = json!({"type": "request", "id": "h1", "method": "bb.listSessions", "params": {"pad": "x".repeat(5000)}});
    big.send_raw(huge.to_string()).await;
    use futures_util::StreamExt;
    let close = loop {
        match tokio::time::timeout(crate::harness::WAIT, big.ws.next()).await.unwrap() {
            Some(Ok(tokio_tungstenite::tungstenite::Message::Close(frame))) => break frame,
            Some(Ok(_)) => continue,
            other => panic!("expected a close frame, got {other:?}"),
        }
    };
    let frame =
        close.unwrap_or_else(|| panic!("a close frame without a code; log:\n{}", gw.logs()));
    assert_eq!(u16::from(frame.code), 1009);
    assert!(frame.reason.contains("4096"), "{}", frame.reason);

    // The gateway keeps serving: the other connection and new ones work.
    assert_eq!(other.call("o1", "bb.listSessions", json!({}), &mut events).await["ok"], true);
    let mut fresh = gw.connect().await;
    assert_eq!(fresh.call("n1", "bb.init", json!({}), &mut events).await["ok"], true);
}

#[tokio::test]
async fn two_connections_see_only_their_own_sessions_events() {
    let gw = Gateway::start(&[]);
    let mut a = gw.connect().await;
    let mut b = gw.connect().await;
    let (mut ea, mut eb) = (Vec::new(), Vec::new());
    for (c, e, tag) in [(&mut a, &mut ea, "a"), (&mut b, &mut eb, "b")] {
        assert_eq!(c.call(&format!("{tag}i"), "bb.init", json!({}), e).await["ok"], true);
    }
    let sa = a.call("ac", "bb.createSession", json!({}), &mut ea).await["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let sb = b.call("bc", "bb.createSession", json!({}), &mut eb).await["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(sa, sb);
    a.call("am", "bb.sendMessage", json!({"sessionId": sa, "text": "from a"}), &mut ea).await;
    // A's turn runs up to its permission prompt.
    a.event_until(&mut ea, |e| {
        e["event"] == "bb/events"
            && e["payload"]["events"]
                .as_array()
                .is_some_and(|v| v.iter().any(|ev| ev["type"] == "permission_request"))
    })
    .await;
    b.call("bm", "bb.sendMessage", json!({"sessionId": sb, "text": "from b"}), &mut eb).await;
    b.event_until(&mut eb, |e| {
        e["event"] == "bb/events"
            && e["payload"]["events"]
                .as_array()
                .is_some_and(|v| v.iter().any(|ev| ev["type"] == "permission_request"))
    })
    .await;
    // Both see each other's session listed, never each other's events: no message, tool,
    // permission, run or metadata event (a new session's first `skills_catalog`, streamed
    // before its create answered) of the other window's session reaches a window.
    b.call("bl", "bb.listSessions", json!({}), &mut eb).await;
    a.call("al", "bb.listSessions", json!({}), &mut ea).await;
    let foreign = |events: &[Value], own: &str| -> Vec<String> {
        events_of(events, "bb/events")
            .filter(|e| e["payload"]["sessionId"] != own)
            .flat_map(|e| e["payload"]["events"].as_array().unwrap().iter())
            .map(|ev| ev["type"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(foreign(&ea, &sa), Vec::<String>::new(), "window A saw B's conversation");
    assert_eq!(foreign(&eb, &sb), Vec::<String>::new(), "window B saw A's conversation");
    // Each window did see its own conversation.
    let own = |events: &[Value], session: &str| {
        events_of(events, "bb/events")
            .filter(|e| e["payload"]["sessionId"] == session)
            .flat_map(|e| e["payload"]["events"].as_array().unwrap().iter())
            .any(|ev| ev["type"] == "assistant.message.delta")
    };
    assert!(own(&ea, &sa) && own(&eb, &sb));
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_closes_open_connections_with_1001_and_exits_cleanly() {
    let mut gw = Gateway::start(&[]);
    let mut c = gw.connect().await;
    let mut events = Vec::new();
    assert_eq!(c.call("i1", "bb.init", json!({}), &mut events).await["ok"], true);
    let status = tokio::task::block_in_place(|| gw.terminate());
    assert!(status.success(), "exit status {status:?}");
    use futures_util::StreamExt;
    let frame = loop {
        match tokio::time::timeout(crate::harness::WAIT, c.ws.next()).await.unwrap() {
            Some(Ok(tokio_tungstenite::tungstenite::Message::Close(frame))) => break frame,
            Some(Ok(_)) => continue,
            other => panic!("expected a close frame, got {other:?}"),
        }
    };
    assert_eq!(u16::from(frame.expect("a close code").code), 1001);
    assert!(gw.logs().contains("stopping; bye"), "{}", gw.logs());
}

/// A window that has not named a tab yet never gets the first events of the sessions another
/// window creates (they stream before the create answers and binds them).
#[tokio::test(flavor = "multi_thread")]
async fn a_new_sessions_first_events_reach_only_the_window_that_created_it() {
    let gw = Gateway::start(&[]);
    let mut a = gw.connect().await;
    let mut b = gw.connect().await;
    let (mut ea, mut eb) = (Vec::new(), Vec::new());
    assert_eq!(a.call("ai", "bb.init", json!({}), &mut ea).await["ok"], true);
    assert_eq!(b.call("bi", "bb.init", json!({}), &mut eb).await["ok"], true);
    for i in 0..12 {
        b.send(&format!("c{i}"), "bb.createSession", json!({"tabId": format!("t{i}")})).await;
    }
    let mut created = Vec::new();
    for i in 0..12 {
        let response = b.response(&format!("c{i}"), &mut eb).await;
        created.push(response["result"]["sessionId"].as_str().unwrap().to_owned());
    }
    // Each new session's metadata (skills_catalog, skills_selection) reached its creator.
    for session in &created {
        let of = |e: &Value| e["event"] == "bb/events" && e["payload"]["sessionId"] == *session;
        if !eb.iter().any(of) {
            b.event_until(&mut eb, of).await;
        }
    }
    a.call("al", "bb.listSessions", json!({}), &mut ea).await;
    let foreign: Vec<&Value> = events_of(&ea, "bb/events").collect();
    assert!(foreign.is_empty(), "window A got events of B's new sessions: {foreign:?}");
}

/// The heartbeat reaches every WebSocket connection: `bb/connection` with `heartbeat: 5000`,
/// two within two intervals and a margin.
#[tokio::test]
#[allow(clippy::disallowed_methods)] // the wait for a real bridge's beats is in real time
async fn every_connection_gets_heartbeats() {
    let gw = Gateway::start(&[]);
    let mut a = gw.connect().await;
    let mut b = gw.connect().await;
    let mut events = Vec::new();
    assert_eq!(a.call("i1", "bb.init", json!({}), &mut events).await["ok"], true);
    assert_eq!(b.call("i2", "bb.init", json!({}), &mut events).await["ok"], true);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(13);
    for client in [&mut a, &mut b] {
        let mut beats = 0;
        while beats < 2 {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            assert!(!left.is_zero(), "{beats} of 2 heartbeats within two intervals");
            let msg = client.next_within(left).await;
            if msg["event"] == "bb/connection" && msg["payload"]["heartbeat"].is_u64() {
                assert_eq!(msg["payload"]["heartbeat"], 5000, "{msg}");
                assert_eq!(msg["payload"]["status"], "connected", "{msg}");
                beats += 1;
            }
        }
    }
}
