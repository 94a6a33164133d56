//! A gateway restarted on the same state directory shows again the approval a window was
//! waiting on, and, when its engine no longer knows it (the demo engine lives in the gateway
//! and died with it), closes the card as stale saying so, and refuses a late answer saying
//! why: no dead button. (That a reattaching window is shown the card and then its closing is
//! checked through bb-sidecar, whose webview is there before it starts.)

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
    // The window connects while the restarted gateway checks its saved prompts with the
    // engine: before it finds the prompt forgotten (the window is shown the card, then the
    // card closed as stale) or after (nothing is pending any more when it connects, and the
    // session it was on has ended). Either way no button is left that does nothing.
    let forgotten = |e: &Value| {
        e["event"] == "bb/state"
            && e["payload"]["pendingPermissionCount"] == 0
            && e["payload"]["sessions"].as_array().is_some_and(|all| {
                all.iter().any(|s| s["sessionId"] == session && s["status"] == "ended")
            })
    };
    let told = match seen.iter().find(|e| stale(e) || forgotten(e)) {
        Some(e) => e.clone(),
        None => c.event_until(&mut seen, |e| stale(e) || forgotten(e)).await,
    };
    if let Some(closed) = card(&told, "permission_1") {
        let words = closed["decision"].as_str().unwrap().to_owned();
        assert!(words.starts_with("no longer known to the engine"), "{words}");
    }
    let answer = json!({"sessionId": session, "requestId": "permission_1", "decision": "deny"});
    let late = c.call("a", "bb.approvePermission", answer, &mut seen).await;
    assert_eq!(late["error"]["code"], "permission_not_pending", "{late}");
    let why = late["error"]["message"].as_str().unwrap();
    assert!(why.contains("no longer known to the engine"), "{late}");
}
