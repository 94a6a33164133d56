//! `bb-sidecar --engine acp` with `fixtures/acp/capable_agent.py`, an agent that uses what
//! the real ones here never do: the client's file reads and writes, terminals and
//! elicitations, `session/delete`, late updates after a close, plan / title / notice /
//! compaction / sub-agent updates, a protocol version other than 1, a crash loop.

use std::time::Duration;

use serde_json::{Value, json};

use crate::acp::{Acp, first, pct, text_of};
use crate::harness::{LONG, Sidecar, World, repo_root};

fn capable(trusted: bool, extra: &[&str]) -> Acp {
    let script = repo_root().join("fixtures/acp/capable_agent.py");
    let mut agent = vec!["python3", script.to_str().unwrap()];
    agent.extend(extra);
    let world = World::new();
    Acp::with_agent(world, None, trusted, &agent)
}

/// The agent's chunks of a turn, joined.
fn said(a: &mut Acp, session: &str, text: &str) -> (String, Vec<Value>) {
    let events = a.turn(session, text);
    (text_of(&events), events)
}

#[test]
fn files_terminals_and_questions_go_through_the_bridge() {
    let mut a = capable(true, &[]);
    let s = a.session();
    let project = a.world.path("project").canonicalize().unwrap();
    let hello = project.join("hello.txt").display().to_string();

    // A read inside the workspace; one outside is refused, and the tab says so.
    let (text, events) = said(&mut a, &s, &format!("FAKE:read:{}", pct(&hello)));
    assert_eq!(text, "read ok: hello world\n");
    assert_eq!(first(&events, "fs_read")["class"], "session.info");
    let outside = a.world.path("home/secret.txt");
    std::fs::write(&outside, "nope").unwrap();
    let (text, events) =
        said(&mut a, &s, &format!("FAKE:read:{}", pct(&outside.display().to_string())));
    assert!(
        text.starts_with("read error -32602:") && text.contains("outside the workspace"),
        "{text}"
    );
    let refused = first(&events, "fs_refused");
    assert_eq!(refused["class"], "run.error_or_gap");

    // A write asks the user (the bridge's own permission request); approved, it is written.
    let target = project.join("sub/out.txt").display().to_string();
    a.send(&s, &format!("FAKE:write:{}:{}", pct(&target), pct("new text")));
    let events = a.sidecar.session_events_until(&s, "request_permission", LONG);
    let asked = events.iter().rev().find(|e| e["type"] == "request_permission").unwrap();
    assert_eq!(asked["payload"]["toolCall"]["kind"], "edit", "{asked}");
    assert_eq!(asked["payload"]["toolCall"]["locations"][0]["path"], target.as_str());
    let id = asked["payload"]["requestId"].as_str().unwrap().to_owned();
    a.sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": s, "requestId": id, "decision": "allow_once"}),
    );
    let events = a.sidecar.session_events_until(&s, "turn_ended", LONG);
    assert_eq!(text_of(&events), "write ok");
    assert_eq!(first(&events, "fs_write")["class"], "run.diff");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "new text");
    // Denied, nothing is written.
    let denied = project.join("denied.txt").display().to_string();
    a.send(&s, &format!("FAKE:write:{}:x", pct(&denied)));
    let id = last_write_request(&a.sidecar.session_events_until(&s, "request_permission", LONG));
    a.sidecar
        .ok("bb.approvePermission", json!({"sessionId": s, "requestId": id, "decision": "deny"}));
    let text = text_of(&a.sidecar.session_events_until(&s, "turn_ended", LONG));
    assert!(text.starts_with("write error") && text.contains("refused the write"), "{text}");
    assert!(!std::path::Path::new(&denied).exists());

    // A terminal: its output streams as the tool call's output; its exit reaches the agent.
    let (text, events) = said(&mut a, &s, "FAKE:terminal:echo%20term42%3B%20echo%20second%20line");
    assert!(text.starts_with("terminal exit {\"exitCode\": 0"), "{text}");
    assert!(text.ends_with("output term42\nsecond line"), "{text}");
    let out: Vec<&Value> = events.iter().filter(|e| e["type"] == "terminal_output").collect();
    assert_eq!(out.len(), 2, "{events:#?}");
    assert_eq!(out[0]["class"], "tool.output");
    assert_eq!(out[0]["payload"]["output"], "term42\n");
    assert!(
        out[0]["payload"]["toolCallId"].as_str().unwrap().starts_with("call_term_"),
        "{}",
        out[0]
    );
    let exited = first(&events, "terminal_exited");
    assert_eq!(exited["payload"]["exitStatus"]["exitCode"], 0, "{exited}");

    // An elicitation is a question card; a wrong answer is refused, a right one sent.
    a.send(&s, "FAKE:elicit");
    let events = a.sidecar.session_events_until(&s, "elicitation", LONG);
    let question = first(&events, "elicitation");
    assert_eq!(question["class"], "permission.request");
    assert_eq!(question["payload"]["title"], "Who are you?");
    let id = question["payload"]["requestId"].clone();
    let approve = a.sidecar.call(
        "bb.approvePermission",
        json!({"sessionId": s, "requestId": id, "decision": "allow_once"}),
    );
    assert!(approve["error"]["message"].as_str().unwrap().contains("question.reply"), "{approve}");
    let wrong =
        a.command(&s, "question.reply", json!({"requestId": id, "answers": {"color": "green"}}));
    assert_eq!(wrong["error"]["code"], "invalid_params", "{wrong}");
    let wrong = wrong["error"]["message"].as_str().unwrap();
    assert!(
        wrong.contains("name is required") && wrong.contains("color must be one of"),
        "{wrong}"
    );
    a.sidecar.state(LONG, "the question pending", |st| st["pendingPermissionCount"] == 1);
    let reply = a.command(
        &s,
        "question.reply",
        json!({"requestId": id, "answers": {"name": "Ada", "color": "red"}}),
    );
    assert_eq!(reply["ok"], true, "{reply}");
    let events = a.sidecar.session_events_until(&s, "turn_ended", LONG);
    assert_eq!(text_of(&events), r#"elicitation accept {"color": "red", "name": "Ada"}"#);
    assert_eq!(first(&events, "elicitation_settled")["payload"]["decision"], "accept");

    let metrics = a.command(&s, "metrics", json!({}));
    let m = &metrics["result"]["output"];
    assert_eq!(
        (m["kilo.cli.acp.fs.read_count"].as_u64(), m["kilo.cli.acp.fs.write_count"].as_u64()),
        (Some(1), Some(1)),
        "{m}"
    );
    assert_eq!(
        (m["kilo.cli.acp.fs.refused_count"].as_u64(), m["kilo.cli.acp.terminal.count"].as_u64()),
        (Some(2), Some(1)),
        "{m}"
    );
    a.finish();
}

fn last_write_request(events: &[Value]) -> String {
    let ev = events.iter().rev().find(|e| e["type"] == "request_permission").unwrap();
    ev["payload"]["requestId"].as_str().unwrap().to_owned()
}

#[test]
fn before_trust_writes_and_terminals_are_refused() {
    let mut a = capable(false, &[]);
    let s = a.session();
    let target =
        a.world.path("project").canonicalize().unwrap().join("w.txt").display().to_string();
    let (text, events) = said(&mut a, &s, &format!("FAKE:write:{}:x", pct(&target)));
    assert!(text.contains("not trusted"), "{text}");
    assert!(
        first(&events, "fs_refused")["payload"]["message"]
            .as_str()
            .unwrap()
            .contains("not trusted")
    );
    assert!(
        !events.iter().any(|e| e["type"] == "request_permission"),
        "nothing to approve: {events:#?}"
    );
    let (text, _) = said(&mut a, &s, "FAKE:terminal:echo%20nope");
    assert!(text.starts_with("terminal error -32603:") && text.contains("not trusted"), "{text}");
    assert!(!std::path::Path::new(&target).exists());
    // Trusted by the webview, the same write asks, and goes through once approved.
    a.sidecar.ok("bb.init", json!({"workspaceTrusted": true}));
    a.send(&s, &format!("FAKE:write:{}:x", pct(&target)));
    let id = last_write_request(&a.sidecar.session_events_until(&s, "request_permission", LONG));
    a.sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": s, "requestId": id, "decision": "allow_once"}),
    );
    assert_eq!(text_of(&a.sidecar.session_events_until(&s, "turn_ended", LONG)), "write ok");
    a.finish();
}

#[test]
fn stop_kills_the_terminal_and_cancels_what_waits_for_the_user() {
    let mut a = capable(true, &[]);
    let s = a.session();
    a.send(&s, "FAKE:terminal-hold:sleep%20600");
    let events = a.sidecar.session_events_until(&s, "tool_call_update", LONG);
    assert!(events.iter().any(|e| e.to_string().contains("\"terminal\"")), "{events:#?}");
    a.sidecar.ok("bb.stop", json!({"sessionId": s}));
    let events = a.sidecar.session_events_until(&s, "turn_ended", LONG);
    let exited = first(&events, "terminal_exited");
    assert_eq!(exited["payload"]["exitStatus"]["signal"], "SIGTERM", "{exited}");
    assert!(text_of(&events).contains("\"signal\": \"SIGTERM\""), "{}", text_of(&events));

    // A permission request open at the stop is answered `cancelled`.
    a.send(&s, "FAKE:permission");
    let id = last_request_id_any(&a.sidecar.session_events_until(&s, "request_permission", LONG));
    a.sidecar.ok("bb.stop", json!({"sessionId": s}));
    let events = a.sidecar.session_events_until(&s, "turn_ended", LONG);
    let settled = first(&events, "permission_settled");
    assert_eq!(settled["payload"]["requestId"], id.as_str());
    assert_eq!(settled["payload"]["outcome"]["outcome"], "cancelled");
    assert_eq!(text_of(&events), r#"permission {"outcome": {"outcome": "cancelled"}}"#);
    a.finish();
}

fn last_request_id_any(events: &[Value]) -> String {
    last_write_request(events)
}

#[test]
fn a_closed_session_gets_no_late_update_and_delete_removes_it() {
    let mut a = capable(true, &[]);
    let s = a.session();
    let other = a.session();
    assert_eq!(said(&mut a, &s, "FAKE:text:before").0, "before");
    let closed = a.command(&s, "session.close", json!({}));
    assert_eq!(closed["result"]["output"]["agentClosed"], true, "{closed}");
    // The agent sends "late after close" right after answering the close: it must not
    // reach the tab. A turn of another session then flows, so anything late came before.
    a.sidecar.session_events_until(&s, "session_closed", LONG);
    let mut late = Vec::new();
    a.send(&other, "FAKE:text:other%20session");
    a.sidecar.wait_event(LONG, "the other session's turn", |m| {
        if m["topic"] == "bb/events" && m["payload"]["sessionId"] == s.as_str() {
            late.push(m.clone());
        }
        m["topic"] == "bb/events"
            && m["payload"]["sessionId"] == other.as_str()
            && m["payload"]["events"].as_array().unwrap().iter().any(|e| e["type"] == "turn_ended")
    });
    assert!(late.is_empty(), "late updates reached the tab: {late:#?}");
    let metrics = a.command(&other, "metrics", json!({}));
    assert_eq!(
        metrics["result"]["output"]["kilo.cli.acp.updates_dropped_after_close"], 1,
        "{metrics}"
    );

    // This agent offers `session/delete`.
    a.sidecar.ok("bb.deleteSession", json!({"sessionId": s}));
    a.sidecar.state(LONG, "the session gone", |st| {
        !st["sessions"].as_array().unwrap().iter().any(|x| x["sessionId"] == s.as_str())
    });
    let listed = a.sidecar.ok("bb.listSessions", json!({}));
    assert!(!listed.to_string().contains(&format!("\"{s}\"")), "{listed}");
    a.finish();
}

#[test]
fn plan_title_usage_mode_notices_compaction_and_subagents_reach_the_tab() {
    let mut a = capable(false, &[]);
    let s = a.session();
    let events = a.turn(
        &s,
        "FAKE:thought:hmm FAKE:plan FAKE:title:Fixing%20it FAKE:usage FAKE:mode:plan \
         FAKE:notice:warning:Rate%20limited FAKE:compact FAKE:subagent FAKE:unknown",
    );
    let class = |kind: &str| first(&events, kind)["class"].as_str().unwrap().to_owned();
    assert_eq!(class("agent_thought_chunk"), "transcript.reasoning_stream");
    assert_eq!(class("plan"), "task.todo");
    assert_eq!(class("session_info_update"), "session.info");
    assert_eq!(class("usage_update"), "session.info");
    assert_eq!(class("current_mode_update"), "session.info");
    assert_eq!(class("notice"), "run.error_or_gap");
    assert_eq!(class("compaction_update"), "session.info");
    assert_eq!(class("compaction_summary_chunk"), "session.info");
    assert_eq!(class("subagent_update"), "task.event");
    assert_eq!(class("future_kind"), "unknown_event");
    // The child's own update shows under its parent, as its task's activity.
    let child = first(&events, "subagent_activity");
    assert_eq!(child["class"], "task.event");
    assert_eq!(child["payload"]["subagentSessionId"], format!("{s}-child"));
    assert_eq!(child["payload"]["update"]["content"]["text"], "child says hi");
    // The agent's title is the session's title.
    a.sidecar.state(LONG, "the title", |st| {
        st["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["sessionId"] == s.as_str() && x["title"] == "Fixing it")
    });
    // The `/` menu.
    let commands = a.command(&s, "commands", json!({}));
    let names: Vec<&str> = commands["result"]["output"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["review", "init"]);
    let run = a.command(&s, "/review", json!({"input": "the diff"}));
    assert_eq!(run["result"]["output"]["prompt"], "/review the diff", "{run}");
    a.sidecar.session_events_until(&s, "turn_ended", LONG);
    let unknown = a.command(&s, "/nope", json!({}));
    assert_eq!(unknown["error"]["code"], "unknown_command", "{unknown}");
    assert!(unknown["error"]["message"].as_str().unwrap().contains("review"), "{unknown}");
    a.finish();
}

#[test]
fn an_agent_on_another_protocol_version_is_refused_at_start() {
    let world = World::new();
    let script = repo_root().join("fixtures/acp/capable_agent.py");
    let project = world.path("project").display().to_string();
    let args = [
        "--workspace",
        &project,
        "--engine",
        "acp",
        "--",
        "python3",
        script.to_str().unwrap(),
        "--version",
        "2",
    ];
    let mut sidecar = Sidecar::spawn(&args, &world.env(), world.path("sidecar.err"));
    let status = sidecar.wait_exit(Duration::from_secs(60));
    assert!(!status.success());
    let stderr = sidecar.stderr();
    assert!(stderr.contains("negotiated 2"), "{stderr}");
    assert!(stderr.contains("this bridge speaks ACP protocol version 1"), "{stderr}");
}

#[test]
fn a_crash_loop_opens_the_breaker_and_agent_restart_closes_it() {
    let mut a = capable(false, &[]);
    let s = a.session();
    for attempt in 1..=3u64 {
        a.send(&s, "FAKE:crash");
        let exited = a.sidecar.session_events_until(&s, "agent_exited", LONG);
        let reason =
            first(&exited, "agent_exited")["payload"]["reason"].as_str().unwrap().to_owned();
        assert!(
            reason.contains("exit code 3") && reason.contains("boom: the agent fell over"),
            "{reason}"
        );
        assert!(
            !reason.contains("sk-live-0123456789abcdef"),
            "the stderr tail is redacted: {reason}"
        );
        if attempt < 3 {
            a.sidecar.session_events_until(&s, "session_resumed", LONG);
        }
    }
    let state = a.sidecar.wait_event(LONG, "the breaker", |m| {
        m["topic"] == "bb/connection" && m["payload"]["status"] == "error"
    });
    assert!(state["payload"]["lastError"].as_str().unwrap().contains("crashed 3 times"), "{state}");
    let refused = a.sidecar.call("bb.sendMessage", json!({"sessionId": s, "text": "FAKE:text:x"}));
    assert_eq!(refused["error"]["code"], "engine_unavailable", "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("agent.restart"), "{refused}");
    let restarted = a.command(&s, "agent.restart", json!({}));
    assert_eq!(restarted["ok"], true, "{restarted}");
    a.agent = a.agent_pid();
    assert_eq!(said(&mut a, &s, "FAKE:text:alive").0, "alive");
    a.finish();
}

#[test]
fn create_session_takes_a_model_and_a_mode_from_the_agent_options() {
    let mut a = capable(false, &[]);
    let created =
        a.sidecar.ok("bb.createSession", json!({"model": "fake/b", "permissionMode": "plan"}));
    let s = created["sessionId"].as_str().unwrap().to_owned();
    let options = a.command(&s, "config.options", json!({}));
    let current = |id: &str| {
        options["result"]["output"]["configOptions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["id"] == id)
            .unwrap()["currentValue"]
            .clone()
    };
    assert_eq!((current("model"), current("mode")), (json!("fake/b"), json!("plan")), "{options}");
    // A value the agent does not offer: refused, naming what it offers; no session is left.
    let bad = a.sidecar.call("bb.createSession", json!({"model": "fake/zzz"}));
    assert_eq!(bad["error"]["code"], "invalid_params", "{bad}");
    assert!(bad["error"]["message"].as_str().unwrap().contains("fake/b"), "{bad}");
    let listed = a.sidecar.ok("bb.listSessions", json!({}));
    let open: Vec<&Value> =
        listed["sessions"].as_array().unwrap().iter().filter(|x| x["status"] != "closed").collect();
    assert!(open.iter().all(|x| x["sessionId"] == s.as_str() || x["status"].is_null()), "{listed}");
    a.finish();
}
