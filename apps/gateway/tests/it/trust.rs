//! Workspace trust through `bb-gateway` on its default engine (the demo BreadBoard engine):
//! without `--trusted`, approving the demo's edit is refused (`workspace_untrusted`, saying
//! how to grant trust) and the engine is told nothing; deny works; once the page's
//! `bb.init {workspaceTrusted: true}` grants trust, or the gateway runs with `--trusted`,
//! approving goes through. The gate is the host's, the same one `bb-sidecar` runs.
//!
//! "Told nothing" is proven by the engine: it takes one answer per request, so the deny that
//! follows a refused approval would be refused had the approval reached it; the deny is
//! accepted and the engine reports the request rejected.

use serde_json::{Value, json};

use crate::harness::{Client, Gateway};

/// Sends a message and reads until the engine's permission request; returns its id.
async fn turn_until_request(c: &mut Client, session: &str, id: &str) -> String {
    let mut events = Vec::new();
    let sent = c
        .call(
            id,
            "bb.sendMessage",
            json!({"sessionId": session, "text": "Add a Makefile"}),
            &mut events,
        )
        .await;
    assert_eq!(sent["ok"], true, "{sent}");
    events.retain(|e| e["event"] == "bb/events");
    let found = |events: &[Value]| {
        events
            .iter()
            .flat_map(|m| m["payload"]["events"].as_array().cloned().unwrap_or_default())
            .find(|e| e["type"] == "permission_request")
    };
    let request = match found(&events) {
        Some(e) => e,
        None => {
            let msg =
                c.event_until(&mut events, |e| found(std::slice::from_ref(e)).is_some()).await;
            found(std::slice::from_ref(&msg)).unwrap()
        }
    };
    request["payload"]["request_id"].as_str().unwrap().to_owned()
}

/// Reads until the run ends; returns the decision the engine reported for the request.
/// `events`: what was read with the answer's response (the engine may report it first).
async fn engine_decision(c: &mut Client, mut events: Vec<Value>) -> String {
    let items = |m: &Value| m["payload"]["events"].as_array().cloned().unwrap_or_default();
    if !events.iter().any(|m| items(m).iter().any(|e| e["type"] == "run_finished")) {
        c.event_until(&mut events, |m| items(m).iter().any(|e| e["type"] == "run_finished")).await;
    }
    let response = events.iter().flat_map(items).find(|e| e["type"] == "permission_response");
    let response = response.unwrap_or_else(|| panic!("no permission_response in {events:#?}"));
    response["payload"]["decision"].as_str().unwrap().to_owned()
}

/// Answers; the events read before the response go to `events`.
async fn approve(
    c: &mut Client,
    events: &mut Vec<Value>,
    id: &str,
    session: &str,
    request: &str,
    decision: &str,
) -> Value {
    let params = json!({"sessionId": session, "requestId": request, "decision": decision});
    c.call(id, "bb.approvePermission", params, events).await
}

async fn new_session(c: &mut Client, init: Value) -> String {
    let init = c.call("i1", "bb.init", init, &mut Vec::new()).await;
    assert_eq!(init["ok"], true, "{init}");
    let created = c.call("c1", "bb.createSession", json!({}), &mut Vec::new()).await;
    created["result"]["sessionId"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_demo_engine_needs_trust_to_approve_an_edit() {
    let gw = Gateway::start(&[]);
    let mut c = gw.connect().await;
    let session = new_session(&mut c, json!({})).await;

    let request = turn_until_request(&mut c, &session, "m1").await;
    for (id, decision) in [("a1", "allow_once"), ("a2", "allow_rule")] {
        let res = approve(&mut c, &mut Vec::new(), id, &session, &request, decision).await;
        assert_eq!(res["ok"], false, "approving in an untrusted workspace: {res}");
        assert_eq!(res["error"]["code"], "workspace_untrusted", "{res}");
        let message = res["error"]["message"].as_str().unwrap();
        assert!(message.contains("--trusted") && message.contains("workspaceTrusted"), "{message}");
    }
    let mut read = Vec::new();
    let denied = approve(&mut c, &mut read, "d1", &session, &request, "deny").await;
    assert_eq!(denied["ok"], true, "deny always works: {denied}");
    assert_eq!(engine_decision(&mut c, std::mem::take(&mut read)).await, "reject");
    assert!(!gw.workspace.path().join("Makefile").exists(), "the denied edit was applied");

    // The page says the IDE trusts the workspace: the next turn's edit goes through.
    let init = c.call("i2", "bb.init", json!({"workspaceTrusted": true}), &mut Vec::new()).await;
    assert_eq!(init["ok"], true, "{init}");
    let request = turn_until_request(&mut c, &session, "m2").await;
    let allowed = approve(&mut c, &mut read, "a3", &session, &request, "allow_once").await;
    assert_eq!(allowed["ok"], true, "{allowed}");
    assert_eq!(engine_decision(&mut c, std::mem::take(&mut read)).await, "once");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trusted_gateway_approves_at_once() {
    let gw = Gateway::start(&["--trusted"]);
    let mut c = gw.connect().await;
    let session = new_session(&mut c, json!({})).await;
    let request = turn_until_request(&mut c, &session, "m1").await;
    let mut read = Vec::new();
    let allowed = approve(&mut c, &mut read, "a1", &session, &request, "allow_once").await;
    assert_eq!(allowed["ok"], true, "{allowed}");
    assert_eq!(engine_decision(&mut c, std::mem::take(&mut read)).await, "once");
}
