//! The crash-loop breaker through the binary (`fixtures/engine/fake_kilo.py` crashing on
//! cue): once it trips, `bb/connection` says so and that nothing restarts, calls answer
//! `engine_unavailable` with the reason, until `bb.command engine.restart` brings the engine
//! back; `bb.command metrics` counts what happened and `bb/connection` carries diagnostics.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{LONG, Sidecar, World, repo_root};

fn connection(sidecar: &mut Sidecar, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    sidecar.wait_event(LONG, what, |m| m["topic"] == "bb/connection" && pred(&m["payload"]))["payload"].clone()
}

#[test]
fn a_tripped_breaker_holds_until_engine_restart() {
    let world = World::new();
    let fake = repo_root().join("fixtures/engine/fake_kilo.py");
    let project = world.path("project").display().to_string();
    let mut env = world.env();
    env.push(("KILO_FAKE_MODE".into(), "crash-after-ready".into()));
    env.push(("KILO_FAKE_LIFETIME".into(), "0.3".into()));
    env.push(("KILO_FAKE_CRASHES".into(), "3".into()));
    env.push(("KILO_FAKE_COUNTER".into(), world.path("starts").display().to_string()));
    let args =
        ["--workspace", &project, "--engine", "kilo", "--engine-bin", fake.to_str().unwrap()];
    let mut sidecar = Sidecar::spawn(&args, &env, world.path("sidecar.err"));
    sidecar.ok("bb.init", json!({}));

    let restarting = connection(&mut sidecar, "a restart announced", |p| p["restarting"] == true);
    assert_eq!(restarting["status"], "connecting", "{restarting}");
    assert_eq!(restarting["attempt"], 1, "{restarting}");
    let open = connection(&mut sidecar, "the breaker", |p| p["status"] == "error");
    assert_eq!(open["restarting"], false, "{open}");
    let reason = open["lastError"].as_str().unwrap().to_owned();
    assert!(reason.contains("crash loop") && reason.contains("exit code 4"), "{reason}");

    // Calls answer at once with the reason and what to do; nothing restarts meanwhile.
    let res = sidecar.call("bb.listSessions", json!({}));
    assert_eq!(res["error"]["code"], "engine_unavailable", "{res}");
    let message = res["error"]["message"].as_str().unwrap();
    assert!(message.contains("crash loop") && message.contains("engine.restart"), "{message}");
    assert!(!message.contains("starting or restarting"), "{message}");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(sidecar.stderr().matches("engine process started").count(), 3);

    let restarted = sidecar.ok("bb.command", json!({"sessionId": "", "command": "engine.restart"}));
    assert_eq!(restarted["output"]["restarting"], true, "{restarted}");
    let up = connection(&mut sidecar, "connected again", |p| p["status"] == "connected");
    let diagnostics = &up["diagnostics"];
    assert!(diagnostics["enginePid"].as_u64().is_some_and(|p| p > 1), "{up}");
    assert!(diagnostics["enginePort"].as_u64().is_some_and(|p| p > 0), "{up}");
    let listed = sidecar.ok("bb.listSessions", json!({}));
    assert_eq!(listed["sessions"], json!([]));

    let metrics = sidecar.ok("bb.command", json!({"sessionId": "", "command": "metrics"}));
    let m = &metrics["output"];
    assert_eq!(m["kilo.cli.server.crash_count"], 3, "{m}");
    assert_eq!(m["bridge"]["breakerTrips"], 1, "{m}");
    assert_eq!(m["bridge"]["errors"]["engine_unavailable"], 1, "{m}");
    assert!(m["bridge"]["requests"].as_u64().unwrap() >= 4, "{m}");
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(Duration::from_secs(30)).success());
}
