//! The world's layout and environment, the mock LLM's life and the config naming it, and the
//! binary lookup's errors.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::{KiloWorld, kilo};

/// One HTTP GET on loopback; the whole response.
fn get(port: u16, path: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(20)))?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")?;
    let mut out = String::new();
    stream.read_to_string(&mut out)?;
    Ok(out)
}

#[test]
fn a_world_has_its_dirs_and_an_environment_that_stays_inside_it() {
    let world = KiloWorld::new();
    for sub in ["project", "home", "xdg/config/kilo", "xdg/data", "xdg/state", "xdg/cache"] {
        assert!(world.path(sub).is_dir(), "{sub} is missing");
    }
    let env = world.env();
    for (name, value) in &env {
        if name == "HOME" || name.starts_with("XDG_") {
            assert!(PathBuf::from(value).starts_with(world.root()), "{name}={value}");
        }
    }
    let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
    for name in ["HOME", "XDG_CONFIG_HOME", "KILO_TELEMETRY_LEVEL", "KILO_DISABLE_AUTOUPDATE"] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
    assert!(!names.contains(&"PATH"), "PATH is the caller's to add");
}

#[test]
fn the_mock_llm_answers_on_the_configured_port_and_dies_with_its_guard() {
    let world = KiloWorld::new();
    let mock = world.start_mock_llm(Duration::from_millis(20), "allow", "ask");
    let port = mock.port();

    let cfg: Value =
        serde_json::from_slice(&std::fs::read(world.path("xdg/config/kilo/kilo.json")).unwrap())
            .unwrap();
    assert_eq!(
        cfg["provider"]["mock"]["options"]["baseURL"],
        format!("http://127.0.0.1:{port}/v1")
    );
    assert_eq!(cfg["permission"]["bash"], "allow");
    assert_eq!(cfg["permission"]["edit"], "ask");
    assert_eq!(cfg["model"], "mock/mock-model");

    let health = get(port, "/_mock/health").unwrap();
    assert!(health.starts_with("HTTP/1.") && health.contains("\"ok\": true"), "{health}");

    drop(mock);
    assert!(get(port, "/_mock/health").is_err(), "the mock LLM outlived its guard");
}

#[test]
fn a_kilo_bin_that_is_not_a_file_is_named_with_what_to_do() {
    let world = KiloWorld::new();
    let why = kilo::lookup(Some(world.path("no/such/kilo"))).unwrap_err();
    assert!(why.contains("BB_KILO_BIN=") && why.contains("is not a file"), "{why}");
    assert!(why.contains("scripts/engine.sh"), "{why}");
}
