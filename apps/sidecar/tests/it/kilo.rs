//! Against the real Kilo server (spawned and supervised by the sidecar) and the mock LLM.

use std::time::Duration;

use bb_kilo::client::KiloClient;
use bb_kilo::testing::{
    SupervisedKilo, assert_turn_from_its_start, slow_turn_streaming, supervised_kilo,
};
use serde_json::{Value, json};

use crate::harness::{
    LONG, MockLlm, Sidecar, World, cmdline, engine_tool, environ_names, eventually, is_dead,
    kilo_bin_or_skip, stat_ids, streamed_text,
};

pub(crate) struct Kilo {
    pub(crate) world: World,
    pub(crate) mock: MockLlm,
    pub(crate) sidecar: Sidecar,
    /// The engine process and the password the sidecar gave it (read from its environment).
    pub(crate) engine: u32,
    pub(crate) password: String,
    /// The engine as a client of the test's own reaches it (URL and password).
    reached: SupervisedKilo,
}

impl Kilo {
    /// Sidecar + engine + mock LLM, initialised and connected. `None` only when the real
    /// engine is explicitly opted out of.
    pub(crate) fn start() -> Option<Self> {
        Self::start_with_bash("ask")
    }

    /// As [`Kilo::start`], with the engine's permission for its shell tool.
    pub(crate) fn start_with_bash(bash: &str) -> Option<Self> {
        Self::start_in(World::new(), bash, "ask")
    }

    /// As [`Kilo::start_with_bash`], with more sidecar flags (`--trusted`).
    pub(crate) fn start_with(bash: &str, extra: &[&str]) -> Option<Self> {
        Self::start_in_with(World::new(), bash, "ask", extra)
    }

    /// As [`Kilo::start`] in `world`, with the engine's permissions for its shell and edit
    /// tools.
    pub(crate) fn start_in(world: World, bash: &str, edit: &str) -> Option<Self> {
        Self::start_in_with(world, bash, edit, &[])
    }

    /// As [`Kilo::start_in`], with more sidecar flags.
    pub(crate) fn start_in_with(
        world: World,
        bash: &str,
        edit: &str,
        extra: &[&str],
    ) -> Option<Self> {
        let mut k = Self::spawn_in(world, bash, edit, extra)?;
        let init = k.sidecar.ok("bb.init", json!({}));
        assert_eq!(init["protocolVersion"], 1);
        assert_eq!(init["engine"]["kind"], "kilo");
        k.sidecar.wait_event(LONG, "bb/connection connected", |m| {
            m["topic"] == "bb/connection" && m["payload"]["status"] == "connected"
        });
        Some(k)
    }

    /// Sidecar + engine + mock LLM, before any `bb.init` (no webview yet).
    pub(crate) fn spawn_in(world: World, bash: &str, edit: &str, extra: &[&str]) -> Option<Self> {
        let bin = kilo_bin_or_skip()?;
        let mock = world.start_mock_llm(bash, edit);
        let project = world.path("project").display().to_string();
        let mut args = vec![
            "--workspace",
            &project,
            "--engine",
            "kilo",
            "--engine-bin",
            bin.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let sidecar = Sidecar::spawn(&args, &world.env(), world.path("sidecar.err"));
        let engine = sidecar.engine_pid();
        let reached = supervised_kilo(sidecar.child.id(), LONG);
        let password = reached.password.clone();
        assert_eq!(password.len(), 64);
        Some(Self { world, mock, sidecar, engine, password, reached })
    }

    /// A REST client of the engine of the test's own.
    pub(crate) fn engine_client(&self) -> KiloClient {
        self.engine_client_in(&self.world.path("project").display().to_string())
    }

    /// A REST client of the engine of the test's own, scoped to the project `directory`.
    pub(crate) fn engine_client_in(&self, directory: &str) -> KiloClient {
        self.reached.client(directory, LONG)
    }

    pub(crate) fn create_session(&mut self) -> String {
        let created = self.sidecar.ok("bb.createSession", json!({}));
        created["sessionId"].as_str().unwrap().to_owned()
    }

    /// Waits for the engine's `permission.asked` event of `session` and returns it.
    pub(crate) fn asked(&mut self, session: &str) -> Value {
        let is_asked =
            |e: &Value| e["type"] == "permission.asked" && e["payload"]["sessionID"] == session;
        let batch = self.sidecar.wait_event(LONG, "the permission request", |m| {
            m["topic"] == "bb/events"
                && m["payload"]["events"].as_array().is_some_and(|evs| evs.iter().any(is_asked))
        });
        batch["payload"]["events"].as_array().unwrap().iter().find(|e| is_asked(e)).unwrap().clone()
    }

    pub(crate) fn send(&mut self, session: &str, text: &str) {
        let sent = self.sidecar.ok("bb.sendMessage", json!({"sessionId": session, "text": text}));
        assert_eq!(sent["sessionId"], session);
    }

    /// Closes stdin, expects exit 0 and the engine gone, and checks the password never
    /// appeared on stdout (every line read) nor in the log.
    pub(crate) fn finish(mut self) {
        self.sidecar.close_stdin();
        let status = self.sidecar.wait_exit(Duration::from_secs(60));
        let stderr = self.sidecar.stderr();
        assert!(status.success(), "sidecar exit status {status}; stderr:\n{stderr}");
        eventually(Duration::from_secs(10), "the engine to be gone", || is_dead(self.engine));
        assert!(!self.sidecar.seen.is_empty());
        let leaked = self.sidecar.seen.iter().any(|l| l.contains(&self.password));
        assert!(!leaked, "the password reached stdout");
        let log = self.world.path("sidecar.err");
        assert!(
            !stderr.contains(&self.password),
            "the password reached the log ({})",
            log.display()
        );
    }
}

fn last_state(
    sidecar: &mut Sidecar,
    within: Duration,
    what: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    sidecar.state(within, what, pred)
}

/// Init → create → send → streamed text in `bb/events` → idle; the engine's env is the
/// allow-list plus the password, which never shows on stdout, stderr or argv; stdin close
/// stops everything with exit 0.
#[test]
fn streams_a_reply_and_exits_cleanly() {
    let Some(mut k) = Kilo::start() else { return };
    let engine = k.engine;
    assert!(!cmdline(engine).contains(&k.password), "password on the engine's argv");
    let names = environ_names(engine);
    assert!(
        !names.iter().any(|n| n == "BB_TEST_DECOY_SECRET"),
        "non-allow-listed var passed: {names:?}"
    );
    assert!(
        names.iter().any(|n| n == "XDG_CONFIG_HOME"),
        "user engine config not passed: {names:?}"
    );

    let session = k.create_session();
    let state = last_state(&mut k.sidecar, LONG, "the new session selected", |s| {
        s["activeSessionId"] == session.as_str()
    });
    assert_eq!(state["running"], false);

    k.send(&session, "Say it MOCK:text:hello%20from%20the%20mock%20engine");
    let events = k.sidecar.session_events_until(&session, "session.turn.close", LONG);
    let text = streamed_text(&events);
    assert!(text.contains("hello from the mock engine"), "streamed text: {text:?}");
    let close = events.iter().find(|e| e["type"] == "session.turn.close").unwrap();
    assert_eq!(close["payload"]["reason"], "completed");
    // Engine ids are carried untouched: Kilo's `evt_…`, each seen once.
    let mut ids: Vec<&str> = events.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert!(ids.iter().all(|id| id.starts_with("evt_")), "{ids:?}");
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n, "duplicate event ids");
    assert!(events.iter().all(|e| e["payload"]["sessionID"] == session.as_str()));
    last_state(&mut k.sidecar, LONG, "the session idle", |s| s["running"] == false);

    k.finish();
}

/// `bb.stop` mid-stream aborts the turn: the session reaches a terminal state.
#[test]
fn stop_mid_stream_reaches_a_terminal_state() {
    let Some(mut k) = Kilo::start() else { return };
    let session = k.create_session();
    k.send(&session, "Go slowly MOCK:slow");
    k.sidecar.wait_event(LONG, "the first streamed delta", |m| {
        m["topic"] == "bb/events"
            && m["payload"]["events"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["type"] == "message.part.delta")
    });
    last_state(&mut k.sidecar, LONG, "running", |s| s["running"] == true);
    let stopped = k.sidecar.ok("bb.stop", json!({"sessionId": session}));
    assert_eq!(stopped["sessionId"], session.as_str());
    let events = k.sidecar.session_events_until(&session, "session.turn.close", LONG);
    let close = events.iter().find(|e| e["type"] == "session.turn.close").unwrap();
    assert_eq!(close["payload"]["reason"], "interrupted");
    assert!(
        events.iter().any(|e| e["type"] == "session.error"
            && e["payload"]["error"]["name"] == "MessageAbortedError"),
        "no abort error among {} events",
        events.len()
    );
    last_state(&mut k.sidecar, LONG, "not running after stop", |s| s["running"] == false);
    k.finish();
}

/// Two sessions streaming at once on the one engine: each batch carries only its session's
/// events and each session gets its own text.
#[test]
fn two_sessions_stream_at_once_without_cross_talk() {
    let Some(mut k) = Kilo::start() else { return };
    let a = k.create_session();
    let b = k.create_session();
    assert_ne!(a, b);
    k.send(&a, "MOCK:text:alpha%20alpha%20alpha%20alpha%20alpha%20alpha%20alpha%20alpha");
    k.send(&b, "MOCK:text:bravo%20bravo%20bravo%20bravo%20bravo%20bravo%20bravo%20bravo");
    let mut per: [(String, Vec<Value>, bool); 2] =
        [(a.clone(), Vec::new(), false), (b.clone(), Vec::new(), false)];
    while per.iter().any(|p| !p.2) {
        let batch =
            k.sidecar.wait_event(LONG, "both turns to close", |m| m["topic"] == "bb/events");
        let sid = batch["payload"]["sessionId"].as_str().unwrap().to_owned();
        let slot = per
            .iter_mut()
            .find(|p| p.0 == sid)
            .unwrap_or_else(|| panic!("events for unknown session {sid}"));
        for e in batch["payload"]["events"].as_array().unwrap() {
            assert_eq!(e["payload"]["sessionID"], sid.as_str(), "cross-talk: {e}");
            slot.2 |= e["type"] == "session.turn.close";
            slot.1.push(e.clone());
        }
    }
    let text_a = streamed_text(&per[0].1);
    let text_b = streamed_text(&per[1].1);
    assert!(text_a.contains("alpha alpha") && !text_a.contains("bravo"), "A got {text_a:?}");
    assert!(text_b.contains("bravo bravo") && !text_b.contains("alpha"), "B got {text_b:?}");
    k.finish();
}

/// Session lifecycle: list, select, delete, and clear errors for unknown sessions, commands,
/// models, modes and paths.
#[test]
fn session_lifecycle_and_errors() {
    let Some(mut k) = Kilo::start() else { return };
    let a = k.create_session();
    let b = k.create_session();
    let listed = k.sidecar.ok("bb.listSessions", json!({}));
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&a.as_str()) && ids.contains(&b.as_str()), "{ids:?}");

    k.sidecar.ok("bb.selectSession", json!({"sessionId": b}));
    last_state(&mut k.sidecar, LONG, "b active", |s| s["activeSessionId"] == b.as_str());
    k.sidecar.ok("bb.deleteSession", json!({"sessionId": b}));
    let state = last_state(&mut k.sidecar, LONG, "b gone", |s| {
        !s["sessions"].as_array().unwrap().iter().any(|x| x["sessionId"] == b.as_str())
    });
    assert!(state.get("activeSessionId").is_none(), "{state}");

    for (method, params, code) in [
        (
            "bb.selectSession",
            json!({"sessionId": "ses_doesnotexist000000000000"}),
            "session_not_found",
        ),
        ("bb.stop", json!({"sessionId": "ses_doesnotexist000000000000"}), "session_not_found"),
        (
            "bb.sendMessage",
            json!({"sessionId": "../../global/health", "text": "x"}),
            "session_not_found",
        ),
        ("bb.command", json!({"sessionId": a, "command": "no-such-command"}), "unknown_command"),
        ("bb.listFiles", json!({"sessionId": a, "path": "../"}), "path_outside_workspace"),
        ("bb.createSession", json!({"model": "other/model"}), "invalid_params"),
        ("bb.createSession", json!({"permissionMode": "yolo"}), "invalid_params"),
    ] {
        let res = k.sidecar.call(method, params);
        assert_eq!(res["ok"], false, "{method}: {res}");
        assert_eq!(res["error"]["code"], code, "{method}: {res}");
    }
    k.finish();
}

/// SIGKILL of the sidecar takes the engine with it (parent-death signal) and every process the
/// engine started (the group guard): here a `sleep 600` run by the engine's shell tool.
#[test]
fn sigkill_of_the_sidecar_leaves_no_engine_behind() {
    let Some(mut k) = Kilo::start_with_bash("allow") else { return };
    let engine = k.engine;
    assert!(!is_dead(engine));
    let session = k.create_session();
    k.send(&session, "Wait MOCK:bash:sleep%20600");
    let reaper = engine_tool(engine, "sleep 600");
    let tool = reaper.0;
    let ids = |p| stat_ids(p).map(|(_, _, pgrp, sid)| (pgrp, sid));
    eprintln!("engine (pgrp, sid) {:?}; tool {:?}", ids(engine), ids(tool));
    // SAFETY: signalling our own child process.
    let rc = unsafe { libc::kill(i32::try_from(k.sidecar.child.id()).unwrap(), libc::SIGKILL) };
    assert_eq!(rc, 0);
    k.sidecar.child.wait().unwrap();
    eventually(Duration::from_secs(10), "the engine to die with the sidecar", || is_dead(engine));
    eventually(Duration::from_secs(10), "the engine's tool process to die too", || is_dead(tool));
}

/// A webview whose `bb.init` comes while a turn is streaming (the sidecar, and the turn,
/// started before the webview was ready) gets the session from its first message: what
/// streamed before, then the rest, numbered 1, 2, … on its tab, with no gap and no resync.
#[test]
fn a_webview_initialised_mid_stream_gets_the_turn_from_its_start() {
    let Some(mut k) = Kilo::spawn_in(World::new(), "ask", "ask", &[]) else { return };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let client = k.engine_client();
    let session = rt.block_on(slow_turn_streaming(&client, 3, LONG));
    k.sidecar.ok("bb.init", json!({}));
    // Two more ticks through the webview, then the turn stopped.
    // The mock streams ticks until stopped, so each wait has an overall deadline, and the
    // text is looked for in what the deltas add up to (a tick may arrive split).
    let mut messages = Vec::new();
    let mut text = String::new();
    let mut until = |sidecar: &mut Sidecar, what: &str, done: &dyn Fn(&str, &Value) -> bool| {
        let deadline = std::time::Instant::now() + LONG;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(!left.is_zero(), "{what} not within {LONG:?}; the text so far: {text:?}");
            let m = sidecar.wait_event(left, what, |m| {
                m["topic"] == "bb/events" && m["payload"]["sessionId"] == session.as_str()
            });
            messages.push(m["payload"].clone());
            for event in m["payload"]["events"].as_array().unwrap() {
                if let Some(delta) = event["payload"]["delta"].as_str() {
                    text.push_str(delta);
                }
                if done(&text, event) {
                    return;
                }
            }
        }
    };
    until(&mut k.sidecar, "tick 5", &|text, _| text.contains("tick 5."));
    k.sidecar.ok("bb.stop", json!({"sessionId": session}));
    until(&mut k.sidecar, "the turn's close", &|_, e| e["type"] == "session.turn.close");
    assert_turn_from_its_start(&messages, 3);
    k.finish();
}
