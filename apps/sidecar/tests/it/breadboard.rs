//! `bb-sidecar` on BreadBoard: the offline demo (the default engine) end to end through every
//! v1 method, and a restarted sidecar resuming a session from its persisted stream position.

use std::sync::Arc;
use std::time::Duration;

use bb_breadboard::client::BreadboardClient;
use bb_engine_client::transport::{EngineAuth, HttpOptions, HttpTransport};
use bb_fake_engine::{EngineConfig, FakeEngine};
use secrecy::SecretString;
use serde_json::{Value, json};

use crate::harness::{Sidecar, World, eventually};

const WAIT: Duration = Duration::from_secs(30);

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().filter_map(|e| e["type"].as_str()).collect()
}

#[test]
fn the_demo_is_the_default_and_serves_every_method() {
    let world = World::new();
    let project = world.path("project");
    let workspace = project.display().to_string();
    let mut sidecar =
        Sidecar::spawn(&["--workspace", &workspace], &world.env(), world.path("demo.err"));

    // The IDE trusts the workspace: the demo's edit may be approved.
    let init = sidecar.ok("bb.init", json!({"workspaceTrusted": true}));
    assert_eq!(
        init["engine"],
        json!({"kind": "breadboard", "status": "ready", "version": "0.1.0"})
    );
    let session =
        sidecar.ok("bb.createSession", json!({}))["sessionId"].as_str().unwrap().to_owned();
    sidecar.ok("bb.sendMessage", json!({"sessionId": session, "text": "Create a Makefile"}));

    let before = sidecar.session_events_until(&session, "permission_request", WAIT);
    let seen = types(&before);
    for wanted in [
        "user_message",
        "assistant.message.delta",
        "tool_call",
        "tool_result",
        "permission_request",
    ] {
        assert!(seen.contains(&wanted), "{wanted} in {seen:?}");
    }
    sidecar.state(WAIT, "one pending permission", |s| s["pendingPermissionCount"] == 1);
    sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": "permission_1", "decision": "allow_once"}),
    );
    let after = sidecar.session_events_until(&session, "run_finished", WAIT);
    let response = after.iter().find(|e| e["type"] == "permission_response").unwrap();
    assert_eq!(response["payload"]["decision"], "once");
    assert!(types(&after).contains(&"completion"));
    sidecar.state(WAIT, "no pending permission", |s| s["pendingPermissionCount"] == 0);

    sidecar.ok("bb.openDiff", json!({"sessionId": session, "filePath": "Makefile"}));
    let diff = sidecar.wait_event(WAIT, "the diff event", |m| {
        m["topic"] == "bb/events" && m["payload"]["events"][0]["type"] == "bridge.diff"
    });
    assert!(diff["payload"]["events"][0]["payload"]["diff"].as_str().unwrap().contains("+CC=gcc"));
    let missing = sidecar.call("bb.openDiff", json!({"sessionId": session, "filePath": "nope.c"}));
    assert_eq!(missing["error"]["code"], "invalid_request");

    let unknown = sidecar.call("bb.command", json!({"sessionId": session, "command": "no_such"}));
    assert_eq!(unknown["ok"], false);
    assert_eq!(unknown["error"]["code"], "invalid_request");
    assert!(unknown["error"]["message"].as_str().unwrap().contains("Unsupported command: no_such"));
    let mode = sidecar.ok(
        "bb.command",
        json!({"sessionId": session, "command": "set_mode", "args": {"mode": "plan"}}),
    );
    assert_eq!(mode["output"]["mode"], "plan");

    let files = sidecar.ok("bb.listFiles", json!({"sessionId": session, "path": "."}));
    let hello =
        files["entries"].as_array().unwrap().iter().find(|e| e["name"] == "hello.txt").unwrap();
    assert_eq!((hello["kind"].as_str(), hello["size"].as_u64()), (Some("file"), Some(12)));
    let snippet = sidecar.ok(
        "bb.readFileSnippet",
        json!({"sessionId": session, "path": "hello.txt", "maxBytes": 5}),
    );
    // The engine's snippet over `max_bytes`: half the budget from the head, half from the
    // tail, the marker between (README §11.1).
    assert_eq!(
        (snippet["content"].as_str(), snippet["truncated"].as_bool()),
        (Some("he\n\n\u{2026} (truncated) \u{2026}\n\nd\n"), Some(true))
    );
    let outside = sidecar.call("bb.readFileSnippet", json!({"sessionId": session, "path": "../x"}));
    assert_eq!(outside["error"]["code"], "invalid_request");
    let saved = sidecar
        .ok("bb.downloadArtifact", json!({"sessionId": session, "artifactPath": "hello.txt"}));
    let saved_path = saved["savedPath"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(saved_path).unwrap(), "hello world\n");

    sidecar.ok("bb.stop", json!({"sessionId": session}));
    // A second turn waits on its permission prompt: delete still completes (the adapter
    // stops the turn and denies what is pending before the engine's blocking DELETE).
    sidecar.ok("bb.sendMessage", json!({"sessionId": session, "text": "again"}));
    sidecar.session_events_until(&session, "permission_request", WAIT);
    sidecar.ok("bb.deleteSession", json!({"sessionId": session}));
    let gone = sidecar.call("bb.selectSession", json!({"sessionId": session}));
    assert_eq!(gone["error"]["code"], "session_not_found");
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(WAIT).success());
}

#[test]
fn a_restarted_sidecar_resumes_from_the_persisted_position() {
    let world = World::new();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let token = "resume-test-token-7f3a";
    let engine = runtime
        .block_on(
            FakeEngine::new(EngineConfig {
                token: Some(SecretString::from(token)),
                default_workspace: world.path("project"),
                ..EngineConfig::default()
            })
            .serve("127.0.0.1:0".parse().unwrap()),
        )
        .unwrap();
    let url = engine.url().to_owned();
    let state = world.path("state").display().to_string();
    let mut env = world.env();
    env.push(("BB_TEST_ENGINE_TOKEN".into(), token.into()));
    let args = [
        "--engine",
        "breadboard",
        "--engine-url",
        &url,
        "--engine-token-env",
        "BB_TEST_ENGINE_TOKEN",
        "--engine-config",
        "agent.yaml",
        "--state-dir",
        &state,
    ];

    let mut first = Sidecar::spawn(&args, &env, world.path("first.err"));
    first.ok("bb.init", json!({}));
    let session = first.ok("bb.createSession", json!({}))["sessionId"].as_str().unwrap().to_owned();
    first.ok("bb.sendMessage", json!({"sessionId": session, "text": "hello"}));
    let seen = first.session_events_until(&session, "run_finished", WAIT);
    let last: u64 = seen.last().unwrap()["id"].as_str().unwrap().parse().unwrap();
    // The position follows what was written, and is saved at once (no exit needed).
    let saved = || {
        let text = std::fs::read_to_string(world.path("state/breadboard-cursors.json")).ok()?;
        serde_json::from_str::<Value>(&text).ok()?["sessions"][&session].as_u64()
    };
    eventually(WAIT, "the position of the last written event saved", || saved() == Some(last));
    first.close_stdin();
    assert!(first.wait_exit(WAIT).success());
    assert_eq!(saved(), Some(last), "an orderly exit keeps it");

    // While no sidecar runs, the session moves on.
    let transport = HttpTransport::new(
        &url,
        EngineAuth::Bearer(SecretString::from(token)),
        HttpOptions::default(),
    )
    .unwrap();
    let client = BreadboardClient::new(Arc::new(transport));
    runtime.block_on(client.send_input(&session, "again", &[])).unwrap();

    let mut second = Sidecar::spawn(&args, &env, world.path("second.err"));
    second.ok("bb.init", json!({}));
    second.ok("bb.selectSession", json!({"sessionId": session}));
    let resumed = second.session_events_until(&session, "run_finished", WAIT);
    let ids: Vec<u64> =
        resumed.iter().map(|e| e["id"].as_str().unwrap().parse().unwrap()).collect();
    assert_eq!(ids.first(), Some(&(last + 1)), "resumes right after the persisted seq: {ids:?}");
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    assert_eq!(resumed[0]["type"], "user_message");
    assert_eq!(resumed[0]["payload"]["text"], "again");
    second.close_stdin();
    assert!(second.wait_exit(WAIT).success());
    for line in first.seen.iter().chain(&second.seen) {
        assert!(!line.contains(token), "the token reached the webview: {line}");
    }
    assert!(!first.stderr().contains(token) && !second.stderr().contains(token));
}

#[test]
fn a_resume_beyond_the_engine_window_shows_the_gap_then_continues() {
    let world = World::new();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let engine = runtime
        .block_on(
            FakeEngine::new(EngineConfig { ring_capacity: 4, ..EngineConfig::default() })
                .serve("127.0.0.1:0".parse().unwrap()),
        )
        .unwrap();
    let url = engine.url().to_owned();
    let state = world.path("state").display().to_string();
    let args = [
        "--engine",
        "breadboard",
        "--engine-url",
        &url,
        "--engine-config",
        "a.yaml",
        "--state-dir",
        &state,
    ];

    let mut first = Sidecar::spawn(&args, &world.env(), world.path("first.err"));
    first.ok("bb.init", json!({}));
    let session = first.ok("bb.createSession", json!({}))["sessionId"].as_str().unwrap().to_owned();
    first.session_events_until(&session, "skills_selection", WAIT);
    first.close_stdin();
    assert!(first.wait_exit(WAIT).success());

    // Two turns while no sidecar runs: far more than the ring of 4 keeps.
    let transport = HttpTransport::new(&url, EngineAuth::None, HttpOptions::default()).unwrap();
    let client = BreadboardClient::new(Arc::new(transport));
    runtime.block_on(client.send_input(&session, "one", &[])).unwrap();
    runtime.block_on(client.send_input(&session, "two", &[])).unwrap();
    eventually(WAIT, "both turns on the engine", || engine.engine().last_seq(&session) == Some(10));

    let mut second = Sidecar::spawn(&args, &world.env(), world.path("second.err"));
    second.ok("bb.init", json!({}));
    second.ok("bb.selectSession", json!({"sessionId": session}));
    // The stream resumes on its own at start (the position was saved), so the gap and the
    // events may come before or after the selection's answer, in either order.
    let mut gap = None;
    let mut events: Vec<Value> = Vec::new();
    while gap.is_none() || !events.iter().any(|e| e["type"] == "run_finished" && e["id"] == "10") {
        let m = second.wait_event(WAIT, "the gap and the end of the last turn", |m| {
            (m["topic"] == "bb/connection" && m["payload"]["gapDetected"] == true)
                || (m["topic"] == "bb/events" && m["payload"]["sessionId"] == session.as_str())
        });
        if m["topic"] == "bb/connection" {
            gap = Some(m);
        } else {
            events.extend(m["payload"]["events"].as_array().unwrap().iter().cloned());
        }
    }
    assert_eq!(gap.unwrap()["payload"]["sessionId"], session.as_str());
    let warnings: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "warning")
        .filter_map(|e| e["payload"]["message"].as_str())
        .collect();
    assert!(warnings.iter().any(|w| w.contains("resume window exceeded")), "{warnings:?}");
    assert!(warnings.iter().any(|w| w.contains("3..6")), "{warnings:?}");
    let ids: Vec<u64> = events.iter().filter_map(|e| e["id"].as_str()?.parse().ok()).collect();
    assert_eq!(ids, [7, 8, 9, 10], "the engine's ring, once and in order");
    second.close_stdin();
    assert!(second.wait_exit(WAIT).success());
}
