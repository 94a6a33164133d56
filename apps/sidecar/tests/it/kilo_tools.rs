//! Files, snippets, containment, diffs, fork, revert, MCP and commands on the real Kilo
//! server through `bb-sidecar`.

use serde_json::{Value, json};

use crate::harness::LONG;
use crate::kilo::Kilo;

#[test]
fn files_snippets_and_containment() {
    let Some(mut k) = Kilo::start() else { return };
    let session = k.create_session();
    let project = k.world.path("project");
    std::fs::write(project.join("lines.txt"), "one\ntwo\nthree\nfour\nfive\n").unwrap();
    std::os::unix::fs::symlink("/etc", project.join("escape")).unwrap();

    let listed = k.sidecar.ok("bb.listFiles", json!({"sessionId": session, "path": "."}));
    let names: Vec<&str> =
        listed["entries"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"hello.txt") && names.contains(&"lines.txt"), "{names:?}");

    let whole =
        k.sidecar.ok("bb.readFileSnippet", json!({"sessionId": session, "path": "hello.txt"}));
    assert_eq!(whole["content"], "hello world\n");
    assert_eq!(whole["truncated"], false);
    let head = k.sidecar.ok(
        "bb.readFileSnippet",
        json!({"sessionId": session, "path": "lines.txt", "headLines": 2}),
    );
    assert_eq!(head["content"], "one\ntwo\n");
    assert_eq!(head["truncated"], true);
    assert_eq!(head["totalBytes"], 24);
    let tail = k.sidecar.ok(
        "bb.readFileSnippet",
        json!({"sessionId": session, "path": "lines.txt", "tailLines": 1}),
    );
    assert_eq!(tail["content"], "five\n");
    let capped = k.sidecar.ok(
        "bb.readFileSnippet",
        json!({"sessionId": session, "path": "lines.txt", "maxBytes": 5}),
    );
    assert_eq!(capped["content"], "one\nt");

    let saved = k
        .sidecar
        .ok("bb.downloadArtifact", json!({"sessionId": session, "artifactPath": "hello.txt"}));
    assert!(saved["savedPath"].as_str().unwrap().ends_with("/project/hello.txt"), "{saved}");

    for (method, params) in [
        ("bb.readFileSnippet", json!({"sessionId": session, "path": "../mock.port"})),
        ("bb.readFileSnippet", json!({"sessionId": session, "path": "escape/passwd"})),
        ("bb.readFileSnippet", json!({"sessionId": session, "path": "/etc/passwd"})),
        ("bb.listFiles", json!({"sessionId": session, "path": "escape"})),
        ("bb.downloadArtifact", json!({"sessionId": session, "artifactPath": "escape/hostname"})),
        (
            "bb.sendMessage",
            json!({"sessionId": session, "text": "x", "attachmentIds": ["../mock.port"]}),
        ),
    ] {
        let res = k.sidecar.call(method, params.clone());
        assert_eq!(res["ok"], false, "{method} {params}: {res}");
        assert_eq!(res["error"]["code"], "path_outside_workspace", "{method} {params}: {res}");
    }
    let missing =
        k.sidecar.call("bb.readFileSnippet", json!({"sessionId": session, "path": "nope.txt"}));
    assert_eq!(missing["error"]["code"], "file_not_found", "{missing}");
    k.finish();
}

/// A write approved → its diff through `bb.openDiff`; fork lists a new session; revert and
/// unrevert; MCP list; an unknown command lists what exists.
#[test]
fn diff_fork_revert_mcp_and_commands() {
    let Some(mut k) = Kilo::start_with("ask", &["--trusted"]) else { return };
    let session = k.create_session();
    k.send(&session, "Write it MOCK:write:new.txt");
    let asked = k.asked(&session);
    assert_eq!(asked["payload"]["permission"], "edit");
    let id = asked["payload"]["id"].as_str().unwrap();
    k.sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": id, "decision": "allow_once"}),
    );
    k.sidecar.session_events_until(&session, "session.turn.close", LONG);
    assert!(k.world.path("project/new.txt").is_file(), "the write did not happen");
    let user_message = k
        .sidecar
        .seen
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["topic"] == "bb/events")
        .flat_map(|m| m["payload"]["events"].as_array().cloned().unwrap_or_default())
        .find(|e| e["type"] == "message.updated" && e["payload"]["info"]["role"] == "user")
        .and_then(|e| e["payload"]["info"]["id"].as_str().map(str::to_owned))
        .expect("the user message was delivered");

    k.sidecar.ok("bb.openDiff", json!({"sessionId": session, "filePath": "new.txt"}));
    let diff = k.sidecar.wait_event(LONG, "the bridge.diff event", |m| {
        m["topic"] == "bb/events"
            && m["payload"]["events"].as_array().unwrap().iter().any(|e| e["type"] == "bridge.diff")
    });
    let diff = &diff["payload"]["events"][0]["payload"];
    assert_eq!(diff["file"], "new.txt", "{diff}");
    let none =
        k.sidecar.call("bb.openDiff", json!({"sessionId": session, "filePath": "hello.txt"}));
    assert_eq!(none["error"]["code"], "diff_not_found", "{none}");

    let forked = k.sidecar.ok("bb.command", json!({"sessionId": session, "command": "fork"}));
    let fork_id = forked["output"]["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(fork_id, session);
    let listed = k.sidecar.ok("bb.listSessions", json!({}));
    assert!(
        listed["sessions"].as_array().unwrap().iter().any(|s| s["sessionId"] == fork_id.as_str())
    );

    k.sidecar.ok(
        "bb.command",
        json!({"sessionId": session, "command": "revert", "args": {"messageId": user_message}}),
    );
    k.sidecar.ok("bb.command", json!({"sessionId": session, "command": "unrevert"}));
    let mcp = k.sidecar.ok("bb.command", json!({"sessionId": session, "command": "mcp.list"}));
    assert!(mcp["output"].is_object(), "{mcp}");
    let todo = k.sidecar.ok("bb.command", json!({"sessionId": session, "command": "todo"}));
    assert!(todo["output"].is_array(), "{todo}");
    let unknown =
        k.sidecar.call("bb.command", json!({"sessionId": session, "command": "frobnicate"}));
    assert_eq!(unknown["error"]["code"], "unknown_command");
    let message = unknown["error"]["message"].as_str().unwrap();
    for name in ["fork", "revert", "mcp.list", "retry", "engine.restart", "metrics"] {
        assert!(message.contains(name), "{name} not listed: {message}");
    }
    let init = k.sidecar.ok("bb.init", json!({}));
    for cap in ["permissions", "commands", "files", "diffs"] {
        assert_eq!(init["capabilities"][cap], true, "{init}");
    }
    // The engine's sessionless events (`server.connected` at least) are shown to no webview:
    // they are counted.
    let metrics = k.sidecar.ok("bb.command", json!({"sessionId": "", "command": "metrics"}));
    let m = &metrics["output"];
    assert!(m["kilo.cli.events.unrouted_count"].as_u64().is_some_and(|n| n >= 1), "{m}");
    assert_eq!(m["kilo.cli.events.malformed_count"], 0, "{m}");
    k.finish();
}

/// A missing engine binary stops the sidecar at once with an error naming `--engine-bin`
/// and `scripts/engine.sh`; no start is attempted, so there is no crash loop.
#[test]
fn a_missing_engine_binary_is_a_clear_error() {
    let world = crate::harness::World::new();
    let project = world.path("project").display().to_string();
    let missing = world.path("no/such/kilo").display().to_string();
    let args = ["--workspace", &project, "--engine", "kilo", "--engine-bin", &missing];
    let mut sidecar =
        crate::harness::Sidecar::spawn(&args, &world.env(), world.path("sidecar.err"));
    let status = sidecar.wait_exit(std::time::Duration::from_secs(30));
    assert!(!status.success());
    let stderr = sidecar.stderr();
    for needle in ["--engine-bin", "scripts/engine.sh", &missing] {
        assert!(stderr.contains(needle), "{needle} not in:\n{stderr}");
    }
    assert!(!stderr.contains("restarting"), "{stderr}");
}

/// A prompt sent while a turn runs is queued by the engine (`session.queue.changed` says so
/// on `bb/events`, and the session's `bb/state` summary counts it as `queuedPrompts`); the
/// queue is bounded (`queue_full`); `bb.stop` ends the turn and the count goes away.
#[test]
fn prompts_queue_behind_a_running_turn_up_to_a_bound() {
    let Some(mut k) = Kilo::start() else { return };
    let session = k.create_session();
    k.send(&session, "Go slowly MOCK:slow");
    k.sidecar.state(LONG, "running", |s| s["running"] == true);
    k.send(&session, "MOCK:text:next");
    let queued = k.sidecar.wait_event(LONG, "session.queue.changed", |m| {
        m["topic"] == "bb/events"
            && m["payload"]["events"].as_array().unwrap().iter().any(|e| {
                e["type"] == "session.queue.changed"
                    && e["payload"]["queued"].as_array().is_some_and(|q| !q.is_empty())
            })
    });
    assert_eq!(queued["payload"]["sessionId"], session.as_str());
    let queued_of = |s: &Value, id: &str| {
        s["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["sessionId"] == id)
            .map_or(0, |x| x.get("queuedPrompts").map_or(0, |n| n.as_u64().expect("a count")))
    };
    let sid = session.clone();
    k.sidecar.state(LONG, "queuedPrompts on the running session", |s| {
        s["running"] == true && queued_of(s, &sid) >= 1
    });
    let mut refused = None;
    // The bound (`HostConfig::max_queued_prompts`): 8.
    for i in 0..9 {
        let res = k.sidecar.call(
            "bb.sendMessage",
            json!({"sessionId": session, "text": format!("MOCK:text:more{i}")}),
        );
        if res["ok"] == false {
            refused = Some(res);
            break;
        }
    }
    let refused = refused.expect("the queue has a bound");
    assert_eq!(refused["error"]["code"], "queue_full", "{refused}");
    k.sidecar.ok("bb.stop", json!({"sessionId": session}));
    let sid = session.clone();
    k.sidecar.state(LONG, "no queued prompts once the turn is over", |s| {
        s["running"] == false && queued_of(s, &sid) == 0
    });
    k.finish();
}

/// `bb.createSession` with a checked model, a permission mode and a task: the task is the
/// first prompt. An unknown model lists the engine's; `acceptEdits` needs trust.
#[test]
fn create_session_with_model_mode_and_task() {
    let Some(mut k) = Kilo::start() else { return };
    let created = k.sidecar.ok(
        "bb.createSession",
        json!({"model": "mock/mock-model", "permissionMode": "ask",
               "task": "Say it MOCK:text:from%20the%20task"}),
    );
    let session = created["sessionId"].as_str().unwrap().to_owned();
    let events = k.sidecar.session_events_until(&session, "session.turn.close", LONG);
    assert!(crate::harness::streamed_text(&events).contains("from the task"));
    let wrong = k.sidecar.call("bb.createSession", json!({"model": "mock/none"}));
    assert_eq!(wrong["error"]["code"], "invalid_params");
    assert!(wrong["error"]["message"].as_str().unwrap().contains("mock/mock-model"), "{wrong}");
    let untrusted = k.sidecar.call("bb.createSession", json!({"permissionMode": "acceptEdits"}));
    assert_eq!(untrusted["error"]["code"], "workspace_untrusted", "{untrusted}");
    k.finish();
}
