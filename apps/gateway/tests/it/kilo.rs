//! The gateway on the real Kilo server (spawned and supervised through the shared launcher)
//! with the scripted mock LLM (`bb-test-support`): a reply streams over the WebSocket; a
//! window opened mid-stream gets the turn from its start.

use std::time::Duration;

use bb_kilo::testing::{
    KiloWorld, assert_turn_from_its_start, kilo_bin_or_skip, slow_turn_streaming, supervised_kilo,
};
use serde_json::{Value, json};

use crate::harness::Gateway;

/// Bound on the engine's own waits (its start, a first request for a directory).
const LONG: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread")]
async fn a_kilo_reply_streams_over_the_websocket() {
    let Some(kilo) = kilo_bin_or_skip() else { return };
    let world = KiloWorld::new();
    let _mock = world.start_mock_llm(Duration::from_millis(20), "ask", "ask");
    let env = world.env();
    let kilo = kilo.display().to_string();
    let gw = Gateway::start_with(&["--engine", "kilo", "--engine-bin", &kilo], &env);
    let mut c = gw.connect().await;
    let mut events = Vec::new();
    let init = c.call("i1", "bb.init", json!({}), &mut events).await;
    assert_eq!(init["result"]["engine"]["kind"], "kilo", "{init}");
    // The engine starts in the background; creating a session waits for it.
    c.event_until_within(LONG, &mut events, |e| {
        e["event"] == "bb/connection" && e["payload"]["status"] == "connected"
    })
    .await;
    let created = c.call("c1", "bb.createSession", json!({}), &mut events).await;
    assert_eq!(created["ok"], true, "{created}");
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let sent = c
        .call(
            "m1",
            "bb.sendMessage",
            json!({"sessionId": session, "text": "Say it MOCK:text:hello%20from%20the%20gateway"}),
            &mut events,
        )
        .await;
    assert_eq!(sent["ok"], true, "{sent}");
    c.event_until_within(LONG, &mut events, |e| {
        e["event"] == "bb/events"
            && e["payload"]["events"]
                .as_array()
                .is_some_and(|v| v.iter().any(|ev| ev["type"] == "session.turn.close"))
    })
    .await;
    let text: String = events
        .iter()
        .filter(|e| e["event"] == "bb/events" && e["payload"]["sessionId"] == session.as_str())
        .flat_map(|e| e["payload"]["events"].as_array().unwrap().iter())
        .filter(|ev| ev["type"] == "message.part.delta")
        .map(|ev| ev["payload"]["delta"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(text.contains("hello from the gateway"), "streamed: {text:?}");
    // The engine's password never reaches the page.
    assert!(!events.iter().any(|e| e.to_string().to_lowercase().contains("password")));
}

/// A window opened while a turn streams that no window shows (another client of the engine
/// started it) gets the session from its first message: what streamed before the window
/// connected, then the rest, numbered 1, 2, … on its tab, with no gap and no resync.
#[tokio::test(flavor = "multi_thread")]
async fn a_window_opened_mid_stream_gets_the_turn_from_its_start() {
    let Some(kilo) = kilo_bin_or_skip() else { return };
    let world = KiloWorld::new();
    let _mock = world.start_mock_llm(Duration::from_millis(20), "ask", "ask");
    let kilo = kilo.display().to_string();
    let gw = Gateway::start_with(&["--engine", "kilo", "--engine-bin", &kilo], &world.env());
    let pid = gw.pid();
    let engine = tokio::task::spawn_blocking(move || supervised_kilo(pid, LONG)).await.unwrap();
    let client = engine.client(&gw.workspace.path().display().to_string(), LONG);
    let session = slow_turn_streaming(&client, 3, LONG).await;

    let mut c = gw.connect().await;
    let mut events = Vec::new();
    assert_eq!(c.call("i1", "bb.init", json!({}), &mut events).await["ok"], true);
    let of_session = |e: &Value| e["event"] == "bb/events" && e["payload"]["sessionId"] == session;
    let has = |e: &Value, done: &dyn Fn(&Value) -> bool| {
        of_session(e) && e["payload"]["events"].as_array().unwrap().iter().any(done)
    };
    let tick_5 =
        |ev: &Value| ev["payload"]["delta"].as_str().is_some_and(|d| d.contains("tick 5."));
    c.event_until(&mut events, |e| has(e, &tick_5)).await;
    let stopped = c.call("s1", "bb.stop", json!({"sessionId": session}), &mut events).await;
    assert_eq!(stopped["ok"], true, "{stopped}");
    // The turn's close may come before the stop's response (then it is among `events`).
    let closed = |e: &Value| has(e, &|ev| ev["type"] == "session.turn.close");
    if !events.iter().any(closed) {
        c.event_until(&mut events, closed).await;
    }
    let messages: Vec<Value> =
        events.iter().filter(|e| of_session(e)).map(|e| e["payload"].clone()).collect();
    assert_turn_from_its_start(&messages, 3);
}
