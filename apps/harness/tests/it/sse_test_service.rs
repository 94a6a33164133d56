//! `bb-harness sse-test-service` driven the way LaunchDarkly's contract-test harness drives
//! it: capabilities, create a stream, events/comments/errors on numbered callbacks, custom
//! method/body/headers, initial and resumed `Last-Event-ID`, restart, close and quit.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::{any, post};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt as _;
use tokio::sync::mpsc;

const BOUND: Duration = Duration::from_secs(20);

/// What the SSE endpoint saw of one connection.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    last_event_id: Option<String>,
    custom: Option<String>,
    body: String,
}

#[derive(Clone)]
struct Harness {
    connections: Arc<Mutex<Vec<Seen>>>,
    connected: mpsc::UnboundedSender<Seen>,
    callbacks: mpsc::UnboundedSender<(u64, Value)>,
}

async fn stream(
    State(h): State<Harness>,
    method: axum::http::Method,
    headers: HeaderMap,
    body: String,
) -> axum::response::Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let n = {
        let mut seen = h.connections.lock().unwrap();
        let one = Seen {
            method: method.to_string(),
            last_event_id: header("last-event-id"),
            custom: header("x-test"),
            body,
        };
        seen.push(one.clone());
        h.connected.send(one).unwrap();
        seen.len()
    };
    let body = match n {
        // BOM, an event, a comment, then a partial event the client must discard.
        1 => axum::body::Body::from("\u{feff}id: 1\ndata: one\n\n:a comment\ndata: partial"),
        2 => axum::body::Body::from("id: 2\r\ndata: two\r\n\r\n"),
        _ => axum::body::Body::from_stream(futures_util::stream::pending::<
            Result<String, std::io::Error>,
        >()),
    };
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body(body)
        .unwrap()
}

async fn callback(
    State(h): State<Harness>,
    Path(n): Path<u64>,
    axum::Json(body): axum::Json<Value>,
) {
    h.callbacks.send((n, body)).unwrap();
}

#[allow(clippy::disallowed_methods)] // the test drives the real binary
fn service() -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_bb-harness"))
        .args(["sse-test-service", "--port", "0"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

async fn next_callback(rx: &mut mpsc::UnboundedReceiver<(u64, Value)>) -> (u64, Value) {
    tokio::time::timeout(BOUND, rx.recv()).await.unwrap().unwrap()
}

#[tokio::test]
async fn the_contract_harness_flow_works_end_to_end() {
    let mut child = service();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(BOUND, lines.next_line()).await.unwrap().unwrap().unwrap();

    let (tx, mut rx) = mpsc::unbounded_channel();
    let (connected, mut connections) = mpsc::unbounded_channel();
    let harness = Harness { connections: Arc::default(), connected, callbacks: tx };
    let app = Router::new()
        .route("/stream", any(stream))
        .route("/callback/{n}", post(callback))
        .with_state(harness.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let local = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let http = reqwest::Client::new();
    let status: Value = http.get(&url).send().await.unwrap().json().await.unwrap();
    let capabilities: Vec<&str> =
        status["capabilities"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    for wanted in
        ["comments", "headers", "last-event-id", "post", "report", "read-timeout", "restart", "bom"]
    {
        assert!(capabilities.contains(&wanted), "{wanted}");
    }

    let created = http
        .post(&url)
        .json(&json!({
            "streamUrl": format!("http://{local}/stream"),
            "callbackUrl": format!("http://{local}/callback"),
            "tag": "flow",
            "initialDelayMs": 1,
            "readTimeoutMs": 10_000,
            "lastEventId": "seed",
            "headers": {"x-test": "yes", "content-type": "text/plain"},
            "method": "REPORT",
            "body": "hello",
        }))
        .send()
        .await
        .unwrap();
    assert!(created.status().is_success());
    let location = created.headers()["location"].to_str().unwrap().to_owned();
    let stream_url = format!("{url}{location}");

    let mut got = Vec::new();
    while got.len() < 4 {
        got.push(next_callback(&mut rx).await);
    }
    let numbers: Vec<u64> = got.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, [1, 2, 3, 4]);
    assert_eq!(
        got[0].1,
        json!({"kind": "event", "event": {"type": "message", "data": "one", "id": "1"}})
    );
    assert_eq!(got[1].1, json!({"kind": "comment", "comment": "a comment"}));
    assert_eq!(got[2].1["kind"], "error", "the dropped connection is reported");
    assert_eq!(
        got[3].1,
        json!({"kind": "event", "event": {"type": "message", "data": "two", "id": "2"}})
    );

    // The second connection's body ended, so the client is on its third: wait for it, so
    // that the restart below is what opens the fourth (and none opens before it is asked).
    let mut seen = Vec::new();
    while seen.len() < 3 {
        seen.push(tokio::time::timeout(BOUND, connections.recv()).await.unwrap().unwrap());
    }
    let restart = http.post(&stream_url).json(&json!({"command": "restart"})).send().await.unwrap();
    assert!(restart.status().is_success());
    seen.push(tokio::time::timeout(BOUND, connections.recv()).await.unwrap().unwrap());
    let unknown = http.post(&stream_url).json(&json!({"command": "dance"})).send().await.unwrap();
    assert_eq!(unknown.status(), 400);
    assert_eq!(harness.connections.lock().unwrap().len(), 4, "one connection per restart");
    let ids: Vec<_> = seen.iter().map(|s| s.last_event_id.as_deref()).collect();
    assert_eq!(ids, [Some("seed"), Some("1"), Some("2"), Some("2")]);
    for s in &seen {
        assert_eq!(
            (s.method.as_str(), s.body.as_str(), s.custom.as_deref()),
            ("REPORT", "hello", Some("yes"))
        );
    }

    assert!(http.delete(&stream_url).send().await.unwrap().status().is_success());
    assert_eq!(http.delete(&stream_url).send().await.unwrap().status(), 404);
    assert!(http.delete(&url).send().await.unwrap().status().is_success());
    let exit = tokio::time::timeout(BOUND, child.wait()).await.unwrap().unwrap();
    assert!(exit.success());
}
