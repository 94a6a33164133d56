//! Supervisor faults against a fake engine (`fixtures/engine/fake_kilo.py`): crash on start
//! opens the crash-loop breaker; a crash after start is restarted; refused credentials are
//! reported without a retry loop.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{LONG, Sidecar, World, repo_root};

fn fake_sidecar(world: &World, mode: &str) -> Sidecar {
    let fake = repo_root().join("fixtures/engine/fake_kilo.py");
    let project = world.path("project").display().to_string();
    let mut env = world.env();
    env.push(("KILO_FAKE_MODE".into(), mode.into()));
    let args = [
        "--workspace",
        &project,
        "--engine",
        "kilo",
        "--engine-bin",
        fake.to_str().unwrap(),
        "--start-timeout",
        "20",
    ];
    Sidecar::spawn(&args, &env, world.path("sidecar.err"))
}

fn connection(sidecar: &mut Sidecar, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    sidecar.wait_event(LONG, what, |m| m["topic"] == "bb/connection" && pred(&m["payload"]))["payload"].clone()
}

#[test]
fn crash_on_start_opens_the_breaker() {
    let world = World::new();
    let mut sidecar = fake_sidecar(&world, "crash");
    let init = sidecar.ok("bb.init", json!({}));
    assert_eq!(init["engine"]["kind"], "kilo");
    let failed = connection(&mut sidecar, "the breaker", |p| p["status"] == "error");
    let why = failed["lastError"].as_str().unwrap();
    assert!(why.contains("crash loop") && why.contains("exit code 3"), "{why}");
    // The sidecar keeps answering, with a clear code.
    let res = sidecar.call("bb.listSessions", json!({}));
    assert_eq!(res["error"]["code"], "engine_unavailable", "{res}");
    // Three starts were tried (the default breaker), no more.
    let starts = sidecar.stderr().matches("engine process started").count();
    assert_eq!(starts, 3, "{}", sidecar.stderr());
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(Duration::from_secs(30)).success());
}

#[test]
fn crash_after_start_is_restarted() {
    let world = World::new();
    let mut sidecar = fake_sidecar(&world, "crash-after-ready");
    sidecar.ok("bb.init", json!({}));
    connection(&mut sidecar, "first connection", |p| p["status"] == "connected");
    let down = connection(&mut sidecar, "the crash reported", |p| {
        p["status"] == "connecting"
            && p["lastError"].as_str().is_some_and(|e| e.contains("exit code 4"))
    });
    assert_eq!(down["retryCount"], 1);
    connection(&mut sidecar, "reconnected after the restart", |p| p["status"] == "connected");
    let starts = sidecar.stderr().matches("engine process started").count();
    assert!(starts >= 2, "{}", sidecar.stderr());
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(Duration::from_secs(30)).success());
}

#[test]
fn refused_credentials_fail_the_start_without_retrying_forever() {
    let world = World::new();
    let mut sidecar = fake_sidecar(&world, "wrong-password");
    sidecar.ok("bb.init", json!({}));
    let failed = connection(&mut sidecar, "the breaker", |p| p["status"] == "error");
    let why = failed["lastError"].as_str().unwrap();
    assert!(why.contains("refused the credentials"), "{why}");
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(Duration::from_secs(30)).success());
}

/// SIGTERM to the sidecar stops the engine in order (TERM to its group) and exits 0.
#[test]
fn sigterm_stops_the_engine_and_exits_cleanly() {
    let world = World::new();
    let mut sidecar = fake_sidecar(&world, "ok");
    sidecar.ok("bb.init", json!({}));
    connection(&mut sidecar, "connected", |p| p["status"] == "connected");
    let engine = sidecar.engine_pid();
    // SAFETY: signalling our own child process.
    let rc = unsafe { libc::kill(i32::try_from(sidecar.child.id()).unwrap(), libc::SIGTERM) };
    assert_eq!(rc, 0);
    assert!(sidecar.wait_exit(Duration::from_secs(30)).success(), "{}", sidecar.stderr());
    crate::harness::eventually(Duration::from_secs(10), "the engine to be gone", || {
        crate::harness::is_dead(engine)
    });
    assert!(sidecar.stderr().contains("engine stopped"), "{}", sidecar.stderr());
}
