//! The gateway on the real Kilo server (spawned and supervised through the shared launcher)
//! with the scripted mock LLM of the sidecar's tests: a reply streams over the WebSocket.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{Gateway, repo_root};

/// The real Kilo binary: `$BB_KILO_BIN`, else what `scripts/engine.sh` installs; `None` only
/// with `BB_SKIP_REAL_ENGINE=1`.
fn real_engine() -> Option<PathBuf> {
    let found = match std::env::var_os("BB_KILO_BIN") {
        Some(bin) => Some(PathBuf::from(bin)).filter(|b| b.is_file()),
        None => Command::new("bash")
            .arg(repo_root().join("scripts/engine.sh"))
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())),
    };
    match found {
        Some(bin) => Some(bin),
        None if std::env::var("BB_SKIP_REAL_ENGINE").is_ok_and(|v| v == "1") => {
            eprintln!("BB_SKIP_REAL_ENGINE=1: skipping a real-engine test");
            None
        }
        None => panic!(
            "the real Kilo engine is needed: run `bash scripts/engine.sh` or set BB_KILO_BIN \
             (BB_SKIP_REAL_ENGINE=1 opts out explicitly)"
        ),
    }
}

struct MockLlm(Child, u16);

impl Drop for MockLlm {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

// The child is owned by `MockLlm`, whose drop kills and reaps it.
#[allow(clippy::zombie_processes)]
fn mock_llm(dir: &std::path::Path) -> MockLlm {
    let port_file = dir.join("mock.port");
    let child = Command::new("python3")
        .arg(repo_root().join("apps/sidecar/tests/it/mock_llm.py"))
        .args(["--host", "127.0.0.1", "--port", "0", "--delay", "0.02", "--port-file"])
        .arg(&port_file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 runs the mock LLM");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(port) =
            std::fs::read_to_string(&port_file).ok().and_then(|s| s.trim().parse().ok())
        {
            return MockLlm(child, port);
        }
        assert!(Instant::now() < deadline, "the mock LLM did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kilo_reply_streams_over_the_websocket() {
    let Some(kilo) = real_engine() else { return };
    let world = tempfile::tempdir().unwrap();
    let p = |s: &str| world.path().join(s);
    for sub in ["home", "xdg/config/kilo", "xdg/data", "xdg/state", "xdg/cache"] {
        std::fs::create_dir_all(p(sub)).unwrap();
    }
    let mock = mock_llm(world.path());
    let config = json!({
        "model": "mock/mock-model", "small_model": "mock/mock-model", "autoupdate": false,
        "share": "disabled", "snapshot": false, "enabled_providers": ["mock"],
        "permission": {"bash": "ask", "edit": "ask"},
        "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock LLM",
            "options": {"baseURL": format!("http://127.0.0.1:{}/v1", mock.1), "apiKey": "mock-key"},
            "models": {"mock-model": {"name": "Mock Model", "tool_call": true,
                "limit": {"context": 128000, "output": 4096}}}}}
    });
    std::fs::write(p("xdg/config/kilo/kilo.json"), config.to_string()).unwrap();
    let s = |path: &str| p(path).display().to_string();
    let mut env = vec![
        ("HOME".to_owned(), s("home")),
        ("XDG_CONFIG_HOME".to_owned(), s("xdg/config")),
        ("XDG_DATA_HOME".to_owned(), s("xdg/data")),
        ("XDG_STATE_HOME".to_owned(), s("xdg/state")),
        ("XDG_CACHE_HOME".to_owned(), s("xdg/cache")),
        ("KILO_TELEMETRY_LEVEL".to_owned(), "off".to_owned()),
    ];
    for flag in [
        "AUTOUPDATE",
        "MODELS_FETCH",
        "DEFAULT_PLUGINS",
        "SHARE",
        "LSP_DOWNLOAD",
        "CLAUDE_CODE",
        "SESSION_INGEST",
    ] {
        env.push((format!("KILO_DISABLE_{flag}"), "1".to_owned()));
    }
    let kilo = kilo.display().to_string();
    let gw = Gateway::start_with(&["--engine", "kilo", "--engine-bin", &kilo], &env);
    let mut c = gw.connect().await;
    let mut events = Vec::new();
    let init = c.call("i1", "bb.init", json!({}), &mut events).await;
    assert_eq!(init["result"]["engine"]["kind"], "kilo", "{init}");
    // The engine starts in the background; creating a session waits for it.
    c.event_until(&mut events, |e| {
        e["event"] == "bb/connection" && e["payload"]["status"] == "connected"
    })
    .await;
    let created = c.call("c1", "bb.createSession", json!({}), &mut events).await;
    assert_eq!(created["ok"], true, "{created}");
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let sent = c
        .call(
            "m1",
            "bb.sendMessage",
            json!({"sessionId": session, "text": "Say it MOCK:text:hello%20from%20the%20gateway"}),
            &mut events,
        )
        .await;
    assert_eq!(sent["ok"], true, "{sent}");
    c.event_until(&mut events, |e| {
        e["event"] == "bb/events"
            && e["payload"]["events"]
                .as_array()
                .is_some_and(|v| v.iter().any(|ev| ev["type"] == "session.turn.close"))
    })
    .await;
    let text: String = events
        .iter()
        .filter(|e| e["event"] == "bb/events" && e["payload"]["sessionId"] == session.as_str())
        .flat_map(|e| e["payload"]["events"].as_array().unwrap().iter())
        .filter(|ev| ev["type"] == "message.part.delta")
        .map(|ev| ev["payload"]["delta"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(text.contains("hello from the gateway"), "streamed: {text:?}");
    // The engine's password never reaches the page.
    assert!(!events.iter().any(|e| e.to_string().to_lowercase().contains("password")));
}
