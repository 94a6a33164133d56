//! The gateway attached to a BreadBoard engine that requires a bearer token: the engine's
//! token never reaches a page (not in the page, not in any WebSocket message) nor the logs.

use bb_fake_engine::{EngineConfig, FakeEngine, ScriptSource};
use secrecy::SecretString;
use serde_json::json;

use crate::harness::{Gateway, http_get, repo_root};

#[tokio::test(flavor = "multi_thread")]
async fn the_engine_token_never_reaches_a_page_or_the_logs() {
    let token = "engine-secret-token-5d1c9e";
    let script =
        std::fs::read_to_string(repo_root().join("fixtures/demo/breadboard_demo.jsonl")).unwrap();
    let engine = FakeEngine::new(EngineConfig {
        token: Some(SecretString::from(token)),
        default_workspace: std::env::temp_dir(),
        scripts: vec![ScriptSource::Inline(script)],
        ..EngineConfig::default()
    })
    .serve("127.0.0.1:0".parse().unwrap())
    .await
    .unwrap();
    let env = [("BB_TEST_ENGINE_TOKEN".to_owned(), token.to_owned())];
    let url = engine.url().to_owned();
    let args = [
        "--engine",
        "breadboard",
        "--engine-url",
        &url,
        "--engine-token-env",
        "BB_TEST_ENGINE_TOKEN",
        "--engine-config",
        "demo",
    ];
    let gw = Gateway::start_with(&args, &env);
    let (head, page) = http_get(&gw.addr, &format!("/?token={}", gw.token), &gw.addr, None);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(!page.contains(token) && !head.contains(token));

    let mut c = gw.connect().await;
    let mut events = Vec::new();
    let init = c.call("i1", "bb.init", json!({}), &mut events).await;
    assert_eq!(init["result"]["engine"]["kind"], "breadboard", "{init}");
    let created = c.call("c1", "bb.createSession", json!({}), &mut events).await;
    assert_eq!(created["ok"], true, "{created}");
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    c.call("m1", "bb.sendMessage", json!({"sessionId": session, "text": "go"}), &mut events).await;
    c.event_until(&mut events, |e| {
        e["event"] == "bb/events"
            && e["payload"]["events"]
                .as_array()
                .is_some_and(|v| v.iter().any(|ev| ev["type"] == "permission_request"))
    })
    .await;
    for message in &events {
        assert!(
            !message.to_string().contains(token),
            "the engine token reached the page: {message}"
        );
    }
    assert!(!gw.logs().contains(token), "the engine token was logged");
}
