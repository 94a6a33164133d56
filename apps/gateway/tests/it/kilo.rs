//! The gateway on the real Kilo server (spawned and supervised through the shared launcher)
//! with the scripted mock LLM (`bb-test-support`): a reply streams over the WebSocket.

use std::time::Duration;

use bb_test_support::{KiloWorld, kilo_bin_or_skip};
use serde_json::json;

use crate::harness::Gateway;

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
    c.event_until(&mut events, |e| {
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
    c.event_until(&mut events, |e| {
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
