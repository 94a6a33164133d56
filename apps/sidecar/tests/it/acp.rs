//! `bb-sidecar --engine acp -- kilo acp`: the v1 methods on the real Kilo ACP agent (with
//! the mock LLM), over stdio: turns, permissions, cancel, sessions (list, close, resume,
//! delete), config options (a model switch, remembered per workspace), usage and the todo
//! list, an approved edit written through the bridge, and the agent killed mid-turn.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{
    LONG, MockLlm, Sidecar, World, children_of, cmdline, eventually, is_dead, kilo_bin_or_skip,
};

/// A sidecar driving an ACP agent, in its world.
pub(crate) struct Acp {
    pub(crate) world: World,
    _mock: Option<MockLlm>,
    pub(crate) sidecar: Sidecar,
    pub(crate) agent: u32,
    args: Vec<String>,
}

impl Acp {
    /// The sidecar with `agent` (the command after `--`), the workspace trusted or not.
    pub(crate) fn with_agent(
        world: World,
        mock: Option<MockLlm>,
        trusted: bool,
        agent: &[&str],
    ) -> Self {
        let flags: &[&str] = if trusted { &["--trusted"] } else { &[] };
        Self::with_flags(world, mock, flags, agent)
    }

    /// The sidecar with `agent` and more sidecar flags (`--trusted`, `--folder DIR`).
    pub(crate) fn with_flags(
        world: World,
        mock: Option<MockLlm>,
        flags: &[&str],
        agent: &[&str],
    ) -> Self {
        let project = world.path("project").display().to_string();
        let mut args: Vec<String> =
            vec!["--workspace".into(), project, "--engine".into(), "acp".into()];
        args.extend(flags.iter().map(|f| (*f).to_owned()));
        args.push("--".into());
        args.extend(agent.iter().map(|a| (*a).to_owned()));
        let sidecar = Self::spawn(&world, &args);
        let mut a = Self { world, _mock: mock, sidecar, agent: 0, args };
        a.init();
        a
    }

    fn init(&mut self) {
        let init = self.sidecar.ok("bb.init", json!({}));
        assert_eq!(init["engine"]["kind"], "acp");
        assert_eq!(init["engine"]["status"], "ready", "{init}");
        self.agent = self.agent_pid();
    }

    fn spawn(world: &World, args: &[String]) -> Sidecar {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Sidecar::spawn(&args, &world.env(), world.path("sidecar.err"))
    }

    /// Stops the sidecar (end of input: it stops the agent and exits 0) and starts a new one
    /// in the same world (the agent keeps its data there).
    pub(crate) fn restart_sidecar(&mut self) {
        self.sidecar.close_stdin();
        let status = self.sidecar.wait_exit(Duration::from_secs(60));
        assert!(status.success(), "sidecar exit {status}; stderr:\n{}", self.sidecar.stderr());
        let old = self.agent;
        eventually(Duration::from_secs(10), "the old agent to be gone", || is_dead(old));
        self.sidecar = Self::spawn(&self.world, &self.args);
        self.init();
    }

    /// Starts a new sidecar in the same world after the last one was killed (no `bb.init`
    /// yet: the caller says what it receives).
    pub(crate) fn restart_killed(&mut self) {
        self.sidecar = Self::spawn(&self.world, &self.args);
        self.agent = self.agent_pid();
    }

    /// The agent: the sidecar's child running the agent command.
    pub(crate) fn agent_pid(&self) -> u32 {
        let me = self.sidecar.child.id();
        // The agent's program or script: its longest word.
        let after = self.args.iter().position(|a| a == "--").unwrap() + 1;
        let word = self.args[after..].iter().max_by_key(|a| a.len()).unwrap().clone();
        let mut agent = None;
        eventually(LONG, "the agent process", || {
            agent =
                children_of(me).into_iter().find(|p| !is_dead(*p) && cmdline(*p).contains(&word));
            agent.is_some()
        });
        agent.unwrap()
    }

    /// Kilo's ACP agent against the mock LLM.
    fn start(trusted: bool) -> Option<Self> {
        let bin = kilo_bin_or_skip()?;
        let world = World::new();
        let mock = world.start_mock_llm("ask", "ask");
        let a = Self::with_agent(world, Some(mock), trusted, &[bin.to_str().unwrap(), "acp"]);
        Some(a)
    }

    pub(crate) fn session(&mut self) -> String {
        let created = self.sidecar.ok("bb.createSession", json!({}));
        created["sessionId"].as_str().unwrap().to_owned()
    }

    pub(crate) fn send(&mut self, session: &str, text: &str) {
        self.sidecar.ok("bb.sendMessage", json!({"sessionId": session, "text": text}));
    }

    pub(crate) fn command(&mut self, session: &str, command: &str, args: Value) -> Value {
        self.sidecar
            .call("bb.command", json!({"sessionId": session, "command": command, "args": args}))
    }

    /// Sends and collects the session's events up to the turn's end.
    pub(crate) fn turn(&mut self, session: &str, text: &str) -> Vec<Value> {
        self.send(session, text);
        self.sidecar.session_events_until(session, "turn_ended", LONG)
    }

    fn permission(&mut self, session: &str) -> Vec<Value> {
        self.sidecar.session_events_until(session, "request_permission", LONG)
    }

    /// The session's events and the `bb/connection` payloads up to the session's first event
    /// of type `kind`.
    pub(crate) fn until(&mut self, session: &str, kind: &str) -> (Vec<Value>, Vec<Value>) {
        let (mut events, mut connection) = (Vec::new(), Vec::new());
        self.sidecar.wait_event(LONG, kind, |m| {
            if m["topic"] == "bb/connection" {
                connection.push(m["payload"].clone());
            }
            if m["topic"] == "bb/events" && m["payload"]["sessionId"] == session {
                events.extend(m["payload"]["events"].as_array().unwrap().iter().cloned());
            }
            events.iter().any(|e| e["type"] == kind)
        });
        (events, connection)
    }

    pub(crate) fn finish(mut self) {
        self.sidecar.close_stdin();
        let status = self.sidecar.wait_exit(Duration::from_secs(60));
        assert!(status.success(), "sidecar exit {status}; stderr:\n{}", self.sidecar.stderr());
        let agent = self.agent;
        eventually(Duration::from_secs(10), "the agent to be gone", || is_dead(agent));
    }
}

pub(crate) fn text_of(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "agent_message_chunk")
        .filter_map(|e| e["payload"]["content"]["text"].as_str())
        .collect()
}

pub(crate) fn last_request_id(events: &[Value]) -> String {
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

/// The session's `queuedPrompts` in a `bb/state` payload (0 when absent).
fn queued_of(state: &Value, session: &str) -> u64 {
    state["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["sessionId"] == session)
        .map_or(0, |x| x.get("queuedPrompts").map_or(0, |n| n.as_u64().expect("a count")))
}

/// ACP runs one prompt per session at a time: a message sent while the session's turn runs
/// waits in the bridge (counted in `bb/state`) and reaches the agent when that turn ends;
/// `bb.stop` withdraws what waits and names it.
#[test]
fn messages_sent_during_a_turn_wait_in_the_bridge_and_stop_withdraws_them() {
    let Some(mut a) = Acp::start(true) else { return };
    let session = a.session();
    a.send(&session, "Run it MOCK:bash:echo%20first31");
    let mut seen = a.permission(&session);
    let id = last_request_id(&seen);
    a.send(&session, "Then MOCK:text:second%20reply");
    // Every event read while waiting for the count is kept.
    a.sidecar.wait_event(LONG, "one prompt queued behind the turn", |m| {
        if m["topic"] == "bb/events" && m["payload"]["sessionId"] == session.as_str() {
            seen.extend(m["payload"]["events"].as_array().unwrap().iter().cloned());
        }
        m["topic"] == "bb/state" && queued_of(&m["payload"], &session) == 1
    });
    a.sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": id, "decision": "allow_once"}),
    );
    seen.extend(a.sidecar.session_events_until(&session, "turn_ended", LONG));
    let ran =
        seen.iter().any(|e| e["type"] == "tool_call_update" && e.to_string().contains("first31"));
    assert!(ran, "the first turn ran its command: {seen:#?}");
    let early: Vec<&Value> = seen.iter().filter(|e| e.to_string().contains("second")).collect();
    assert!(early.is_empty(), "the queued prompt reached the agent during the turn: {early:#?}");
    let second = a.sidecar.session_events_until(&session, "turn_ended", LONG);
    assert_eq!(text_of(&second), "second reply");
    let sid = session.clone();
    a.sidecar
        .state(LONG, "nothing queued, idle", |s| s["running"] == false && queued_of(s, &sid) == 0);

    // A stop withdraws what waits behind the stopped turn, naming it.
    a.send(&session, "Go MOCK:slow");
    a.sidecar.session_events_until(&session, "agent_message_chunk", LONG);
    a.send(&session, "Later MOCK:text:never%20sent");
    let sid = session.clone();
    a.sidecar.state(LONG, "one prompt queued", |s| queued_of(s, &sid) == 1);
    a.sidecar.ok("bb.stop", json!({"sessionId": session}));
    let stopped = a.sidecar.session_events_until(&session, "turn_ended", LONG);
    let withdrawn = stopped.iter().find(|e| e["type"] == "prompts_withdrawn").expect("named");
    assert_eq!(withdrawn["payload"]["prompts"], json!(["Later MOCK:text:never%20sent"]));
    assert_eq!(withdrawn["class"], "run.error_or_gap", "{withdrawn}");
    let message = withdrawn["payload"]["message"].as_str().unwrap();
    assert!(message.contains("bb.stop") && message.contains("never%20sent"), "{withdrawn}");
    let sid = session.clone();
    a.sidecar.state(LONG, "nothing queued after the stop", |s| {
        s["running"] == false && queued_of(s, &sid) == 0
    });
    let after = a.turn(&session, "Now MOCK:text:after%20the%20stop");
    assert_eq!(text_of(&after), "after the stop", "the withdrawn prompt never ran: {after:#?}");
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
fn an_agent_crash_mid_turn_is_reported_and_the_agent_restarted() {
    let world = World::new();
    let script = crate::harness::repo_root().join("fixtures/acp/fake_agent.py");
    let mut a =
        Acp::with_agent(world, None, false, &["python3", script.to_str().unwrap(), "crash"]);
    let session = a.session();
    a.send(&session, "go");
    // Everything up to both the connection's restart and the session's reopening.
    let (events, conn) = a.until(&session, "session_resume_failed");
    assert_eq!(text_of(&events), "about to crash");
    let exited = first(&events, "agent_exited");
    assert!(exited["payload"]["reason"].as_str().unwrap().contains("exit code 3"), "{exited}");
    let restarting = conn.iter().find(|c| c["status"] == "connecting").unwrap();
    assert!(restarting["lastError"].as_str().unwrap().contains("exit code 3"), "{restarting}");
    // This agent can neither resume nor load a session: the tab is told, and a message to it
    // says why.
    let failed = first(&events, "session_resume_failed");
    assert_eq!(failed["payload"]["code"], "not_supported", "{failed}");
    let after = a.sidecar.call("bb.sendMessage", json!({"sessionId": session, "text": "again"}));
    assert_eq!(after["error"]["code"], "not_supported", "{after}");
    a.finish();
}

/// `s` percent-encoded for a `MOCK:` directive.
pub(crate) fn pct(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The first event of a type.
pub(crate) fn first<'a>(events: &'a [Value], kind: &str) -> &'a Value {
    events.iter().find(|e| e["type"] == kind).unwrap_or_else(|| panic!("no {kind} in {events:#?}"))
}

/// The config option `id` of a `config.options` / `config.set` answer.
fn option<'a>(answer: &'a Value, id: &str) -> &'a Value {
    answer["result"]["output"]["configOptions"]
        .as_array()
        .and_then(|o| o.iter().find(|o| o["id"] == id))
        .unwrap_or_else(|| panic!("no config option {id} in {answer}"))
}

#[test]
fn kilo_sessions_list_close_resume_and_delete_not_offered() {
    let Some(mut a) = Acp::start(false) else { return };
    let s = a.session();
    assert_eq!(text_of(&a.turn(&s, "Say it MOCK:text:first%20words")), "first words");

    // The tab closes: the agent closes the session; it stays listed.
    let closed = a.command(&s, "session.close", json!({}));
    assert_eq!(closed["result"]["output"]["agentClosed"], true, "{closed}");
    let events = a.sidecar.session_events_until(&s, "session_closed", LONG);
    assert_eq!(first(&events, "session_closed")["class"], "session.info");
    let listed = a.sidecar.ok("bb.listSessions", json!({}));
    assert!(listed["sessions"].as_array().unwrap().iter().any(|x| x["sessionId"] == s.as_str()));

    // Used again, it reopens with `session/resume`: no replay of its history.
    let events = a.turn(&s, "Say it MOCK:text:after%20the%20close");
    assert_eq!(text_of(&events), "after the close");
    assert!(!events.iter().any(|e| e["type"] == "user_message_chunk"), "a replay: {events:#?}");

    // Kilo offers no `session/delete`.
    let del = a.sidecar.call("bb.deleteSession", json!({"sessionId": s}));
    assert_eq!(del["error"]["code"], "not_supported", "{del}");
    assert!(del["error"]["message"].as_str().unwrap().contains("session/delete"), "{del}");

    // A new bridge lists it from the agent's `session/list` and resumes it when selected.
    a.restart_sidecar();
    let listed = a.sidecar.ok("bb.listSessions", json!({}));
    assert!(
        listed["sessions"].as_array().unwrap().iter().any(|x| x["sessionId"] == s.as_str()),
        "{listed}"
    );
    a.sidecar.ok("bb.selectSession", json!({"sessionId": s}));
    assert_eq!(text_of(&a.turn(&s, "Say it MOCK:text:a%20new%20bridge")), "a new bridge");
    a.finish();
}

#[test]
fn kilo_model_switch_through_config_options_is_remembered_for_the_workspace() {
    let Some(mut a) = Acp::start(false) else { return };
    let s = a.session();
    let options = a.command(&s, "config.options", json!({}));
    assert_eq!(option(&options, "model")["currentValue"], "mock/mock-model", "{options}");
    // The agent's commands, for the prompt box's `/` menu (Kilo sends them after the session
    // is created).
    a.sidecar.session_events_until(&s, "available_commands_update", LONG);
    let commands = a.command(&s, "commands", json!({}));
    let commands = commands["result"]["output"]["commands"].as_array().unwrap();
    assert!(commands.iter().any(|c| c["name"] == "init"), "{commands:#?}");
    let events = a.turn(&s, "MOCK:text:on%20the%20first");
    let usage = first(&events, "usage_update");
    assert_eq!(usage["class"], "session.info");
    assert_eq!(usage["payload"]["size"], 128000, "{usage}");

    let set =
        a.command(&s, "config.set", json!({"configId": "model", "value": "mock/other-model"}));
    assert_eq!(option(&set, "model")["currentValue"], "mock/other-model", "{set}");
    let bad = a.command(&s, "config.set", json!({"configId": "model", "value": "nope/none"}));
    assert_eq!(bad["error"]["code"], "invalid_params", "{bad}");
    assert!(bad["error"]["message"].as_str().unwrap().contains("mock/other-model"), "{bad}");
    let events = a.turn(&s, "MOCK:text:on%20the%20other");
    // The switch reached the tab, and the turn ran on the other model (its context size).
    assert!(
        events.iter().any(|e| e["type"] == "config_option_update"
            && e.to_string().contains("\"currentValue\":\"mock/other-model\"")),
        "{events:#?}"
    );
    assert_eq!(first(&events, "usage_update")["payload"]["size"], 64000);

    // Remembered for the workspace: the next session starts on it, also in a new bridge.
    let s2 = a.session();
    let options = a.command(&s2, "config.options", json!({}));
    assert_eq!(option(&options, "model")["currentValue"], "mock/other-model", "{options}");
    let file = a.world.path("project/.bb-bridge/state/acp-config.json");
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(saved.contains("mock/other-model") && saved.contains("Kilo"), "{saved}");
    a.restart_sidecar();
    let s3 = a.session();
    let options = a.command(&s3, "config.options", json!({}));
    assert_eq!(option(&options, "model")["currentValue"], "mock/other-model", "{options}");

    // Kilo sends no `plan`: its todo tool's call carries the list (the tasks lane's todos).
    let todos = json!({"todos": [
        {"content": "first", "status": "in_progress", "priority": "high", "id": "1"},
        {"content": "second", "status": "pending", "priority": "low", "id": "2"}]});
    let events = a.turn(&s3, &format!("Plan MOCK:tool:todowrite:{}", pct(&todos.to_string())));
    let call = events
        .iter()
        .find(|e| e["payload"]["rawInput"]["todos"].as_array().is_some_and(|t| t.len() == 2))
        .unwrap_or_else(|| panic!("no todo list: {events:#?}"));
    assert!(call["class"] == "tool.call" || call["class"] == "tool.result", "{call}");
    a.finish();
}

#[test]
fn kilo_approved_edit_is_written_through_the_bridge() {
    let Some(mut a) = Acp::start(true) else { return };
    let s = a.session();
    a.send(&s, "Write it MOCK:write:notes.txt");
    let events = a.permission(&s);
    let id = last_request_id(&events);
    a.sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": s, "requestId": id, "decision": "allow_once"}),
    );
    let events = a.sidecar.session_events_until(&s, "turn_ended", LONG);
    // Kilo sends the approved content through `fs/write_text_file`: the bridge writes it
    // (inside the workspace, trusted) without asking again: the approval covered it.
    let write = first(&events, "fs_write");
    assert_eq!(write["class"], "run.diff");
    assert!(write["payload"]["path"].as_str().unwrap().ends_with("/project/notes.txt"), "{write}");
    assert!(!events.iter().any(|e| e["type"] == "request_permission"), "{events:#?}");
    let written = std::fs::read_to_string(a.world.path("project/notes.txt")).unwrap();
    assert_eq!(written, "hello from mock\n");
    let metrics = a.command(&s, "metrics", json!({}));
    assert_eq!(metrics["result"]["output"]["kilo.cli.acp.fs.write_count"], 1, "{metrics}");
    a.finish();
}

#[test]
fn kilo_stop_answers_a_pending_permission_cancelled() {
    let Some(mut a) = Acp::start(true) else { return };
    let s = a.session();
    a.send(&s, "Run it MOCK:bash:echo%20owl90");
    let id = last_request_id(&a.permission(&s));
    a.sidecar.ok("bb.stop", json!({"sessionId": s}));
    let events = a.sidecar.session_events_until(&s, "turn_ended", LONG);
    let settled = first(&events, "permission_settled");
    assert_eq!(settled["payload"]["requestId"], id.as_str());
    assert_eq!(settled["payload"]["outcome"]["outcome"], "cancelled", "{settled}");
    assert_eq!(first(&events, "turn_ended")["payload"]["stopReason"], "cancelled");
    let late = a.sidecar.call(
        "bb.approvePermission",
        json!({"sessionId": s, "requestId": id, "decision": "allow_once"}),
    );
    assert_eq!(late["error"]["code"], "permission_not_pending", "{late}");
    a.sidecar.state(LONG, "no pending permission", |st| st["pendingPermissionCount"] == 0);
    a.finish();
}

#[test]
fn kilo_killed_mid_turn_is_restarted_and_its_session_resumed() {
    let Some(mut a) = Acp::start(false) else { return };
    let s = a.session();
    a.send(&s, "Go MOCK:slow");
    a.sidecar.session_events_until(&s, "agent_message_chunk", LONG);
    let old = a.agent;
    let killed =
        std::process::Command::new("kill").args(["-KILL", &old.to_string()]).status().unwrap();
    assert!(killed.success());
    // Everything up to the resume: the session's events and the connection's.
    let (events, mut connection) = a.until(&s, "session_resumed");
    let error = first(&events, "turn_error");
    assert_eq!(error["payload"]["code"], "acp_connection_closed", "{error}");
    assert!(error["payload"]["message"].as_str().unwrap().contains("signal 9"), "{error}");
    assert!(
        first(&events, "agent_exited")["payload"]["reason"].as_str().unwrap().contains("signal 9")
    );
    assert_eq!(first(&events, "agent_restarting")["class"], "run.error_or_gap");
    assert_eq!(first(&events, "session_resumed")["payload"]["how"], "resume");
    assert!(connection.iter().any(|c| c["status"] == "connecting"), "{connection:#?}");
    let deadline = std::time::Instant::now() + LONG;
    while !connection.iter().any(|c| c["status"] == "connected") {
        assert!(std::time::Instant::now() < deadline, "{connection:#?}");
        let m = a.sidecar.wait_event(LONG, "connected", |m| m["topic"] == "bb/connection");
        connection.push(m["payload"].clone());
    }
    assert!(is_dead(old));
    a.agent = a.agent_pid();
    assert_ne!(a.agent, old);
    assert_eq!(text_of(&a.turn(&s, "MOCK:text:back%20again")), "back again");
    let metrics = a.command(&s, "metrics", json!({}));
    assert_eq!(metrics["result"]["output"]["kilo.cli.acp.restart_count"], 1, "{metrics}");
    a.finish();
}
