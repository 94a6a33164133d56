//! A gateway restarted on the same state directory shows again the approval a window was
//! waiting on, and, when its engine no longer knows it (the demo engine lives in the gateway
//! and died with it), closes the card as stale saying so: no dead button.

use serde_json::{Value, json};

use crate::harness::Gateway;

/// The `permissionRequest` update of `request` in a `bb/events` event, if any.
fn card(e: &Value, request: &str) -> Option<Value> {
    (e["event"] == "bb/events")
        .then(|| e["payload"]["updates"].as_array())
        .flatten()?
        .iter()
        .rfind(|u| u["kind"] == "permissionRequest" && u["permissionId"] == request)
        .cloned()
}

#[tokio::test]
async fn a_restarted_gateway_closes_an_approval_its_engine_forgot_as_stale() {
    let state = tempfile::tempdir().unwrap();
    let state_arg = state.path().display().to_string();
    let mut first = Gateway::start(&["--engine", "demo", "--state-dir", &state_arg]);
    let mut c = first.connect().await;
    let mut seen = Vec::new();
    assert_eq!(c.call("i", "bb.init", json!({"receive": "updates"}), &mut seen).await["ok"], true);
    let created = c.call("c", "bb.createSession", json!({}), &mut seen).await;
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let params = json!({"sessionId": session, "text": "Create a Makefile"});
    assert_eq!(c.call("s", "bb.sendMessage", params, &mut seen).await["ok"], true);
    let shown = |e: &Value| card(e, "permission_1").is_some_and(|c| c["resolved"] != true);
    if !seen.iter().any(shown) {
        c.event_until(&mut seen, shown).await;
    }
    drop(c);
    assert!(first.terminate().success());

    let second = Gateway::start(&["--engine", "demo", "--state-dir", &state_arg]);
    let mut c = second.connect().await;
    let mut seen = Vec::new();
    assert_eq!(c.call("i", "bb.init", json!({"receive": "updates"}), &mut seen).await["ok"], true);
    let stale = |e: &Value| card(e, "permission_1").is_some_and(|c| c["resolved"] == true);
    let closed = match seen.iter().find(|e| stale(e)) {
        Some(e) => e.clone(),
        None => c.event_until(&mut seen, stale).await,
    };
    let words = card(&closed, "permission_1").unwrap()["decision"].as_str().unwrap().to_owned();
    assert!(words.starts_with("no longer known to the engine"), "{words}");
    let answer = json!({"sessionId": session, "requestId": "permission_1", "decision": "deny"});
    let late = c.call("a", "bb.approvePermission", answer, &mut seen).await;
    assert_eq!(late["error"]["code"], "permission_not_pending", "{late}");
}
