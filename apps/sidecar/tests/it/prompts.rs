//! Prompts the host owns, through `bb-sidecar`: a request id an engine reuses is a new prompt
//! once the earlier one settled (the demo numbers its requests per turn: three turns, three
//! `permission_1`s), and a sub-agent's prompt reaches the tab of the session that started it
//! (the real Kilo server's `task` tool: the child session asks, its parent's tab answers).

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{LONG, Sidecar, World};
use crate::kilo::Kilo;

const WAIT: Duration = Duration::from_secs(60);

/// The events of `session`'s messages in `seen` (every stdout line so far) of `event_type`.
fn delivered<'a>(seen: &'a [Value], session: &str, event_type: &str) -> Vec<&'a Value> {
    seen.iter()
        .filter(|m| m["topic"] == "bb/events" && m["payload"]["sessionId"] == session)
        .flat_map(|m| m["payload"]["events"].as_array().unwrap())
        .filter(|e| e["type"] == event_type)
        .collect()
}

fn lines(sidecar: &Sidecar) -> Vec<Value> {
    sidecar.seen.iter().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// Turn 1 is approved, turn 2 stopped while its request waits (the request is cancelled and
/// the engine told to deny it), turn 3 approved: each turn's `permission_1` is shown once and
/// settles on its own, and the count follows.
#[test]
fn three_demo_turns_each_show_and_settle_their_own_approval() {
    let world = World::new();
    let project = world.path("project").display().to_string();
    let mut sidecar = Sidecar::spawn(
        &["--workspace", &project, "--trusted"],
        &world.env(),
        world.path("demo.err"),
    );
    sidecar.ok("bb.init", json!({}));
    let session =
        sidecar.ok("bb.createSession", json!({}))["sessionId"].as_str().unwrap().to_owned();
    for turn in 1..=3 {
        sidecar.ok("bb.sendMessage", json!({"sessionId": session, "text": format!("turn {turn}")}));
        let events = sidecar.session_events_until(&session, "permission_request", WAIT);
        let asked = events.iter().find(|e| e["type"] == "permission_request").unwrap();
        assert_eq!(asked["class"], "permission.request");
        // The engine numbers its requests per turn: every turn asks `permission_1`.
        let request = asked["payload"]["request_id"].as_str().unwrap().to_owned();
        assert_eq!(request, "permission_1");
        sidecar.state(WAIT, &format!("turn {turn}: one pending"), |s| {
            s["pendingPermissionCount"] == 1
        });
        if turn == 2 {
            sidecar.ok("bb.stop", json!({"sessionId": session}));
        } else {
            sidecar.ok(
                "bb.approvePermission",
                json!({"sessionId": session, "requestId": request, "decision": "allow_once"}),
            );
        }
        let events = sidecar.session_events_until(&session, "run_finished", WAIT);
        let settled = events.iter().find(|e| e["type"] == "permission_response").unwrap();
        let decision = if turn == 2 { "reject" } else { "once" };
        assert_eq!(settled["payload"]["decision"], decision, "turn {turn}: {settled}");
        sidecar.state(WAIT, &format!("turn {turn}: nothing pending"), |s| {
            s["pendingPermissionCount"] == 0
        });
        let again = sidecar.call(
            "bb.approvePermission",
            json!({"sessionId": session, "requestId": request, "decision": "allow_once"}),
        );
        assert_eq!(again["error"]["code"], "permission_not_pending", "turn {turn}: {again}");
    }
    let seen = lines(&sidecar);
    assert_eq!(delivered(&seen, &session, "permission_request").len(), 3, "shown once per turn");
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(WAIT).success());
}

/// The parent session's `task` tool runs a child session (`parentID`) whose `bash` asks; the
/// webview shows only the parent, in a named tab. The child's request reaches that tab,
/// carrying the child's session, is answered there, the child's command runs and the
/// parent's turn ends. `bb/state` lists the child with its parent.
#[test]
fn a_kilo_sub_agent_prompt_reaches_its_parents_tab() {
    let Some(mut k) = Kilo::start_with("ask", &["--trusted"]) else { return };
    let created = k.sidecar.ok("bb.createSession", json!({"tabId": "tab-a"}));
    let parent = created["sessionId"].as_str().unwrap().to_owned();
    k.mock.script(&[
        r#"tool:task:{"description":"child work","prompt":"do the child work","subagent_type":"general"}"#,
        "bash:echo%20childran71",
    ]);
    k.send(&parent, "Delegate it");

    let asked = k.sidecar.wait_event(LONG, "the child's permission request on tab-a", |m| {
        m["topic"] == "bb/events"
            && m["payload"]["tabId"] == "tab-a"
            && m["payload"]["events"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["type"] == "permission.asked")
    });
    assert_eq!(asked["payload"]["sessionId"], parent.as_str(), "shown on the parent's messages");
    let event = asked["payload"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "permission.asked")
        .unwrap()
        .clone();
    let child = event["sessionId"].as_str().expect("the item names the child's session").to_owned();
    assert_ne!(child, parent);
    assert_eq!(event["payload"]["sessionID"], child.as_str());
    assert_eq!(event["class"], "permission.request");
    // `bb/state` lists the child with its parent, as the session that waits.
    k.sidecar.state(LONG, "the child listed with its parent, waiting", |s| {
        s["pendingPermissionCount"] == 1
            && s["sessions"].as_array().unwrap().iter().any(|x| {
                x["sessionId"] == child.as_str()
                    && x["parentId"] == parent.as_str()
                    && x["pendingPermissionCount"] == 1
            })
    });

    let request = event["payload"]["id"].as_str().unwrap().to_owned();
    k.sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": child, "requestId": request, "decision": "allow_once"}),
    );
    let events = k.sidecar.session_events_until(&parent, "session.turn.close", LONG);
    let replied = events
        .iter()
        .find(|e| e["type"] == "permission.replied")
        .expect("the child's answer shown on the parent's tab too");
    assert_eq!(replied["sessionId"], child.as_str());
    let task_done = events.iter().any(|e| {
        e["type"] == "message.part.updated"
            && e["payload"]["part"]["tool"] == "task"
            && e["payload"]["part"]["state"]["status"] == "completed"
            && e["payload"]["part"]["state"]["output"].as_str().unwrap_or("").contains("childran71")
    });
    assert!(task_done, "the child's command ran and its task completed: {events:#?}");
    k.sidecar.state(LONG, "nothing pending", |s| s["pendingPermissionCount"] == 0);
    let seen = lines(&k.sidecar);
    let shown: usize = seen
        .iter()
        .filter(|m| m["topic"] == "bb/events")
        .flat_map(|m| m["payload"]["events"].as_array().unwrap())
        .filter(|e| e["type"] == "permission.asked")
        .count();
    assert_eq!(shown, 1, "the request shown once");
    k.finish();
}
