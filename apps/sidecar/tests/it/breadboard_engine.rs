//! `bb-sidecar` against a fake BreadBoard engine that behaves like the real one (README §11):
//! seq jumps refilled without a false loss, stop as a request, unknown sessions and bad ids,
//! files without a workspace, replay-fed permissions, a restarted sidecar listing and resuming
//! sessions on its own, a SIGKILL mid-stream with no event twice and none missing, an
//! ended stream re-selected without its history again, and a detached second window of a
//! `--listen` sidecar whose events survive a SIGKILL of the bridge.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use bb_breadboard::client::BreadboardClient;
use bb_engine_client::transport::{EngineAuth, HttpOptions, HttpTransport};
use bb_fake_engine::{
    DecisionFault, EngineConfig, FakeEngine, Faults, RunningEngine, ScriptSource,
};
use serde_json::{Value, json};

use crate::harness::{Sidecar, World, eventually, wait_card};

const WAIT: Duration = Duration::from_secs(30);

/// A fake engine served on a runtime of the test's own, and a REST client to it.
struct Engine {
    runtime: tokio::runtime::Runtime,
    running: RunningEngine,
    client: BreadboardClient,
}

impl Engine {
    fn start(config: EngineConfig) -> Self {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let running = runtime
            .block_on(FakeEngine::new(config).serve("127.0.0.1:0".parse().unwrap()))
            .unwrap();
        let transport =
            HttpTransport::new(running.url(), EngineAuth::None, HttpOptions::default()).unwrap();
        let client = BreadboardClient::new(Arc::new(transport));
        Self { runtime, running, client }
    }

    /// An engine that plays `turn` (script lines) for every input.
    fn scripted(turn: &[String]) -> Self {
        Self::start(EngineConfig {
            scripts: vec![ScriptSource::Inline(turn.join("\n"))],
            ..EngineConfig::default()
        })
    }

    fn url(&self) -> &str {
        self.running.url()
    }

    fn engine(&self) -> &FakeEngine {
        self.running.engine()
    }
}

/// `--engine breadboard` arguments (no `--workspace` unless given), the workspace trusted:
/// these tests approve the engine's requests (trust itself is `trust.rs`'s).
fn args(engine: &Engine, state: &str, workspace: Option<&str>) -> Vec<String> {
    let mut args: Vec<String> = [
        "--trusted",
        "--engine",
        "breadboard",
        "--engine-url",
        engine.url(),
        "--engine-config",
        "agent.yaml",
        "--state-dir",
        state,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    if let Some(w) = workspace {
        args.extend(["--workspace".to_owned(), w.to_owned()]);
    }
    args
}

fn spawn(args: &[String], world: &World, log: &str) -> Sidecar {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Sidecar::spawn(&args, &world.env(), world.path(log))
}

fn line(kind: &str, payload: &Value, delay_ms: u64) -> String {
    json!({"type": kind, "payload": payload, "delay_ms": delay_ms}).to_string()
}

fn messages(range: std::ops::RangeInclusive<u32>, delay_ms: u64) -> Vec<String> {
    range.map(|i| line("assistant_message", &json!({"text": format!("m{i}")}), delay_ms)).collect()
}

/// Every engine event (numeric id) of `session` the sidecar wrote, in order, from its lines.
fn written_ids(sidecar: &Sidecar, session: &str) -> Vec<u64> {
    ids_in(&sidecar.seen, session)
}

fn bridge_warnings(sidecar: &Sidecar) -> Vec<String> {
    sidecar
        .seen
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["topic"] == "bb/events")
        .flat_map(|m| m["payload"]["events"].as_array().cloned().unwrap_or_default())
        .filter(|e| e["type"] == "warning" && e["payload"]["source"] == "bridge")
        .filter_map(|e| e["payload"]["message"].as_str().map(str::to_owned))
        .collect()
}

fn connection_errors(sidecar: &Sidecar) -> Vec<String> {
    sidecar
        .seen
        .iter()
        .filter(|l| l.contains("\"bb/connection\""))
        .filter(|l| l.contains("\"error\"") || l.contains("\"gapDetected\":true"))
        .cloned()
        .collect()
}

fn assert_once_in_order(ids: &[u64], what: &str) {
    let first = ids.first().copied().unwrap_or(1);
    let last = ids.last().copied().unwrap_or(0);
    assert_eq!(ids, (first..=last).collect::<Vec<_>>(), "{what}: every event once, in order");
}

#[test]
fn dropped_events_are_refilled_without_a_false_loss() {
    let world = World::new();
    let mut turn = messages(1..=40, 2);
    turn.push(line("run_finished", &json!({"completed": true, "reason": "done"}), 0));
    let faults = Faults { drop_every: Some(4), ..Faults::default() };
    let engine = Engine::start(EngineConfig {
        scripts: vec![ScriptSource::Inline(turn.join("\n"))],
        faults,
        ..EngineConfig::default()
    });
    let mut sidecar = spawn(
        &args(&engine, &world.path("state").display().to_string(), None),
        &world,
        "drops.err",
    );
    sidecar.ok("bb.init", json!({}));
    let session =
        sidecar.ok("bb.createSession", json!({}))["sessionId"].as_str().unwrap().to_owned();
    sidecar.ok("bb.sendMessage", json!({"sessionId": session, "text": "go"}));
    let events = sidecar.session_events_until(&session, "run_finished", WAIT);
    let texts: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "assistant_message")
        .filter_map(|e| e["payload"]["text"].as_str())
        .collect();
    let wanted: Vec<String> = (1..=40).map(|i| format!("m{i}")).collect();
    assert_eq!(texts, wanted, "every message, once, in order");
    assert_once_in_order(&written_ids(&sidecar, &session), "drops at 1 in 4");
    assert_eq!(bridge_warnings(&sidecar), Vec::<String>::new(), "a refilled jump is no loss");
    assert_eq!(connection_errors(&sidecar), Vec::<String>::new());
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(WAIT).success());
}

#[test]
fn stop_is_a_request_and_replayed_permissions_settle_as_stale() {
    let world = World::new();
    let mut replay = vec![line(
        "permission_request",
        &json!({"request_id": "replayed-1", "tool": "bash", "kind": "run"}),
        0,
    )];
    replay.extend(messages(1..=6, 250));
    let file = world.path("slow.jsonl");
    std::fs::write(&file, replay.join("\n")).unwrap();
    let engine = Engine::start(EngineConfig::default());
    let mut sidecar =
        spawn(&args(&engine, &world.path("state").display().to_string(), None), &world, "stop.err");
    sidecar.ok("bb.init", json!({}));
    let session =
        sidecar.ok("bb.createSession", json!({}))["sessionId"].as_str().unwrap().to_owned();
    let input = format!("replay:{}", file.display());
    sidecar.ok("bb.sendMessage", json!({"sessionId": session, "text": input}));
    sidecar.session_events_until(&session, "permission_request", WAIT);
    sidecar.state(WAIT, "the replayed request pending", |s| s["pendingPermissionCount"] == 1);
    // The engine never blocked on it: a decision is refused, and the request settles.
    let answer = sidecar.call(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": "replayed-1", "decision": "allow_once"}),
    );
    assert_eq!(answer["error"]["code"], "permission_not_pending", "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("stale"), "{answer}");
    sidecar.state(WAIT, "nothing pending", |s| s["pendingPermissionCount"] == 0);

    sidecar.session_events_until(&session, "assistant_message", WAIT);
    sidecar.ok("bb.stop", json!({"sessionId": session}));
    sidecar.session_events_until(&session, "task_event", WAIT);
    // The replay runs on after the stop request: the turn is still running.
    sidecar.session_events_until(&session, "assistant_message", WAIT);
    let state = sidecar.state(WAIT, "a state", |_| true);
    assert_eq!(state["running"], true, "stop did not end the turn: {state}");
    let rest = sidecar.session_events_until(&session, "run_finished", WAIT);
    let completion = rest.iter().find(|e| e["type"] == "completion").unwrap();
    assert_eq!(completion["payload"]["summary"]["reason"], "replay");
    sidecar.state(WAIT, "the turn over", |s| s["running"] == false);
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(WAIT).success());
}

#[test]
fn one_bad_call_is_not_a_dead_engine() {
    let world = World::new();
    let engine = Engine::start(EngineConfig::default());
    let mut sidecar =
        spawn(&args(&engine, &world.path("state").display().to_string(), None), &world, "bad.err");
    sidecar.ok("bb.init", json!({}));
    for method in ["bb.selectSession", "bb.sendMessage", "bb.stop", "bb.deleteSession"] {
        let answer = sidecar.call(method, json!({"sessionId": "../etc", "text": "x"}));
        assert_eq!(answer["error"]["code"], "invalid_request", "{method}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("the bridge refused"), "{method}: {message}");
        assert!(!message.contains("HTTP"), "no HTTP status that was never sent: {message}");
    }
    let unknown = sidecar.call("bb.selectSession", json!({"sessionId": bb_fake_engine::uuid4()}));
    assert_eq!(unknown["error"]["code"], "session_not_found", "{unknown}");
    let session = sidecar_session(&mut sidecar);
    let unsupported =
        sidecar.call("bb.command", json!({"sessionId": session, "command": "apply_diff"}));
    assert_eq!(unsupported["error"]["code"], "not_supported", "{unsupported}");

    // Files without --workspace: the engine's 409, said clearly.
    let files = sidecar.call("bb.listFiles", json!({"sessionId": session, "path": "."}));
    assert_eq!(files["error"]["code"], "invalid_request", "{files}");
    assert!(files["error"]["message"].as_str().unwrap().contains("--workspace"), "{files}");

    // A session deleted behind the bridge's back is marked ended, with a reason (the adapter
    // reports status `ended`; the host's own `bb/state` status is derived from `running`).
    sidecar.session_events_until(&session, "skills_selection", WAIT);
    engine.runtime.block_on(engine.client.delete_session(&session, WAIT)).unwrap();
    if !bridge_warnings(&sidecar).iter().any(|w| w.contains("no longer holds this session")) {
        sidecar.wait_event(WAIT, "the reason in the transcript", |m| {
            m["topic"] == "bb/events"
                && m["payload"]["events"].as_array().is_some_and(|all| {
                    all.iter().any(|e| {
                        e["payload"]["message"]
                            .as_str()
                            .is_some_and(|t| t.contains("no longer holds this session"))
                    })
                })
        });
    }
    assert_eq!(connection_errors(&sidecar), Vec::<String>::new(), "bb/connection unaffected");
    sidecar.ok("bb.createSession", json!({}));
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(WAIT).success());
}

fn sidecar_session(sidecar: &mut Sidecar) -> String {
    sidecar.ok("bb.createSession", json!({}))["sessionId"].as_str().unwrap().to_owned()
}

#[test]
fn a_killed_sidecar_restarts_resuming_with_no_event_twice_and_none_missing() {
    let world = World::new();
    let mut turn = messages(1..=3, 50);
    // A long quiet spell mid-stream: the kill lands in it.
    turn.push(line("assistant_message", &json!({"text": "m4"}), 3000));
    turn.extend(messages(5..=8, 50));
    turn.push(line(
        "permission_request",
        &json!({"request_id": "perm-1", "tool": "bash", "kind": "run", "pattern": "make *", "default_scope": "project"}),
        0,
    ));
    turn.extend(messages(9..=10, 0));
    let engine = Engine::scripted(&turn);
    let state = world.path("state");
    let args = args(&engine, &state.display().to_string(), None);

    let mut first = spawn(&args, &world, "first.err");
    first.ok("bb.init", json!({}));
    let session = first.ok("bb.createSession", json!({}))["sessionId"].as_str().unwrap().to_owned();
    first.ok("bb.sendMessage", json!({"sessionId": session, "text": "go"}));
    let m3 = |events: &[Value]| events.iter().any(|e| e["payload"]["text"] == "m3");
    while !m3(&first.session_events_until(&session, "assistant_message", WAIT)) {}
    let last = *written_ids(&first, &session).last().unwrap();
    // The saved position follows what was written (within the save interval, no exit).
    let cursor = || saved_position(&state, &session);
    eventually(WAIT, "the position saved", || cursor() == Some(last));
    first.child.kill().unwrap();
    first.wait_exit(WAIT);

    // A new sidecar, with no select and no list: the session is listed and its stream
    // resumes on its own, the pending permission included.
    let mut second = spawn(&args, &world, "second.err");
    second.ok("bb.init", json!({}));
    second.state(WAIT, "the session listed", |s| {
        s["sessions"]
            .as_array()
            .is_some_and(|all| all.iter().any(|x| x["sessionId"] == session.as_str()))
    });
    second.session_events_until(&session, "permission_request", WAIT);
    second.state(WAIT, "the permission pending", |s| s["pendingPermissionCount"] == 1);
    second.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": "perm-1", "decision": "allow_rule"}),
    );
    second.session_events_until(&session, "run_finished", WAIT);
    second.close_stdin();
    assert!(second.wait_exit(WAIT).success());

    let mut ids = written_ids(&first, &session);
    let resumed = written_ids(&second, &session);
    assert_eq!(resumed.first(), Some(&(last + 1)), "resumes right after the last written event");
    ids.extend(resumed);
    assert_once_in_order(&ids, "across the kill");
    assert_eq!(ids.first(), Some(&1));
    let unique: BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len());
}

#[test]
fn an_ended_stream_reselected_resumes_from_its_position() {
    let world = World::new();
    let file = world.path("fails.jsonl");
    let mut replay = messages(1..=3, 0);
    replay.push(line("no_such_event_type", &json!({}), 0));
    std::fs::write(&file, replay.join("\n")).unwrap();
    let engine = Engine::start(EngineConfig::default());
    let mut sidecar = spawn(
        &args(&engine, &world.path("state").display().to_string(), None),
        &world,
        "ended.err",
    );
    sidecar.ok("bb.init", json!({}));
    let session =
        sidecar.ok("bb.createSession", json!({}))["sessionId"].as_str().unwrap().to_owned();
    let input = format!("replay:{}", file.display());
    sidecar.ok("bb.sendMessage", json!({"sessionId": session, "text": input}));
    sidecar.session_events_until(&session, "error", WAIT);
    let last = *written_ids(&sidecar, &session).last().unwrap();

    // Select until the ended stream is reopened (a select while its task still winds down
    // finds it running and opens nothing).
    let resumed = || {
        engine.engine().stream_requests().iter().any(|r| {
            r.session_id == session && r.last_event_id.as_deref() == Some(&last.to_string())
        })
    };
    for _ in 0..600 {
        if resumed() {
            break;
        }
        sidecar.ok("bb.selectSession", json!({"sessionId": session}));
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(resumed(), "re-selecting reopened the stream after seq {last}");
    let requests = engine.engine().stream_requests();
    let ours: Vec<_> = requests.iter().filter(|r| r.session_id == session).collect();
    assert!(
        ours.iter().skip(1).all(|r| r.last_event_id.is_some()),
        "never reopened from the start: {ours:?}"
    );
    // A round trip after the reopen: whatever it sent has been read by now.
    sidecar.ok("bb.listSessions", json!({}));
    let ids = written_ids(&sidecar, &session);
    assert_once_in_order(&ids, "after re-selecting");
    assert_eq!(ids.last(), Some(&last));
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(WAIT).success());
}

#[test]
fn after_an_engine_restart_lost_sessions_end_with_a_reason_stay_readable_and_the_connection_recovers()
 {
    let world = World::new();
    let mut engine = Engine::start(EngineConfig::default());
    let url = engine.url().to_owned();
    let addr: std::net::SocketAddr = url.trim_start_matches("http://").parse().unwrap();
    let mut sidecar = spawn(
        &args(&engine, &world.path("state").display().to_string(), None),
        &world,
        "restart.err",
    );
    sidecar.ok("bb.init", json!({}));
    let session = sidecar_session(&mut sidecar);
    sidecar.session_events_until(&session, "skills_selection", WAIT);

    // The engine dies (its sessions live in memory) and a new one comes up on the same port.
    // The session's stream may hear of the loss before the health check sees the engine down,
    // so the reason is looked for from here on, in either order.
    let lost_reason = |m: &Value| {
        m["topic"] == "bb/events"
            && m["payload"]["sessionId"] == session.as_str()
            && m["payload"]["events"].as_array().is_some_and(|all| {
                all.iter().any(|e| {
                    e["payload"]["message"]
                        .as_str()
                        .is_some_and(|t| t.contains("no longer holds this session"))
                })
            })
    };
    let mut reason_seen = false;
    let Engine { runtime, running, client } = engine;
    running.stop();
    sidecar.wait_event(WAIT, "the engine seen as down", |m| {
        reason_seen |= lost_reason(m);
        m["topic"] == "bb/connection" && m["payload"]["status"] == "connecting"
    });
    let running = loop {
        match runtime.block_on(FakeEngine::new(EngineConfig::default()).serve(addr)) {
            Ok(running) => break running,
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    engine = Engine { runtime, running, client };
    if !reason_seen {
        sidecar.wait_event(WAIT, "the reason in the transcript", lost_reason);
    }
    sidecar.wait_event(WAIT, "the connection back", |m| {
        m["topic"] == "bb/connection" && m["payload"]["status"] == "connected"
    });
    // The new engine works through the same sidecar.
    let fresh = sidecar_session(&mut sidecar);
    assert!(engine.engine().last_seq(&fresh).is_some(), "created on the new engine");

    // The lost session can be selected again: what the bridge kept, read-only, ended, with
    // a notice saying so; a message to it says how to go on instead of a bare not-found.
    sidecar.ok("bb.selectSession", json!({"sessionId": session, "tabId": "lost"}));
    sidecar.wait_event(WAIT, "the read-only notice", |m| {
        m["topic"] == "bb/events"
            && m["payload"]["tabId"] == "lost"
            && m.to_string().contains("read-only: start a new session to go on")
    });
    sidecar.state(WAIT, "the lost session ended", |s| {
        s["sessions"].as_array().is_some_and(|all| {
            all.iter().any(|x| x["sessionId"] == session.as_str() && x["status"] == "ended")
        })
    });
    let sent = sidecar.call("bb.sendMessage", json!({"sessionId": session, "text": "hello?"}));
    assert_eq!(sent["error"]["code"], "session_not_found", "{sent}");
    let said = sent["error"]["message"].as_str().unwrap();
    assert!(said.contains("read-only") && said.contains("bb.createSession"), "{said}");
    // A session id the bridge never knew is still simply not found.
    let unknown = sidecar.call("bb.selectSession", json!({"sessionId": "no-such-session"}));
    assert_eq!(unknown["error"]["code"], "session_not_found", "{unknown}");
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(WAIT).success());
}

/// The saved prompts of the state directory, as `(sessionId, requestId)`.
fn saved_prompts(state: &std::path::Path) -> Vec<(String, String)> {
    let Ok(text) = std::fs::read_to_string(state.join("prompts.json")) else { return Vec::new() };
    let Ok(file) = serde_json::from_str::<Value>(&text) else { return Vec::new() };
    file["prompts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let field = |k: &str| p[k].as_str().unwrap_or_default().to_owned();
            (field("sessionId"), field("requestId"))
        })
        .collect()
}

/// A pending approval the engine still holds outlives a SIGKILLed sidecar. The kill comes
/// after the stream position was saved past the request, so the resumed stream does not
/// carry it again: a new sidecar on the same state directory shows it from its saved
/// record (its original id, the count in `bb/state`, the card in a reattaching tab's
/// updates), and answering it reaches the engine, which finishes the turn; the input queued
/// behind it (kept by the engine) then runs.
#[test]
fn a_pending_approval_survives_a_killed_sidecar_and_is_answered_after_it() {
    pending_approval_survives_a_killed_sidecar("updates");
}

/// The same for a webview receiving both events and updates: its reattached tab gets the
/// restored card as an update too (the request was shown again before any webview wanted
/// updates, so binding the tab sends the session's view).
#[test]
fn a_restored_approval_reaches_a_webview_receiving_both_as_a_card() {
    pending_approval_survives_a_killed_sidecar("both");
}

/// A turn of two messages, a command approval `request` (a bash run), then one more message.
fn turn_asking(request: &str) -> Vec<String> {
    let mut turn = messages(1..=2, 20);
    turn.push(line(
        "permission_request",
        &json!({"request_id": request, "tool": "bash", "kind": "run", "pattern": "make *", "default_scope": "project"}),
        20,
    ));
    turn.push(line("assistant_message", &json!({"text": "after the approval"}), 0));
    turn
}

fn pending_approval_survives_a_killed_sidecar(receive: &str) {
    let world = World::new();
    let engine = Engine::scripted(&turn_asking("perm-7"));
    let state = world.path("state");
    let args = args(&engine, &state.display().to_string(), None);

    let mut first = spawn(&args, &world, "first.err");
    first.ok("bb.init", json!({}));
    let session = sidecar_session(&mut first);
    first.ok("bb.sendMessage", json!({"sessionId": session, "text": "go"}));
    first.session_events_until(&session, "permission_request", WAIT);
    first.state(WAIT, "the permission pending", |s| s["pendingPermissionCount"] == 1);
    // An input queued behind the waiting turn: the engine keeps it.
    first.ok("bb.sendMessage", json!({"sessionId": session, "text": "again"}));
    let last = *written_ids(&first, &session).last().unwrap();
    let cursor = || saved_position(&state, &session);
    eventually(WAIT, "the position saved past the request", || cursor() == Some(last));
    let want = vec![(session.clone(), "perm-7".to_owned())];
    eventually(WAIT, "the pending request saved", || saved_prompts(&state) == want);
    first.child.kill().unwrap();
    first.wait_exit(WAIT);

    let mut second = spawn(&args, &world, "second.err");
    // The window reattaches its tab, as the page does after a reload: it gets the card.
    second.ok("bb.init", json!({"receive": receive, "lastSeen": {"tab-1": 40}}));
    second.state(WAIT, "the permission pending again", |s| s["pendingPermissionCount"] == 1);
    second.ok("bb.selectSession", json!({"sessionId": session, "tabId": "tab-1"}));
    let card = wait_card(&mut second, "perm-7", |c| c["resolved"] != true);
    assert_eq!(card["permissionId"], "perm-7", "{card}");

    second.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": "perm-7", "decision": "allow_once"}),
    );
    let answered = wait_card(&mut second, "perm-7", |c| c["resolved"] == true);
    assert_eq!(answered["decision"], "allowed once", "{answered}");
    // The engine took the answer, finished the turn, then ran the queued input: its turn
    // asks again (a new request of the same id, a new card).
    let again = wait_card(&mut second, "perm-7", |c| c["key"] != answered["key"]);
    assert_ne!(again["resolved"], true, "{again}");
    let answer = json!({"sessionId": session, "requestId": "perm-7", "decision": "deny"});
    second.ok("bb.approvePermission", answer);
    second.state(WAIT, "nothing pending", |s| s["pendingPermissionCount"] == 0);
    eventually(WAIT, "both turns finished on the engine", || {
        !engine.engine().has_pending_permission(&session)
            && engine.engine().last_seq(&session) > Some(last + 8)
    });
    eventually(WAIT, "nothing saved any more", || saved_prompts(&state).is_empty());
    second.close_stdin();
    assert!(second.wait_exit(WAIT).success());
}

/// An answer on its way when the sidecar is SIGKILLed (the engine holds the decision's
/// request, nothing decided, and loses it with its sender) was saved before it was sent: the
/// restarted sidecar does not ask again. The reattaching window's card is resolved with that
/// answer and who gave it, never pending; the sidecar delivers the answer itself and the
/// turn goes on; nothing stays saved.
#[test]
fn an_answer_in_flight_at_a_kill_is_delivered_by_the_restarted_sidecar_not_asked_again() {
    answer_in_flight_at_a_kill(false);
}

/// The same when the engine took the first sending before the kill (here the decision
/// reaches it directly while the sidecar is down): the restarted sidecar's sending again is
/// refused as not pending, which settles it; the window sees the same resolved card, no
/// error, and the engine took one decision.
#[test]
fn an_answer_the_engine_took_before_a_kill_is_not_asked_again() {
    answer_in_flight_at_a_kill(true);
}

fn answer_in_flight_at_a_kill(taken_before_restart: bool) {
    let world = World::new();
    let engine = Engine::scripted(&turn_asking("perm-9"));
    let state = world.path("state");
    let args = args(&engine, &state.display().to_string(), None);

    let mut first = spawn(&args, &world, "first.err");
    first.ok("bb.init", json!({"receive": "both"}));
    let session = sidecar_session(&mut first);
    first.ok("bb.selectSession", json!({"sessionId": session, "tabId": "tab-1"}));
    first.ok("bb.sendMessage", json!({"sessionId": session, "text": "go"}));
    wait_card(&mut first, "perm-9", |c| c["resolved"] != true);
    engine.engine().update_faults(|f| f.decisions = DecisionFault::Hold);
    let approve = json!({"v": 1, "kind": "req", "id": "approve", "method": "bb.approvePermission",
        "params": {"sessionId": session, "requestId": "perm-9", "decision": "allow_once"}});
    first.send_line(&approve.to_string());
    eventually(WAIT, "the answer held by the engine", || engine.engine().held_decisions() == 1);
    let saved = std::fs::read_to_string(state.join("prompts.json")).unwrap();
    let saved: Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(saved["prompts"][0]["answer"]["decision"], "allow_once", "{saved}");
    first.child.kill().unwrap();
    first.wait_exit(WAIT);
    // The answer on its way is lost with its sender: nothing decided.
    engine.engine().update_faults(|f| f.decisions = DecisionFault::Lose);
    eventually(WAIT, "the held answer gone", || engine.engine().held_decisions() == 0);
    assert!(engine.engine().has_pending_permission(&session), "nothing was decided");
    engine.engine().update_faults(|f| f.decisions = DecisionFault::None);
    if taken_before_restart {
        let decided = engine.runtime.block_on(engine.client.permission_decision(
            &session,
            "perm-9",
            bb_breadboard::client::PermissionDecision::AllowOnce,
            None,
        ));
        decided.expect("the engine takes the first answer");
    }

    let mut second = spawn(&args, &world, "second.err");
    second.ok("bb.init", json!({"receive": "both", "lastSeen": {"tab-1": 1}}));
    second.ok("bb.selectSession", json!({"sessionId": session, "tabId": "tab-1"}));
    let card = wait_card(&mut second, "perm-9", |_| true);
    assert_eq!(card["resolved"], true, "not asked again: {card}");
    assert_eq!(card["decision"], "allowed once", "{card}");
    assert!(card["answeredBy"].is_object(), "who answered: {card}");
    // The turn goes on (read already, or still to come).
    if !second.seen.iter().any(|l| l.contains("after the approval")) {
        second.wait_event(WAIT, "the turn going on", |m| {
            m["topic"] == "bb/events" && m.to_string().contains("after the approval")
        });
    }
    second.state(WAIT, "nothing pending", |s| s["pendingPermissionCount"] == 0);
    assert!(!engine.engine().has_pending_permission(&session));
    let late = second.call(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": "perm-9", "decision": "deny"}),
    );
    assert_eq!(late["error"]["code"], "permission_not_pending", "{late}");
    let messages: Vec<Value> =
        second.seen.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let cards: Vec<&Value> = messages
        .iter()
        .filter(|m| m["topic"] == "bb/events")
        .flat_map(|m| m["payload"]["updates"].as_array().into_iter().flatten())
        .filter(|u| u["kind"] == "permissionRequest" && u["permissionId"] == "perm-9")
        .collect();
    assert!(cards.iter().all(|c| c["resolved"] == true), "never shown pending: {cards:?}");
    let decisions: BTreeSet<&str> = messages
        .iter()
        .filter(|m| m["topic"] == "bb/events")
        .flat_map(|m| m["payload"]["events"].as_array().into_iter().flatten())
        .filter(|e| e["type"] == "permission_response")
        .filter_map(|e| e["id"].as_str())
        .collect();
    assert!(decisions.len() <= 1, "the engine took one decision: {decisions:?}");
    eventually(WAIT, "nothing saved any more", || saved_prompts(&state).is_empty());
    second.close_stdin();
    assert!(second.wait_exit(WAIT).success());
}

/// An engine that no longer knows a saved request (here the demo engine, which lives in the
/// sidecar and died with it): the new sidecar shows the card again, then closes it as stale
/// (`bb.prompt.closed`, decision `stale`), and an answer is refused saying why: no dead
/// button.
#[test]
fn a_saved_approval_the_engine_forgot_is_closed_as_stale() {
    let world = World::new();
    let state = world.path("state").display().to_string();
    let project = world.path("project").display().to_string();
    let args: Vec<String> = ["--trusted", "--workspace", &project, "--state-dir", &state]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let mut first = spawn(&args, &world, "first.err");
    first.ok("bb.init", json!({}));
    let session = sidecar_session(&mut first);
    first.ok("bb.sendMessage", json!({"sessionId": session, "text": "Create a Makefile"}));
    first.session_events_until(&session, "permission_request", WAIT);
    let want = vec![(session.clone(), "permission_1".to_owned())];
    let state_dir = world.path("state");
    eventually(WAIT, "the pending request saved", || saved_prompts(&state_dir) == want);
    first.child.kill().unwrap();
    first.wait_exit(WAIT);

    let mut second = spawn(&args, &world, "second.err");
    second.ok("bb.init", json!({"receive": "updates"}));
    let card = wait_card(&mut second, "permission_1", |c| c["resolved"] == true);
    assert!(
        card["decision"].as_str().unwrap().starts_with("no longer known to the engine"),
        "{card}"
    );
    let late = second.call(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": "permission_1", "decision": "allow_once"}),
    );
    assert_eq!(late["error"]["code"], "permission_not_pending", "{late}");
    assert!(late["error"]["message"].as_str().unwrap().contains("no longer known to the engine"));
    eventually(WAIT, "nothing saved any more", || saved_prompts(&state_dir).is_empty());
    second.close_stdin();
    assert!(second.wait_exit(WAIT).success());
}

/// A `--listen` sidecar on `socket` with `args`, once it said it listens.
fn listening(args: &[String], socket: &std::path::Path, world: &World, log: &str) -> Sidecar {
    let mut all = vec!["--listen".to_owned(), socket.display().to_string()];
    all.extend(args.iter().cloned());
    let mut sidecar = spawn(&all, world, log);
    let said = sidecar.raw_line(WAIT);
    assert_eq!(said, format!("listening on {}", socket.display()), "{}", sidecar.stderr());
    sidecar
}

/// The stream position of `session` saved in the state directory `state`.
fn saved_position(state: &std::path::Path, session: &str) -> Option<u64> {
    let text = std::fs::read_to_string(state.join("breadboard-cursors.json")).ok()?;
    serde_json::from_str::<Value>(&text).ok()?["sessions"][session].as_u64()
}

/// Every engine event id (numeric) of `session` in `lines` (a webview's), in order.
fn ids_in(lines: &[String], session: &str) -> Vec<u64> {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["topic"] == "bb/events" && m["payload"]["sessionId"] == session)
        .flat_map(|m| m["payload"]["events"].as_array().cloned().unwrap_or_default())
        .filter_map(|e| e["id"].as_str()?.parse().ok())
        .collect()
}

/// Two windows on one session through a `--listen` sidecar; the second one goes away
/// (detached: its tab is kept for a reattach) while the first is written a turn's first
/// events. The saved stream position stays behind what the detached window was written, so
/// after a SIGKILL of the sidecar the restarted one resumes early enough: the window that
/// comes back gets every event of the turn, none missing (ids it was sent twice are
/// dropped by id, as the page does).
#[test]
fn a_detached_windows_events_survive_a_bridge_restart() {
    let world = World::new();
    let mut turn = messages(1..=3, 50);
    // A quiet spell mid-turn: the kill lands in it.
    turn.push(line("assistant_message", &json!({"text": "m4"}), 6000));
    turn.extend(messages(5..=6, 20));
    let engine = Engine::scripted(&turn);
    let state = world.path("state");
    let args = args(&engine, &state.display().to_string(), None);
    let dir = std::path::PathBuf::from(format!("/tmp/bb-resume-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("bridge.sock");

    let first = listening(&args, &socket, &world, "first.err");
    let mut a = crate::harness::Peer::connect(&socket, world.path("first.err"));
    let mut b = crate::harness::Peer::connect(&socket, world.path("first.err"));
    a.ok("bb.init", json!({}));
    b.ok("bb.init", json!({}));
    let created = a.ok("bb.createSession", json!({"tabId": "tab-a"}));
    let session = created["sessionId"].as_str().unwrap().to_owned();
    b.ok("bb.selectSession", json!({"sessionId": session, "tabId": "tab-b"}));
    b.read_for(Duration::from_millis(300));
    let b_seen = b
        .seen
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|m| (m["payload"]["tabId"] == "tab-b").then(|| m["payload"]["seq"].as_u64()))
        .flatten()
        .max()
        .unwrap_or(0);
    let b_before = ids_in(&b.seen, &session);
    b.disconnect();

    a.ok("bb.sendMessage", json!({"sessionId": session, "text": "go", "tabId": "tab-a"}));
    let m3 = |events: &[Value]| events.iter().any(|e| e["payload"]["text"] == "m3");
    while !m3(&a.session_events_until(&session, "assistant_message", WAIT)) {}
    // The turn's first event (its `user_message`): sent after the second window left.
    let first_of_turn = a
        .seen
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["topic"] == "bb/events" && m["payload"]["sessionId"] == session)
        .flat_map(|m| m["payload"]["events"].as_array().cloned().unwrap_or_default())
        .find(|e| e["type"] == "user_message")
        .and_then(|e| e["id"].as_str()?.parse::<u64>().ok())
        .expect("the turn's user_message");
    // Past the positions' save interval: what is saved is what would be resumed from.
    std::thread::sleep(Duration::from_millis(2500));
    let cursor = || saved_position(&state, &session);
    assert!(
        cursor().is_none_or(|at| at < first_of_turn),
        "the position passed what the detached window was written: {:?} (turn from {first_of_turn})",
        cursor()
    );
    let mut first = first;
    first.child.kill().unwrap();
    first.wait_exit(WAIT);
    drop(a);

    // The bridge comes back on the same socket and state; the window comes back too.
    let mut second = listening(&args, &socket, &world, "second.err");
    let mut b = crate::harness::Peer::connect(&socket, world.path("second.err"));
    b.ok("bb.init", json!({"lastSeen": {"tab-b": b_seen}}));
    b.ok("bb.selectSession", json!({"sessionId": session, "tabId": "tab-b"}));
    b.session_events_until(&session, "run_finished", WAIT);
    let mut got: Vec<u64> = b_before.clone();
    got.extend(ids_in(&b.seen, &session));
    let got: BTreeSet<u64> = got.into_iter().collect();
    let last = engine.engine().last_seq(&session).unwrap();
    // What the session streamed before the turn may or may not have reached the window
    // before it left (it read for a moment only); the turn, sent after it left, must.
    let missing: Vec<u64> = (first_of_turn..=last).filter(|id| !got.contains(id)).collect();
    assert!(
        missing.is_empty(),
        "the detached window missed {missing:?} of {first_of_turn}..={last}"
    );
    b.disconnect();
    let _ = second.child.kill();
    second.wait_exit(WAIT);
    let _ = std::fs::remove_dir_all(&dir);
}
