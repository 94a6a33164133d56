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
    assert!(why.contains("refused the bridge's credentials"), "{why}");
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

/// A running engine started outside the sidecar (here the fake one, by the test).
struct External {
    child: std::process::Child,
    url: String,
}

impl External {
    fn start(world: &World, password: &str) -> Self {
        use std::io::BufRead;
        let fake = repo_root().join("fixtures/engine/fake_kilo.py");
        let mut child = std::process::Command::new(fake)
            .args(["serve", "--port", "0"])
            .env("KILO_SERVER_PASSWORD", password)
            .current_dir(world.path("project"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.trim().rsplit_once("listening on ").unwrap().1.to_owned();
        Self { child, url }
    }
}

impl Drop for External {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn attach(world: &World, url: &str, password: &str) -> Sidecar {
    let mut env = world.env();
    env.push(("BB_TEST_ENGINE_PASSWORD".into(), password.into()));
    let args = [
        "--engine",
        "kilo",
        "--engine-url",
        url,
        "--engine-password-env",
        "BB_TEST_ENGINE_PASSWORD",
    ];
    Sidecar::spawn(&args, &env, world.path("sidecar.err"))
}

#[test]
fn attach_mode_reads_the_password_from_the_named_variable() {
    let world = World::new();
    let engine = External::start(&world, "attach-secret-1234");
    let mut sidecar = attach(&world, &engine.url, "attach-secret-1234");
    let init = sidecar.ok("bb.init", json!({}));
    assert_eq!(init["engine"]["status"], "ready", "{init}");
    assert_eq!(init["engine"]["version"], "0.0.0-fake");
    connection(&mut sidecar, "connected", |p| p["status"] == "connected");
    let listed = sidecar.ok("bb.listSessions", json!({}));
    assert_eq!(listed["sessions"], json!([]));
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(Duration::from_secs(30)).success());
    // Attach mode never stops an engine it did not start.
    assert!(engine.child.id() > 0 && !crate::harness::is_dead(engine.child.id()));
    assert!(!sidecar.seen.iter().any(|l| l.contains("attach-secret-1234")));
    assert!(!sidecar.stderr().contains("attach-secret-1234"));
}

#[test]
fn attach_mode_with_a_wrong_password_fails_clearly_without_a_retry_loop() {
    let world = World::new();
    let engine = External::start(&world, "right-password");
    let mut sidecar = attach(&world, &engine.url, "wrong-password");
    let init = sidecar.ok("bb.init", json!({}));
    assert_eq!(init["engine"]["status"], "failed", "{init}");
    let failed = connection(&mut sidecar, "the auth error", |p| p["status"] == "error");
    assert!(failed["lastError"].as_str().unwrap().contains("401"), "{failed}");
    let res = sidecar.call("bb.listSessions", json!({}));
    assert_eq!(res["error"]["code"], "engine_auth", "{res}");
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(Duration::from_secs(30)).success());
}

/// Calls sent while the engine is still starting wait for it instead of failing.
#[test]
fn calls_made_while_the_engine_starts_wait_for_it() {
    let world = World::new();
    let mut sidecar = fake_sidecar(&world, "ok");
    sidecar.send_line(r#"{"v":1,"kind":"req","id":"i","method":"bb.init"}"#);
    sidecar.send_line(r#"{"v":1,"kind":"req","id":"l","method":"bb.listSessions"}"#);
    let init = sidecar.response("i", LONG);
    // Usually still starting; on a loaded machine the fake engine may win the race.
    let status = &init["result"]["engine"]["status"];
    assert!(status == "starting" || status == "ready", "{init}");
    let listed = sidecar.response("l", LONG);
    assert_eq!(listed["ok"], true, "{listed}");
    assert_eq!(listed["result"]["sessions"], json!([]));
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(Duration::from_secs(30)).success());
}
