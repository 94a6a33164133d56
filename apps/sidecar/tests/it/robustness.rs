//! Robustness through the binary: bad input with a readable id gets exactly one error response
//! naming the limit; no engine password, Basic-auth string or token reaches stdout or stderr,
//! whether the real Kilo server runs a turn under debug logging or a leaky engine prints its
//! credentials.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::harness::{
    LONG, Sidecar, World, children_of, environ_var, eventually, kilo_bin_or_skip, repo_root,
    streamed_text,
};

/// A sidecar attached to a loopback port where nothing listens: the framing is under test.
fn attached(world: &World) -> Sidecar {
    let args = ["--engine", "kilo", "--engine-url", "http://127.0.0.1:9"];
    Sidecar::spawn(&args, &world.env(), world.path("sidecar.err"))
}

fn request_line(id: &str, params: &str) -> String {
    format!(r#"{{"v":1,"kind":"req","id":"{id}","method":"bb.sendMessage","params":{params}}}"#)
}

#[test]
fn bad_input_with_a_readable_id_gets_exactly_one_answer_naming_the_limit() {
    let world = World::new();
    let mut sidecar = attached(&world);
    let two_mb = "x".repeat(2 * 1024 * 1024);
    let big = request_line("big", &format!(r#"{{"sessionId":"s","text":"{two_mb}"}}"#));
    let late = format!(r#"{{"v":1,"kind":"req","params":{{"text":"{two_mb}"}},"id":"late"}}"#);
    let deep = request_line(
        "deep",
        &format!(r#"{{"sessionId":"s","text":{}{}}}"#, "[".repeat(10_000), "]".repeat(10_000)),
    );
    let mut utf8 = br#"{"v":1,"kind":"req","id":"utf8","method":"bb.sendMessage","params":{"sessionId":"s","text":""#.to_vec();
    utf8.extend_from_slice(&[0xff, 0xfe, 0xfd]);
    utf8.extend_from_slice(b"\"}}\n");
    sidecar.send_line(&big);
    sidecar.send_line(&late);
    sidecar.send_line(&deep);
    sidecar.send_bytes(&utf8);
    sidecar.send_line(r#"{"v":1,"kind":"req","id":"cut","method":"bb.init","params":{"#);
    sidecar.send_line("not json and no id");
    sidecar.send_line(r#"{"v":1,"kind":"req","id":"last","method":"bb.listSessions"}"#);
    let max = 1024 * 1024;
    let expected: [(&str, &str, Value); 5] = [
        ("big", "payload_too_large", json!({"limit": "maxBytes", "max": max, "size": big.len()})),
        ("late", "payload_too_large", json!({"limit": "maxBytes", "max": max, "size": late.len()})),
        ("deep", "invalid_json", json!({"limit": "maxDepth", "max": 100})),
        ("utf8", "invalid_json", json!({"encoding": "utf-8", "offset": utf8.len() - 7})),
        ("cut", "invalid_json", Value::Null),
    ];
    for (id, code, details) in &expected {
        let res = sidecar.response(id, Duration::from_secs(30));
        assert_eq!(res["ok"], false, "{res}");
        assert_eq!(res["error"]["code"], *code, "{res}");
        assert_eq!(res["error"]["details"], *details, "{res}");
        let message = res["error"]["message"].as_str().unwrap();
        assert!(message.contains("send"), "the message says what to do: {message}");
    }
    let last = sidecar.response("last", Duration::from_secs(30));
    assert_eq!(last["error"]["code"], "engine_unavailable", "{last}");
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(Duration::from_secs(30)).success());
    // Exactly one response per readable id, none for the line without one.
    let mut answered: Vec<String> = sidecar
        .seen
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|m| m["kind"] == "res")
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    answered.sort();
    assert_eq!(answered, ["big", "cut", "deep", "last", "late", "utf8"]);
    assert!(sidecar.stderr().matches("protocol violation").count() >= 6, "{}", sidecar.stderr());
}

/// Every way the engine's credentials could be written: the password, the Basic-auth string
/// (`base64(user:password)`) and the password in base64.
fn credential_shapes(password: &str) -> [String; 3] {
    [password.to_owned(), STANDARD.encode(format!("kilo:{password}")), STANDARD.encode(password)]
}

fn assert_no_credentials(sidecar: &Sidecar, password: &str) {
    let stderr = sidecar.stderr();
    for shape in credential_shapes(password) {
        assert!(!sidecar.seen.iter().any(|l| l.contains(&shape)), "{shape} reached stdout");
        assert!(!stderr.contains(&shape), "{shape} reached stderr:\n{stderr}");
    }
}

/// The engine child of the sidecar and the password it was given.
fn engine_password(sidecar: &Sidecar) -> String {
    let mut found = None;
    eventually(LONG, "the engine's password", || {
        found = children_of(sidecar.child.id())
            .into_iter()
            .find_map(|pid| environ_var(pid, "KILO_SERVER_PASSWORD"));
        found.is_some()
    });
    found.unwrap()
}

#[test]
fn a_turn_on_the_real_engine_under_debug_logging_leaks_no_credential() {
    let Some(bin) = kilo_bin_or_skip() else { return };
    let world = World::new();
    let _mock = world.start_mock_llm("ask", "ask");
    let project = world.path("project").display().to_string();
    let mut env = world.env();
    env.retain(|(k, _)| k != "RUST_LOG");
    env.push(("RUST_LOG".into(), "debug".into()));
    let args = ["--workspace", &project, "--engine", "kilo", "--engine-bin", bin.to_str().unwrap()];
    let mut sidecar = Sidecar::spawn(&args, &env, world.path("sidecar.err"));
    sidecar.ok("bb.init", json!({}));
    sidecar.wait_event(LONG, "connected", |m| {
        m["topic"] == "bb/connection" && m["payload"]["status"] == "connected"
    });
    let password = engine_password(&sidecar);
    assert_eq!(password.len(), 64);
    let session =
        sidecar.ok("bb.createSession", json!({}))["sessionId"].as_str().unwrap().to_owned();
    let text = "Say it MOCK:text:no%20secrets%20here";
    sidecar.ok("bb.sendMessage", json!({"sessionId": session, "text": text}));
    let events = sidecar.session_events_until(&session, "session.turn.close", LONG);
    assert!(streamed_text(&events).contains("no secrets here"));
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(Duration::from_secs(60)).success());
    assert!(sidecar.stderr().contains("DEBUG"), "debug logging was on");
    assert_no_credentials(&sidecar, &password);
}

#[test]
fn an_engine_printing_its_credentials_is_redacted_in_the_log() {
    let world = World::new();
    let fake = repo_root().join("fixtures/engine/fake_kilo.py");
    let project = world.path("project").display().to_string();
    let mut env = world.env();
    env.push(("KILO_FAKE_MODE".into(), "leaky".into()));
    let args =
        ["--workspace", &project, "--engine", "kilo", "--engine-bin", fake.to_str().unwrap()];
    let mut sidecar = Sidecar::spawn(&args, &env, world.path("sidecar.err"));
    sidecar.ok("bb.init", json!({}));
    let password = engine_password(&sidecar);
    eventually(Duration::from_secs(30), "the leaky lines forwarded", || {
        sidecar.stderr().matches("cached").count() >= 2
    });
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(Duration::from_secs(30)).success());
    assert_no_credentials(&sidecar, &password);
    // The words around each secret survive, so the log stays useful.
    let stderr = sidecar.stderr();
    for kept in ["(do not share)", "on every request", "loaded", "cached"] {
        assert_eq!(stderr.matches(kept).count(), 2, "{kept} lost:\n{stderr}");
    }
}
