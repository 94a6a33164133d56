//! The two cases of LaunchDarkly's `sse-contract-tests` the bridge's SSE client once failed,
//! reproduced against `bb-harness sse-test-service` the way the suite drives it (the Go suite
//! itself needs the Go module proxy, which CI does not have):
//! - `HTTP behavior/default method and headers`: `GET` with `Accept: text/event-stream` and
//!   `Cache-Control: no-cache`;
//! - `basic parsing/large message in two chunks`: a ~10 MiB `data:` line split over two
//!   chunks arrives whole.

use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::HeaderMap;
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt as _;
use tokio::sync::mpsc;

const BOUND: Duration = Duration::from_secs(30);

#[derive(Clone)]
struct Suite {
    requests: mpsc::UnboundedSender<(String, HeaderMap)>,
    callbacks: mpsc::UnboundedSender<Value>,
    body: fn() -> axum::body::Body,
}

async fn stream(
    State(suite): State<Suite>,
    method: axum::http::Method,
    headers: HeaderMap,
) -> axum::response::Response {
    suite.requests.send((method.to_string(), headers)).unwrap();
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body((suite.body)())
        .unwrap()
}

async fn callback(State(suite): State<Suite>, Path(_n): Path<u64>, body: axum::Json<Value>) {
    suite.callbacks.send(body.0).unwrap();
}

#[allow(clippy::disallowed_methods)] // the test drives the real binary
async fn start(
    body: fn() -> axum::body::Body,
) -> (
    tokio::process::Child,
    String,
    mpsc::UnboundedReceiver<(String, HeaderMap)>,
    mpsc::UnboundedReceiver<Value>,
) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_bb-harness"))
        .args(["sse-test-service", "--port", "0"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let service = tokio::time::timeout(BOUND, lines.next_line()).await.unwrap().unwrap().unwrap();
    let (requests, requests_rx) = mpsc::unbounded_channel();
    let (callbacks, callbacks_rx) = mpsc::unbounded_channel();
    let app = Router::new()
        .route("/stream", get(stream).post(stream))
        .route("/callback/{n}", post(callback))
        // The suite's callback receives the whole 10 MiB event.
        .layer(DefaultBodyLimit::disable())
        .with_state(Suite { requests, callbacks, body });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let local = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let created = reqwest::Client::new()
        .post(&service)
        .json(&json!({
            "streamUrl": format!("http://{local}/stream"),
            "callbackUrl": format!("http://{local}/callback"),
            "tag": "conformance",
        }))
        .send()
        .await
        .unwrap();
    assert!(created.status().is_success());
    (child, service, requests_rx, callbacks_rx)
}

fn idle() -> axum::body::Body {
    axum::body::Body::from_stream(futures_util::stream::pending::<Result<String, std::io::Error>>())
}

#[tokio::test]
async fn default_method_and_headers() {
    let (_child, _service, mut requests, _callbacks) = start(idle).await;
    let (method, headers) = tokio::time::timeout(BOUND, requests.recv()).await.unwrap().unwrap();
    assert_eq!(method, "GET");
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    assert_eq!(header("accept").as_deref(), Some("text/event-stream"));
    assert_eq!(header("cache-control").as_deref(), Some("no-cache"));
    assert_eq!(headers.get_all("cache-control").iter().count(), 1, "one Cache-Control header");
}

const LARGE: usize = 10 * 1024 * 1024;

fn large_in_two_chunks() -> axum::body::Body {
    let data = "x".repeat(LARGE);
    let (first, second) = data.split_at(LARGE / 2);
    let chunks: Vec<Result<String, std::io::Error>> =
        vec![Ok(format!("data: {first}")), Ok(format!("{second}\n\n"))];
    let tail = futures_util::stream::pending::<Result<String, std::io::Error>>();
    axum::body::Body::from_stream(futures_util::StreamExt::chain(
        futures_util::stream::iter(chunks),
        tail,
    ))
}

#[tokio::test]
async fn large_message_in_two_chunks() {
    let (_child, _service, _requests, mut callbacks) = start(large_in_two_chunks).await;
    let message = tokio::time::timeout(BOUND, callbacks.recv()).await.unwrap().unwrap();
    assert_eq!(message["kind"], "event", "an event, not an error: {:.200}", message.to_string());
    let data = message["event"]["data"].as_str().unwrap();
    assert_eq!(data.len(), LARGE);
    assert!(data.bytes().all(|b| b == b'x'));
}
