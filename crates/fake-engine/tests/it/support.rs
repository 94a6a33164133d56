//! Helpers: an engine on loopback, raw SSE reading, and the capture fixtures.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bb_fake_engine::{EngineConfig, FakeEngine, RunningEngine};
use futures_util::StreamExt as _;
use serde_json::{Value, json};

pub(crate) const BOUND: Duration = Duration::from_secs(30);

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine/breadboard")
}

pub(crate) async fn start(config: EngineConfig) -> RunningEngine {
    FakeEngine::new(config).serve("127.0.0.1:0".parse().unwrap()).await.unwrap()
}

pub(crate) async fn create(http: &reqwest::Client, url: &str) -> String {
    create_with(http, url, &json!({"config_path": "c.yaml", "task": ""})).await
}

/// Creates a session from `body`; its id.
pub(crate) async fn create_with(http: &reqwest::Client, url: &str, body: &Value) -> String {
    let created: Value = http
        .post(format!("{url}/v1/sessions"))
        .json(body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    created["session_id"].as_str().unwrap().to_owned()
}

pub(crate) async fn input(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    content: &str,
) -> reqwest::StatusCode {
    let path = format!("{url}/v1/sessions/{session}/input");
    http.post(path).json(&json!({"content": content})).send().await.unwrap().status()
}

/// `GET /v1/sessions/{session}`: the session summary.
pub(crate) async fn summary(http: &reqwest::Client, url: &str, session: &str) -> Value {
    let path = format!("{url}/v1/sessions/{session}");
    http.get(path).send().await.unwrap().json().await.unwrap()
}

/// One SSE event as framed on the wire.
#[derive(Debug, Clone)]
pub(crate) struct Framed {
    pub(crate) id: String,
    pub(crate) data: Value,
}

/// Reads SSE events from a response until `stop` holds or the body ends (within [`BOUND`]).
/// Checks the engine's framing on the way: `id: <id>\n` then one `data:` line, nothing else.
pub(crate) async fn read_events(
    response: reqwest::Response,
    mut stop: impl FnMut(&[Framed]) -> bool,
) -> (Vec<Framed>, bool) {
    let mut body = response.bytes_stream();
    let mut buffer = Vec::new();
    let mut events = Vec::new();
    let read = async {
        loop {
            while let Some(end) = buffer.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = buffer.drain(..end + 2).collect();
                let text = String::from_utf8(block).unwrap();
                assert!(text.is_ascii(), "ASCII-only: {text}");
                let mut lines = text.trim_end_matches('\n').split('\n');
                let id =
                    lines.next().unwrap().strip_prefix("id: ").expect("id line first").to_owned();
                let data =
                    lines.next().unwrap().strip_prefix("data: ").expect("one data line").to_owned();
                assert!(lines.next().is_none(), "nothing else in an event: {text}");
                events.push(Framed { id, data: serde_json::from_str(&data).unwrap() });
                if stop(&events) {
                    return false;
                }
            }
            match body.next().await {
                Some(chunk) => buffer.extend_from_slice(&chunk.unwrap()),
                None => return true,
            }
        }
    };
    let ended = tokio::time::timeout(BOUND, read).await.expect("events within the bound");
    (events, ended)
}

/// The `data:` objects of a capture, in order.
pub(crate) fn capture(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}
