//! Where the real Kilo binary is: `$BB_KILO_BIN`, else what `scripts/engine.sh` installs.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use crate::client::{
    CreateSession, KiloClient, KiloUpdate, PromptRequest, RouterOptions, spawn_router_into,
};
use bb_engine_client::sse::SseClient;
use bb_engine_client::transport::{EngineAuth, HttpOptions, HttpTransport};
use secrecy::SecretString;
use serde_json::Value;

use bb_test_support::repo_root;

/// The real Kilo binary; panics with the reason and what to do when it cannot be had.
pub fn kilo_bin() -> PathBuf {
    lookup(std::env::var_os("BB_KILO_BIN").map(PathBuf::from)).unwrap_or_else(|why| panic!("{why}"))
}

/// As [`kilo_bin`], but `None` (said on stderr) when it cannot be had and
/// `BB_SKIP_REAL_ENGINE=1` opts out explicitly; the caller then returns.
pub fn kilo_bin_or_skip() -> Option<PathBuf> {
    match lookup(std::env::var_os("BB_KILO_BIN").map(PathBuf::from)) {
        Ok(bin) => Some(bin),
        Err(why) if std::env::var("BB_SKIP_REAL_ENGINE").is_ok_and(|v| v == "1") => {
            eprintln!("BB_SKIP_REAL_ENGINE=1: skipping a real-engine test ({why})");
            None
        }
        Err(why) => panic!("{why}"),
    }
}

/// The real opencode binary (`$BB_OPENCODE_BIN`, else what `scripts/engine.sh opencode`
/// installs); panics with the reason and what to do when it cannot be had.
pub fn opencode_bin() -> PathBuf {
    install("opencode", "BB_OPENCODE_BIN", std::env::var_os("BB_OPENCODE_BIN").map(PathBuf::from))
        .unwrap_or_else(|why| {
            panic!(
                "the real opencode is needed for this test and cannot be had: {why}. Run \
                 `bash scripts/engine.sh opencode` (npm needed) or set BB_OPENCODE_BIN."
            )
        })
}

/// `from_env` (the value of `BB_KILO_BIN`) when set, else the output of `scripts/engine.sh`.
pub(crate) fn lookup(from_env: Option<PathBuf>) -> Result<PathBuf, String> {
    install("kilo", "BB_KILO_BIN", from_env).map_err(|why| {
        format!(
            "the real Kilo engine is needed for this test and cannot be had: {why}. \
             Run `bash scripts/engine.sh` (npm needed) or set BB_KILO_BIN; \
             BB_SKIP_REAL_ENGINE=1 opts out explicitly where a test allows it."
        )
    })
}

/// `from_env` when set, else the output of `scripts/engine.sh <engine>`.
fn install(engine: &str, var: &str, from_env: Option<PathBuf>) -> Result<PathBuf, String> {
    match from_env {
        Some(bin) if bin.is_file() => Ok(bin),
        Some(bin) => Err(format!("{var}={} is not a file", bin.display())),
        None => {
            let script = repo_root().join("scripts/engine.sh");
            match Command::new("bash").arg(&script).arg(engine).stderr(Stdio::inherit()).output() {
                Ok(out) if out.status.success() => {
                    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_owned()))
                }
                Ok(out) => Err(format!("{} failed with {}", script.display(), out.status)),
                Err(err) => Err(format!("cannot run {}: {err}", script.display())),
            }
        }
    }
}

/// A Kilo server a bridge process supervises, as a client of the test's own reaches it.
#[derive(Debug, Clone)]
pub struct SupervisedKilo {
    /// The engine process.
    pub pid: u32,
    /// Its base URL on loopback.
    pub url: String,
    /// The password the bridge gave it (HTTP Basic, user `kilo`).
    pub password: String,
}

impl SupervisedKilo {
    /// A REST client of the engine for the workspace `directory`, with the bridge's
    /// credentials and a request timeout of `timeout` (an engine's first request for a
    /// directory may be slow on a loaded machine).
    pub fn client(&self, directory: &str, timeout: Duration) -> KiloClient {
        let password = SecretString::from(self.password.clone());
        let auth = EngineAuth::Basic { user: "kilo".into(), password };
        let options = HttpOptions { request_timeout: timeout, ..HttpOptions::default() };
        let transport = HttpTransport::new(&self.url, auth, options).expect("a loopback URL");
        KiloClient::new(Arc::new(transport)).with_directory(directory)
    }
}

/// The Kilo server below `bridge` once it listens: the descendant with a
/// `KILO_SERVER_PASSWORD` in its environment (a child reads as a copy of the bridge until it
/// has become the engine) and the port it listens on, read from `/proc`.
pub fn supervised_kilo(bridge: u32, within: Duration) -> SupervisedKilo {
    use bb_test_support::procfs::{descendants_of, environ_var, listening_ports};
    let mut found = None;
    bb_test_support::eventually(within, "the engine to listen", || {
        found = descendants_of(bridge).into_iter().find_map(|pid| {
            let password = environ_var(pid, "KILO_SERVER_PASSWORD")?;
            let port = *listening_ports(pid).first()?;
            Some(SupervisedKilo { pid, url: format!("http://127.0.0.1:{port}"), password })
        });
        found.is_some()
    });
    found.expect("checked by eventually")
}

/// Starts a `MOCK:slow` turn in a new session through `client` (another client of the engine
/// than the bridge) and returns the session once `ticks` of its reply (`tick 1. tick 2. …`)
/// have streamed, as a stream of the test's own saw them. The turn goes on (one tick per mock
/// delay) until stopped.
pub async fn slow_turn_streaming(client: &KiloClient, ticks: u32, within: Duration) -> String {
    let sse = SseClient::new(client.transport().clone(), client.event_request())
        .with_policy(RouterOptions::default().policy);
    let (tx, mut updates) = tokio::sync::mpsc::channel(1024);
    let _router = spawn_router_into(client.clone(), sse, tx);
    // The test's stream is up (the engine has set up the workspace) before the session is made.
    loop {
        let update = tokio::time::timeout(within, updates.recv())
            .await
            .unwrap_or_else(|_| {
                panic!("the engine's event stream did not connect within {within:?}")
            })
            .expect("the engine's event stream stays up");
        if matches!(update, KiloUpdate::Connected { .. }) {
            break;
        }
    }
    let session = client.create_session(&CreateSession::default()).await.expect("a session").id;
    let prompt = PromptRequest::text("Go slowly MOCK:slow");
    client.prompt_async(&session, &prompt).await.expect("the prompt accepted");
    // The turn streams until stopped: one deadline for all the ticks, not one per event.
    let deadline = tokio::time::Instant::now() + within;
    let mut text = String::new();
    while !text.contains(&format!("tick {ticks}.")) {
        let update = tokio::time::timeout_at(deadline, updates.recv())
            .await
            .unwrap_or_else(|_| panic!("{ticks} ticks did not stream within {within:?}: {text:?}"))
            .expect("the engine's event stream stays up");
        if let KiloUpdate::Event { event } = update
            && event.session().as_deref() == Some(session.as_str())
            && event.event_type == "message.part.delta"
        {
            text.push_str(event.body["delta"].as_str().unwrap_or_default());
        }
    }
    session
}

/// Checks the `bb/events` payloads a webview got for a session whose `MOCK:slow` turn
/// streamed `ticks` ticks before the webview connected, then was stopped: one tab numbered
/// 1, 2, … with no resync, the turn from its start (the prompt's message, `tick 1.` on), no
/// event twice, and the turn's close.
pub fn assert_turn_from_its_start(messages: &[Value], ticks: u32) {
    let seqs: Vec<u64> = messages.iter().map(|m| m["seq"].as_u64().expect("a seq")).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "one tab, numbered from 1");
    assert!(messages.iter().all(|m| m["resync"] != true), "a resync instead of the messages");
    let events: Vec<&Value> =
        messages.iter().flat_map(|m| m["events"].as_array().expect("events")).collect();
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "message.part.delta" && e["payload"]["field"] == "text")
        .filter_map(|e| e["payload"]["delta"].as_str())
        .collect();
    let start: String = (1..=ticks).map(|i| format!("tick {i}. ")).collect();
    assert!(text.starts_with(&start), "the turn from its start: {text:?}");
    let user =
        |e: &&Value| e["type"] == "message.updated" && e["payload"]["info"]["role"] == "user";
    assert!(events.iter().any(user), "the prompt's message, sent before the webview connected");
    let ids: Vec<&str> = events.iter().filter_map(|e| e["id"].as_str()).collect();
    let distinct: std::collections::BTreeSet<_> = ids.iter().collect();
    assert_eq!(distinct.len(), ids.len(), "an event delivered twice");
    assert!(events.iter().any(|e| e["type"] == "session.turn.close"), "the turn's close");
}
