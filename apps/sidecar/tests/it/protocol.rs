//! The stdio framing: invalid input answered with error responses (id kept when readable),
//! nothing but envelopes on stdout, exit 0 on end of input. No engine needed: the sidecar
//! attaches to a loopback URL where nothing listens.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Sidecar, World};

fn attached(world: &World) -> Sidecar {
    let env = world.env();
    // Port 9 (discard) on loopback: nothing listens, connections are refused at once.
    let args = ["--engine", "kilo", "--engine-url", "http://127.0.0.1:9"];
    Sidecar::spawn(&args, &env, world.path("sidecar.err"))
}

#[test]
fn invalid_lines_are_answered_and_logged() {
    let world = World::new();
    let mut sidecar = attached(&world);
    let cases: [(&str, Option<&str>, &str); 5] = [
        (r#"{"v":1,"kind":"req","id":"a","method":"bb.nope"}"#, Some("a"), "unknown_method"),
        (
            r#"{"v":1,"kind":"req","id":"b","method":"bb.stop","params":{}}"#,
            Some("b"),
            "invalid_params",
        ),
        (r#"{"v":2,"kind":"req","id":"c","method":"bb.init"}"#, Some("c"), "unsupported_version"),
        (
            r#"{"v":1,"kind":"req","id":"d","method":"bb.readFileSnippet","params":{"sessionId":"s","path":"p","maxBytes":-1}}"#,
            Some("d"),
            "invalid_params",
        ),
        (
            r#"{"v":1,"kind":"req","id":"e","method":"bb.command","params":{"sessionId":"s","command":"c"}}"#,
            Some("e"),
            "session_not_found",
        ),
    ];
    // Lines without a readable id get no response, only a log entry.
    for line in ["garbage", "", r#"{"v":1,"kind":"res","id":"x","ok":true,"result":{}}"#, "[1,2]"] {
        sidecar.send_line(line);
    }
    for (line, _, _) in &cases {
        sidecar.send_line(line);
    }
    for (_, id, code) in cases {
        let res = sidecar.response(id.unwrap(), Duration::from_secs(30));
        assert_eq!(res["ok"], false);
        assert_eq!(res["error"]["code"], code, "{res}");
    }
    let violations = sidecar.stderr().matches("protocol violation").count();
    assert!(violations >= 8, "{}", sidecar.stderr());
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(Duration::from_secs(30)).success());
    for line in &sidecar.seen {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["v"], 1, "{line}");
    }
}

#[test]
fn unreachable_engine_is_reported_and_calls_fail_clearly() {
    let world = World::new();
    let mut sidecar = attached(&world);
    let init = sidecar.ok("bb.init", json!({}));
    assert_eq!(init["engine"]["status"], "reconnecting", "{init}");
    let conn =
        sidecar.wait_event(Duration::from_secs(30), "a connecting update with the error", |m| {
            m["topic"] == "bb/connection" && m["payload"]["lastError"].is_string()
        });
    assert_eq!(conn["payload"]["status"], "connecting");
    let res = sidecar.call("bb.createSession", json!({}));
    assert_eq!(res["error"]["code"], "engine_unavailable", "{res}");
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(Duration::from_secs(30)).success());
}

#[test]
fn help_documents_every_flag() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bb-sidecar"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for flag in [
        "--workspace",
        "--engine ",
        "--engine-bin",
        "--engine-url",
        "--engine-password-env",
        "--engine-username",
        "--start-timeout",
        "--stop-grace",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}:\n{help}");
    }
}
