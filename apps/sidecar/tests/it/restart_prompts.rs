//! What a person was asked outlives a bridge restart, on the real engines: a Kilo turn
//! waiting on an approval while `bb-sidecar` is SIGKILLed and started again attached to the
//! same `kilo serve` with the same state directory (the approval shown again with its id,
//! answered, the turn finishes; an answer on its way at the kill delivered, not asked
//! again); an ACP agent's approval, which died with its sidecar, closed as stale after a
//! restart, and the prompts queued behind its turn named, not lost. The BreadBoard cases
//! are in `breadboard_engine.rs`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use serde_json::{Value, json};

use crate::acp::{Acp, last_request_id};
use crate::harness::{
    LONG, Sidecar, World, asked, eventually, kilo_bin_or_skip, streamed_text, wait_card,
};

/// A `kilo serve` the test started (attach mode: no sidecar owns it); killed on drop.
struct KiloServer {
    child: Child,
    url: String,
}

impl KiloServer {
    fn start(world: &World, bin: &std::path::Path, password: &str) -> Self {
        let mut child = Command::new(bin)
            .args(["serve", "--port", "0", "--hostname", "127.0.0.1"])
            .env_clear()
            .envs(world.env())
            .env("KILO_SERVER_USERNAME", "kilo")
            .env("KILO_SERVER_PASSWORD", password)
            .current_dir(world.path("project"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(world.path("kilo.err")).unwrap())
            .spawn()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some((_, url)) = line.rsplit_once("listening on ") {
                    let _ = tx.send(url.trim().to_owned());
                }
            }
        });
        let url = rx.recv_timeout(LONG).expect("kilo serve says where it listens");
        Self { child, url }
    }
}

impl KiloServer {
    /// Stops (`SIGSTOP`) or continues (`SIGCONT`) the server: while stopped, what the bridge
    /// sends it waits in its socket, unread and unanswered.
    fn signal(&self, signal: i32) {
        let pid = i32::try_from(self.child.id()).unwrap();
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "signal {signal} to kilo serve");
    }
}

impl Drop for KiloServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `kilo serve` of the test's own, and the arguments and environment of a trusted sidecar
/// attached to it with the state directory `state`.
fn attached(
    world: &World,
    bin: &std::path::Path,
    password: &str,
) -> (KiloServer, Vec<String>, Vec<(String, String)>) {
    let server = KiloServer::start(world, bin, password);
    let state = world.path("state").display().to_string();
    let project = world.path("project").display().to_string();
    let args = [
        "--trusted",
        "--workspace",
        &project,
        "--engine",
        "kilo",
        "--engine-url",
        &server.url,
        "--engine-password-env",
        "BB_TEST_KILO_PASSWORD",
        "--state-dir",
        &state,
    ]
    .map(str::to_owned)
    .to_vec();
    let mut env = world.env();
    env.push(("BB_TEST_KILO_PASSWORD".into(), password.into()));
    (server, args, env)
}

/// On tab `tab-1` of a new session, a turn that runs `echo WORD` once approved: the session
/// and the approval's request id, once asked.
fn asking(sidecar: &mut Sidecar, word: &str) -> (String, String) {
    sidecar.ok("bb.init", json!({}));
    let session = sidecar.ok("bb.createSession", json!({"tabId": "tab-1"}))["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let text = format!("Run it MOCK:bash:echo%20{word}");
    sidecar.ok("bb.sendMessage", json!({"sessionId": session, "text": text, "tabId": "tab-1"}));
    let request = asked(sidecar, &session, "permission.asked");
    (session, request)
}

fn saved_requests(world: &World) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(world.path("state/prompts.json")) else {
        return Vec::new();
    };
    let Ok(file) = serde_json::from_str::<Value>(&text) else { return Vec::new() };
    file["prompts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["requestId"].as_str().map(str::to_owned))
        .collect()
}

/// A Kilo turn waits on a bash approval, a prompt queued behind it; the sidecar is
/// SIGKILLed; a new one attached to the same server with the same state directory shows the
/// approval again with its id (the count in `bb/state`, the event on the reattached tab), the
/// answer reaches the engine, the turn finishes and the queued prompt (kept by the engine)
/// runs after it.
#[test]
fn a_kilo_approval_survives_a_killed_attached_sidecar_and_the_turn_finishes() {
    let Some(bin) = kilo_bin_or_skip() else { return };
    let world = World::new();
    let _mock = world.start_mock_llm("ask", "ask");
    let password = "restart-attach-secret-5150";
    let (_server, args, env) = attached(&world, &bin, password);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    let mut first = Sidecar::spawn(&args, &env, world.path("first.err"));
    let (session, request) = asking(&mut first, "restart42");
    first.state(LONG, "the approval pending", |s| s["pendingPermissionCount"] == 1);
    // A prompt queued behind the waiting turn: the engine keeps it.
    first.ok(
        "bb.sendMessage",
        json!({"sessionId": session, "text": "Then MOCK:text:queued77", "tabId": "tab-1"}),
    );
    first.wait_event(LONG, "the prompt queued", |m| {
        m["topic"] == "bb/events"
            && m["payload"]["events"].as_array().unwrap().iter().any(|e| {
                e["type"] == "session.queue.changed"
                    && e["payload"]["queued"].as_array().is_some_and(|q| !q.is_empty())
            })
    });
    eventually(LONG, "the approval saved", || saved_requests(&world) == [request.clone()]);
    first.child.kill().unwrap();
    first.wait_exit(LONG);

    let mut second = Sidecar::spawn(&args, &env, world.path("second.err"));
    second.ok("bb.init", json!({"receive": "both", "lastSeen": {"tab-1": 1}}));
    second.state(LONG, "the approval pending again", |s| s["pendingPermissionCount"] == 1);
    second.ok("bb.selectSession", json!({"sessionId": session, "tabId": "tab-1"}));
    assert_eq!(asked(&mut second, &session, "permission.asked"), request, "its original id");
    let answered = second.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": request, "decision": "allow_once"}),
    );
    assert_eq!(answered["sessionId"], session.as_str(), "{answered}");
    let events = second.session_events_until(&session, "session.turn.close", LONG);
    let ran = events.iter().any(|e| e.to_string().contains("restart42"));
    assert!(ran, "the command ran after the answer: {events:?}");
    // The queued prompt runs once the session is idle again.
    let mut text = streamed_text(&events);
    while !text.contains("queued77") {
        text.push_str(&streamed_text(&second.session_events_until(
            &session,
            "session.turn.close",
            LONG,
        )));
    }
    second.state(LONG, "nothing pending", |s| s["pendingPermissionCount"] == 0);
    eventually(LONG, "nothing saved any more", || saved_requests(&world).is_empty());
    second.close_stdin();
    assert!(second.wait_exit(LONG).success(), "{}", second.stderr());
    for line in first.seen.iter().chain(&second.seen) {
        assert!(!line.contains(password), "the password reached the webview");
    }
}

/// An answer on its way when the attached sidecar is SIGKILLed: the kill lands once the
/// answer is saved (write-ahead, with who gave it) and before Kilo took it (the server is
/// stopped from before the answer until after the kill, so the answer waits unread in its
/// socket; were Kilo to take it first, the first sidecar would close the prompt as settled
/// and the kill would test nothing). Kilo, continued, may read that answer or drop it with
/// the closed connection. Either way the next sidecar does not ask again: the reattached
/// tab's card is resolved with that answer, never pending; the sidecar sends it again
/// itself if Kilo still lists the request (else Kilo took it), the command runs once and
/// the turn finishes.
#[test]
fn a_kilo_answer_in_flight_at_a_kill_is_not_asked_again() {
    let Some(bin) = kilo_bin_or_skip() else { return };
    let world = World::new();
    let _mock = world.start_mock_llm("ask", "ask");
    let password = "restart-inflight-secret-6262";
    let (server, args, env) = attached(&world, &bin, password);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    let mut first = Sidecar::spawn(&args, &env, world.path("first.err"));
    let (session, request) = asking(&mut first, "inflight73");
    eventually(LONG, "the approval saved", || saved_requests(&world) == [request.clone()]);
    server.signal(libc::SIGSTOP);
    let approve = json!({"v": 1, "kind": "req", "id": "approve", "method": "bb.approvePermission",
        "params": {"sessionId": session, "requestId": request, "decision": "allow_once"}});
    first.send_line(&approve.to_string());
    let saved_answer = || {
        std::fs::read_to_string(world.path("state/prompts.json"))
            .is_ok_and(|t| t.contains("\"answer\"") && t.contains("allow_once"))
    };
    eventually(LONG, "the answer saved before it is sent", saved_answer);
    first.child.kill().unwrap();
    first.wait_exit(LONG);
    server.signal(libc::SIGCONT);

    let mut second = Sidecar::spawn(&args, &env, world.path("second.err"));
    second.ok("bb.init", json!({"receive": "both", "lastSeen": {"tab-1": 1}}));
    second.ok("bb.selectSession", json!({"sessionId": session, "tabId": "tab-1"}));
    let card = wait_card(&mut second, &request, |_| true);
    assert_eq!(card["resolved"], true, "not asked again: {card}");
    assert_eq!(card["decision"], "allowed once", "{card}");
    let mut events = Vec::new();
    while !events.iter().any(|e: &Value| e.to_string().contains("inflight73")) {
        events.extend(second.session_events_until(&session, "session.turn.close", LONG));
    }
    second.state(LONG, "nothing pending", |s| s["pendingPermissionCount"] == 0);
    eventually(LONG, "nothing saved any more", || saved_requests(&world).is_empty());
    let pending_cards = second
        .seen
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .flat_map(|m| m["payload"]["updates"].as_array().cloned().unwrap_or_default())
        .filter(|u| u["permissionId"] == request.as_str() && u["resolved"] != true)
        .count();
    assert_eq!(pending_cards, 0, "never shown pending after the restart");
    second.close_stdin();
    assert!(second.wait_exit(LONG).success(), "{}", second.stderr());
}

/// An ACP agent is the sidecar's child: a SIGKILLed sidecar takes it along, with the
/// approval it was waiting on. The next sidecar shows the saved card again and closes it as
/// stale, saying the engine no longer knows it; an answer is refused, not sent to a new
/// agent that never asked.
#[test]
fn an_acp_approval_that_died_with_its_sidecar_is_closed_as_stale() {
    let Some(bin) = kilo_bin_or_skip() else { return };
    let world = World::new();
    let mock = world.start_mock_llm("ask", "ask");
    let mut a = Acp::with_agent(world, Some(mock), true, &[bin.to_str().unwrap(), "acp"]);
    let s = a.session();
    a.send(&s, "Run it MOCK:bash:echo%20stale61");
    let events = a.sidecar.session_events_until(&s, "request_permission", LONG);
    let id = last_request_id(&events);
    let saved = a.world.path("project/.bb-bridge/state/prompts.json");
    eventually(LONG, "the approval saved", || {
        std::fs::read_to_string(&saved).is_ok_and(|t| t.contains(&format!("\"{id}\"")))
    });
    a.sidecar.child.kill().unwrap();
    a.sidecar.wait_exit(LONG);
    let old = a.agent;
    eventually(LONG, "the agent gone with its sidecar", || crate::harness::is_dead(old));

    a.restart_killed();
    a.sidecar.ok("bb.init", json!({"receive": "updates"}));
    let card = wait_card(&mut a.sidecar, &id, |c| c["resolved"] == true);
    let words = card["decision"].as_str().unwrap();
    assert!(words.starts_with("no longer known to the engine"), "{card}");
    let late = a.sidecar.call(
        "bb.approvePermission",
        json!({"sessionId": s, "requestId": id, "decision": "allow_once"}),
    );
    assert_eq!(late["error"]["code"], "permission_not_pending", "{late}");
    a.sidecar.state(LONG, "nothing pending", |st| st["pendingPermissionCount"] == 0);
    eventually(LONG, "nothing saved any more", || {
        std::fs::read_to_string(&saved).is_ok_and(|t| !t.contains(&format!("\"{id}\"")))
    });
    a.finish();
}

/// Prompts queued behind an ACP turn are kept in the state directory: a SIGKILLed sidecar
/// takes the agent and the turn they waited behind along, so the next one sends nothing on
/// its own but names them (`prompts_withdrawn`), and the session goes on.
#[test]
fn acp_prompts_queued_behind_a_turn_are_named_after_a_sidecar_kill() {
    let Some(bin) = kilo_bin_or_skip() else { return };
    let world = World::new();
    let mock = world.start_mock_llm("ask", "ask");
    let mut a = Acp::with_agent(world, Some(mock), true, &[bin.to_str().unwrap(), "acp"]);
    let s = a.session();
    a.send(&s, "Run it MOCK:bash:echo%20queued62");
    a.sidecar.session_events_until(&s, "request_permission", LONG);
    a.send(&s, "Then MOCK:text:waiting%20one");
    a.send(&s, "And MOCK:text:waiting%20two");
    let saved = a.world.path("project/.bb-bridge/state/acp-queued.json");
    eventually(LONG, "the queue saved", || {
        std::fs::read_to_string(&saved).is_ok_and(|t| t.contains("waiting%20two"))
    });
    a.sidecar.child.kill().unwrap();
    a.sidecar.wait_exit(LONG);
    let old = a.agent;
    eventually(LONG, "the agent gone with its sidecar", || crate::harness::is_dead(old));

    a.restart_killed();
    a.sidecar.ok("bb.init", json!({}));
    a.sidecar.ok("bb.selectSession", json!({"sessionId": s}));
    let events = a.sidecar.session_events_until(&s, "prompts_withdrawn", LONG);
    let named = events.iter().find(|e| e["type"] == "prompts_withdrawn").unwrap();
    assert_eq!(
        named["payload"]["prompts"],
        json!(["Then MOCK:text:waiting%20one", "And MOCK:text:waiting%20two"]),
        "{named}"
    );
    let message = named["payload"]["message"].as_str().unwrap();
    assert!(message.contains("restart") && message.contains("send again"), "{named}");
    assert!(!saved.exists(), "forgotten once named");
    a.sidecar.state(LONG, "nothing queued", |st| {
        st["sessions"].as_array().unwrap().iter().all(|x| x.get("queuedPrompts").is_none())
    });
    let events = a.turn(&s, "Now MOCK:text:after%20the%20restart");
    assert_eq!(crate::acp::text_of(&events), "after the restart");
    a.finish();
}
