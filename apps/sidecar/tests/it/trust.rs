//! Workspace trust through `bb-sidecar`, on every engine (the demo BreadBoard engine, the real
//! Kilo server, the real `kilo acp` agent): in an untrusted workspace approving a write or a
//! command is refused (`workspace_untrusted`, saying how to grant trust) and the engine is
//! told nothing; denying works; once trust is granted (`bb.init {workspaceTrusted: true}`, or
//! `--trusted`) approving goes through.
//!
//! "Told nothing" is proven by the engine itself: each engine takes one answer per request,
//! so the deny that follows a refused approval would be refused by the engine
//! (`permission_not_pending`) had the approval reached it; the deny is accepted and the
//! engine reports the request rejected.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{
    LONG, Sidecar, World, children_of, cmdline, eventually, is_dead, kilo_bin_or_skip,
};
use crate::kilo::Kilo;

const WAIT: Duration = Duration::from_secs(60);

fn approve(sidecar: &mut Sidecar, session: &str, request: &str, decision: &str) -> Value {
    sidecar.call(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": request, "decision": decision}),
    )
}

/// Asserts a `workspace_untrusted` refusal that says how to grant trust.
fn assert_untrusted(res: &Value) {
    assert_eq!(res["ok"], false, "expected a refusal: {res}");
    assert_eq!(res["error"]["code"], "workspace_untrusted", "{res}");
    let message = res["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("--trusted") && message.contains("workspaceTrusted"),
        "the refusal says how to grant trust: {message}"
    );
}

/// The payload of the first event of `event_type` in `events`.
fn first<'a>(events: &'a [Value], event_type: &str) -> &'a Value {
    let e = events.iter().find(|e| e["type"] == event_type);
    &e.unwrap_or_else(|| panic!("no {event_type} in {events:#?}"))["payload"]
}

#[test]
fn the_demo_engine_needs_trust_to_approve_an_edit() {
    let world = World::new();
    let project = world.path("project").display().to_string();
    let mut sidecar =
        Sidecar::spawn(&["--workspace", &project], &world.env(), world.path("demo.err"));
    sidecar.ok("bb.init", json!({}));
    let session =
        sidecar.ok("bb.createSession", json!({}))["sessionId"].as_str().unwrap().to_owned();

    sidecar.ok("bb.sendMessage", json!({"sessionId": session, "text": "Add a Makefile"}));
    let events = sidecar.session_events_until(&session, "permission_request", WAIT);
    let request = first(&events, "permission_request")["request_id"].as_str().unwrap().to_owned();
    for decision in ["allow_once", "allow_rule"] {
        assert_untrusted(&approve(&mut sidecar, &session, &request, decision));
    }
    sidecar.state(WAIT, "the request still pending", |s| s["pendingPermissionCount"] == 1);
    sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": request, "decision": "deny"}),
    );
    let events = sidecar.session_events_until(&session, "run_finished", WAIT);
    assert_eq!(first(&events, "permission_response")["decision"], "reject", "{events:#?}");
    sidecar.state(WAIT, "nothing pending", |s| s["pendingPermissionCount"] == 0);

    // The IDE trusts the workspace: the next turn's edit goes through.
    sidecar.ok("bb.init", json!({"workspaceTrusted": true}));
    sidecar.ok("bb.sendMessage", json!({"sessionId": session, "text": "Again"}));
    let events = sidecar.session_events_until(&session, "permission_request", WAIT);
    let request = first(&events, "permission_request")["request_id"].as_str().unwrap().to_owned();
    sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": request, "decision": "allow_once"}),
    );
    let events = sidecar.session_events_until(&session, "run_finished", WAIT);
    assert_eq!(first(&events, "permission_response")["decision"], "once", "{events:#?}");
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(WAIT).success());
}

/// Also: the engine's credential store, readable by others here, is reported in the
/// connection's diagnostics and counted, and its contents go nowhere.
#[test]
fn the_kilo_server_needs_trust_to_approve_a_write_and_a_command() {
    let world = World::new();
    let store = world.path("xdg/data/kilo/auth.json");
    std::fs::create_dir_all(store.parent().unwrap()).unwrap();
    std::fs::write(&store, r#"{"mock":{"type":"api","key":"sk-stored-9f8e7d6c5b4a"}}"#).unwrap();
    std::fs::set_permissions(&store, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let Some(mut k) = Kilo::start_in(world, "ask", "ask") else { return };
    let metrics = k.sidecar.ok("bb.command", json!({"sessionId": "", "command": "metrics"}));
    let out = &metrics["output"];
    assert_eq!(out["kilo.cli.credentials.insecure_storage_detected"], 1, "{out}");
    let warnings = out["diagnostics"]["warnings"].to_string();
    assert!(warnings.contains("auth.json") && warnings.contains("chmod 600"), "{warnings}");
    let session = k.create_session();
    for (prompt, permission) in
        [("Write it MOCK:write:made61.txt", "edit"), ("Run it MOCK:bash:echo%20cmd62", "bash")]
    {
        k.send(&session, prompt);
        let events = k.sidecar.session_events_until(&session, "permission.asked", LONG);
        let asked = first(&events, "permission.asked");
        assert_eq!(asked["permission"], permission, "{asked}");
        let request = asked["id"].as_str().unwrap().to_owned();
        assert_untrusted(&approve(&mut k.sidecar, &session, &request, "allow_once"));
        k.sidecar.ok(
            "bb.approvePermission",
            json!({"sessionId": session, "requestId": request, "decision": "deny"}),
        );
        let events = k.sidecar.session_events_until(&session, "session.turn.close", LONG);
        assert_eq!(first(&events, "permission.replied")["reply"], "reject", "{events:#?}");
    }
    assert!(!k.world.path("project/made61.txt").exists(), "the denied write happened");

    k.sidecar.ok("bb.init", json!({"workspaceTrusted": true}));
    k.send(&session, "Write it MOCK:write:made63.txt");
    let events = k.sidecar.session_events_until(&session, "permission.asked", LONG);
    let request = first(&events, "permission.asked")["id"].as_str().unwrap().to_owned();
    k.sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": request, "decision": "allow_once"}),
    );
    let events = k.sidecar.session_events_until(&session, "session.turn.close", LONG);
    assert_eq!(first(&events, "permission.replied")["reply"], "once", "{events:#?}");
    assert!(k.world.path("project/made63.txt").exists(), "the approved write did not happen");
    let leaked = k.sidecar.seen.iter().any(|l| l.contains("sk-stored-9f8e7d6c5b4a"));
    assert!(!leaked, "the credential store's contents reached the webview");
    assert!(!k.sidecar.stderr().contains("sk-stored-9f8e7d6c5b4a"), "or the log");
    k.finish();
}

#[test]
fn a_kilo_acp_agent_needs_trust_to_approve_a_command() {
    let Some(bin) = kilo_bin_or_skip() else { return };
    let world = World::new();
    let _mock = world.start_mock_llm("ask", "ask");
    let project = world.path("project").display().to_string();
    let args = ["--workspace", &project, "--engine", "acp", "--", bin.to_str().unwrap(), "acp"];
    let mut sidecar = Sidecar::spawn(&args, &world.env(), world.path("sidecar.err"));
    sidecar.ok("bb.init", json!({}));
    let me = sidecar.child.id();
    let mut agent = None;
    eventually(LONG, "the agent process", || {
        agent = children_of(me).into_iter().find(|p| cmdline(*p).contains("acp"));
        agent.is_some()
    });
    let session =
        sidecar.ok("bb.createSession", json!({}))["sessionId"].as_str().unwrap().to_owned();

    sidecar.ok(
        "bb.sendMessage",
        json!({"sessionId": session, "text": "Run it MOCK:bash:echo%20owl64"}),
    );
    let events = sidecar.session_events_until(&session, "request_permission", LONG);
    let request = first(&events, "request_permission")["requestId"].as_str().unwrap().to_owned();
    assert_untrusted(&approve(&mut sidecar, &session, &request, "allow_once"));
    sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": request, "decision": "deny"}),
    );
    let events = sidecar.session_events_until(&session, "turn_ended", LONG);
    let settled = first(&events, "permission_settled");
    assert_eq!(settled["outcome"]["optionId"], "reject", "{settled}");
    assert!(!events.iter().any(|e| e.to_string().contains("owl64\\n")), "the command ran");

    sidecar.ok("bb.init", json!({"workspaceTrusted": true}));
    sidecar.ok(
        "bb.sendMessage",
        json!({"sessionId": session, "text": "Run it MOCK:bash:echo%20owl65"}),
    );
    let events = sidecar.session_events_until(&session, "request_permission", LONG);
    let request = first(&events, "request_permission")["requestId"].as_str().unwrap().to_owned();
    sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": request, "decision": "allow_once"}),
    );
    let events = sidecar.session_events_until(&session, "turn_ended", LONG);
    let ran =
        events.iter().any(|e| e["type"] == "tool_call_update" && e.to_string().contains("owl65"));
    assert!(ran, "the approved command ran: {events:#?}");
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(WAIT).success());
    let agent = agent.unwrap();
    eventually(Duration::from_secs(10), "the agent to be gone", || is_dead(agent));
}
