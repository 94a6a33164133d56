//! `bb-sidecar --engine acp -- kilo acp`: the v1 methods on the real Kilo ACP agent (with
//! the mock LLM), over stdio.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{
    LONG, MockLlm, Sidecar, World, children_of, cmdline, eventually, is_dead, kilo_bin_or_skip,
};

struct Acp {
    _world: World,
    _mock: MockLlm,
    sidecar: Sidecar,
    agent: u32,
}

impl Acp {
    fn start(trusted: bool) -> Option<Self> {
        let bin = kilo_bin_or_skip()?;
        let world = World::new();
        let mock = world.start_mock_llm("ask", "ask");
        let project = world.path("project").display().to_string();
        let mut args = vec!["--workspace", &project, "--engine", "acp"];
        if trusted {
            args.push("--trusted");
        }
        args.extend(["--", bin.to_str().unwrap(), "acp"]);
        let mut sidecar = Sidecar::spawn(&args, &world.env(), world.path("sidecar.err"));
        let init = sidecar.ok("bb.init", json!({}));
        assert_eq!(init["engine"]["kind"], "acp");
        assert_eq!(init["engine"]["status"], "ready");
        assert_eq!(init["engine"]["version"], "7.7.9");
        let me = sidecar.child.id();
        let mut agent = None;
        eventually(LONG, "the agent process", || {
            agent = children_of(me).into_iter().find(|p| cmdline(*p).contains("acp"));
            agent.is_some()
        });
        Some(Self { _world: world, _mock: mock, sidecar, agent: agent.unwrap() })
    }

    fn session(&mut self) -> String {
        let created = self.sidecar.ok("bb.createSession", json!({}));
        let id = created["sessionId"].as_str().unwrap().to_owned();
        assert!(id.starts_with("ses_"), "{id}");
        id
    }

    fn send(&mut self, session: &str, text: &str) {
        self.sidecar.ok("bb.sendMessage", json!({"sessionId": session, "text": text}));
    }

    fn permission(&mut self, session: &str) -> Vec<Value> {
        self.sidecar.session_events_until(session, "request_permission", LONG)
    }

    fn finish(mut self) {
        self.sidecar.close_stdin();
        let status = self.sidecar.wait_exit(Duration::from_secs(60));
        assert!(status.success(), "sidecar exit {status}; stderr:\n{}", self.sidecar.stderr());
        eventually(Duration::from_secs(10), "the agent to be gone", || is_dead(self.agent));
    }
}

fn text_of(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "agent_message_chunk")
        .filter_map(|e| e["payload"]["content"]["text"].as_str())
        .collect()
}

fn last_request_id(events: &[Value]) -> String {
    let ev = events.iter().rev().find(|e| e["type"] == "request_permission").unwrap();
    let options: Vec<&str> = ev["payload"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(options, ["allow_once", "allow_always", "reject_once"]);
    ev["payload"]["requestId"].as_str().unwrap().to_owned()
}

#[test]
fn a_reply_streams_permissions_are_answered_and_stop_cancels() {
    let Some(mut a) = Acp::start(true) else { return };
    let session = a.session();
    let listed = a.sidecar.ok("bb.listSessions", json!({}));
    assert!(listed["sessions"].as_array().unwrap().iter().any(|s| s["sessionId"] == session));

    a.send(&session, "Say it MOCK:text:hello%20from%20the%20sidebar");
    let events = a.sidecar.session_events_until(&session, "turn_ended", LONG);
    assert_eq!(text_of(&events), "hello from the sidebar");
    let end = events.iter().find(|e| e["type"] == "turn_ended").unwrap();
    assert_eq!(end["payload"]["stopReason"], "end_turn");
    let chunk = events.iter().find(|e| e["type"] == "agent_message_chunk").unwrap();
    assert_eq!(chunk["class"], "transcript.assistant_stream", "{chunk}");

    // Approved.
    a.send(&session, "Run it MOCK:bash:echo%20zebra77");
    let events = a.permission(&session);
    let id = last_request_id(&events);
    let asked = events.iter().rev().find(|e| e["type"] == "request_permission").unwrap();
    assert_eq!(asked["class"], "permission.request", "{asked}");
    a.sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": id, "decision": "allow_once"}),
    );
    let events = a.sidecar.session_events_until(&session, "turn_ended", LONG);
    let ran =
        events.iter().any(|e| e["type"] == "tool_call_update" && e.to_string().contains("zebra77"));
    assert!(ran, "the approved command ran: {events:#?}");
    let again = a.sidecar.call(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": id, "decision": "allow_once"}),
    );
    assert_eq!(again["error"]["code"], "permission_not_pending", "{again}");

    // Denied.
    a.send(&session, "Run it MOCK:bash:echo%20yak78");
    let events = a.permission(&session);
    let id = last_request_id(&events);
    let asked = events.iter().rev().find(|e| e["type"] == "request_permission").unwrap();
    assert_eq!(asked["class"], "permission.request", "{asked}");
    a.sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": id, "decision": "deny"}),
    );
    let events = a.sidecar.session_events_until(&session, "turn_ended", LONG);
    let settled = events.iter().find(|e| e["type"] == "permission_settled").unwrap();
    assert_eq!(settled["payload"]["outcome"]["optionId"], "reject");

    // Stop mid-turn.
    a.send(&session, "Go MOCK:slow");
    a.sidecar.session_events_until(&session, "agent_message_chunk", LONG);
    a.sidecar.ok("bb.stop", json!({"sessionId": session}));
    let events = a.sidecar.session_events_until(&session, "turn_ended", LONG);
    let end = events.iter().find(|e| e["type"] == "turn_ended").unwrap();
    assert_eq!(end["payload"]["stopReason"], "cancelled");

    let unsupported = a.sidecar.call("bb.deleteSession", json!({"sessionId": session}));
    assert_eq!(unsupported["error"]["code"], "not_supported", "{unsupported}");
    a.finish();
}

#[test]
fn an_untrusted_workspace_refuses_to_approve_a_command() {
    let Some(mut a) = Acp::start(false) else { return };
    let session = a.session();
    a.send(&session, "Run it MOCK:bash:echo%20owl79");
    let events = a.permission(&session);
    let id = last_request_id(&events);
    let refused = a.sidecar.call(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": id, "decision": "allow_once"}),
    );
    assert_eq!(refused["error"]["code"], "workspace_untrusted", "{refused}");
    // Denying needs no trust.
    a.sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": id, "decision": "deny"}),
    );
    a.sidecar.session_events_until(&session, "turn_ended", LONG);
    a.finish();
}

#[test]
fn acp_without_an_agent_command_says_how_to_give_one() {
    let world = World::new();
    let project = world.path("project").display().to_string();
    let mut sidecar = Sidecar::spawn(
        &["--workspace", &project, "--engine", "acp"],
        &world.env(),
        world.path("sidecar.err"),
    );
    let status = sidecar.wait_exit(Duration::from_secs(30));
    assert!(!status.success());
    assert!(sidecar.stderr().contains("-- kilo acp"), "{}", sidecar.stderr());
}

#[test]
fn an_agent_crash_mid_turn_is_reported_on_the_connection_topic() {
    let world = World::new();
    let project = world.path("project").display().to_string();
    let script = crate::harness::repo_root().join("fixtures/acp/fake_agent.py");
    let script = script.to_str().unwrap();
    let args = ["--workspace", &project, "--engine", "acp", "--", "python3", script, "crash"];
    let mut sidecar = Sidecar::spawn(&args, &world.env(), world.path("sidecar.err"));
    sidecar.ok("bb.init", json!({}));
    let session =
        sidecar.ok("bb.createSession", json!({}))["sessionId"].as_str().unwrap().to_owned();
    sidecar.ok("bb.sendMessage", json!({"sessionId": session, "text": "go"}));
    // Everything up to both the connection error and the session's `agent_exited`.
    let (mut events, mut conn, mut exited) = (Vec::new(), None, false);
    sidecar.wait_event(LONG, "bb/connection error and agent_exited", |m| {
        if m["topic"] == "bb/connection" && m["payload"]["status"] == "error" {
            conn = Some(m["payload"].clone());
        }
        if m["topic"] == "bb/events" && m["payload"]["sessionId"] == session.as_str() {
            for e in m["payload"]["events"].as_array().unwrap() {
                exited |= e["type"] == "agent_exited";
                events.push(e.clone());
            }
        }
        conn.is_some() && exited
    });
    let conn = conn.unwrap();
    assert!(conn["lastError"].as_str().unwrap().contains("exit code 3"), "{conn}");
    assert_eq!(text_of(&events), "about to crash");
    let after = sidecar.call("bb.sendMessage", json!({"sessionId": session, "text": "again"}));
    assert_eq!(after["error"]["code"], "engine_unavailable", "{after}");
    assert!(after["error"]["message"].as_str().unwrap().contains("exit code 3"), "{after}");
}
