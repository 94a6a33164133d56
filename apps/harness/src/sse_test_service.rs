//! `bb-harness sse-test-service`: the test-service HTTP API of LaunchDarkly's
//! `sse-contract-tests` around the bridge's own SSE client (`bb_engine_client::sse`: the same
//! parser, reconnect and `Last-Event-ID` logic the engines use). Prints its URL once listening.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context as _;
use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bb_engine_client::sse::{ReconnectPolicy, SseClient, SseClientEvent};
use bb_engine_client::transport::{
    EngineAuth, EngineRequest, EngineTransport, HttpMethod, HttpOptions, HttpTransport,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// The optional features this service supports (`docs/optional_features.md`).
pub(crate) const CAPABILITIES: [&str; 8] =
    ["comments", "headers", "last-event-id", "post", "report", "read-timeout", "restart", "bom"];

/// Options of `sse-test-service`.
#[derive(Debug, clap::Args)]
pub(crate) struct SseTestServiceArgs {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 8000)]
    port: u16,
}

/// `POST /` body: one SSE client to start.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateStream {
    stream_url: String,
    callback_url: String,
    #[serde(default)]
    tag: Option<String>,
    #[serde(default)]
    initial_delay_ms: Option<u64>,
    #[serde(default)]
    read_timeout_ms: Option<u64>,
    #[serde(default)]
    last_event_id: Option<String>,
    #[serde(default)]
    headers: HashMap<String, String>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    body: Option<String>,
}

/// What the test harness asks of a running stream.
#[derive(Debug)]
enum Control {
    Restart,
}

/// The handles of one running stream: its control channel and its close signal.
type Handles = (mpsc::UnboundedSender<Control>, oneshot::Sender<()>);

#[derive(Debug, Default)]
struct Streams {
    next_id: AtomicU64,
    running: Mutex<HashMap<u64, Handles>>,
}

type Shared = Arc<Streams>;

fn bad_request(message: impl Into<String>) -> Response {
    (StatusCode::BAD_REQUEST, message.into()).into_response()
}

pub(crate) async fn run(args: SseTestServiceArgs) -> anyhow::Result<()> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
    let listener =
        tokio::net::TcpListener::bind(addr).await.with_context(|| format!("binding {addr}"))?;
    let local = listener.local_addr()?;
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let stop = Arc::new(Mutex::new(Some(stop_tx)));
    let app = router(Arc::default(), Arc::clone(&stop));
    println!("http://{local}");
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            // A dropped sender also stops the service.
            let _ = stop_rx.await;
        })
        .await?;
    Ok(())
}

fn router(streams: Shared, stop: Arc<Mutex<Option<oneshot::Sender<()>>>>) -> Router {
    Router::new()
        .route(
            "/",
            get(|| async { Json(json!({"capabilities": CAPABILITIES})) })
                .post(create)
                .delete(move || quit(Arc::clone(&stop))),
        )
        .route("/streams/{id}", post(command).delete(close))
        .with_state(streams)
}

async fn quit(stop: Arc<Mutex<Option<oneshot::Sender<()>>>>) -> StatusCode {
    if let Some(tx) = stop.lock().unwrap_or_else(PoisonError::into_inner).take() {
        // The server may already be stopping.
        let _ = tx.send(());
    }
    StatusCode::NO_CONTENT
}

/// Splits a stream URL into the transport's base (`scheme://host:port/`) and the request
/// path with its query.
fn split_url(url: &str) -> Option<(String, String)> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let host = parsed.host_str()?;
    let port = parsed.port_or_known_default()?;
    let base = format!("{}://{}:{port}/", parsed.scheme(), host);
    let mut path = parsed.path().to_owned();
    if let Some(query) = parsed.query() {
        path.push('?');
        path.push_str(query);
    }
    Some((base, path))
}

async fn create(
    State(streams): State<Shared>,
    body: Result<Json<CreateStream>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Ok(Json(spec)) = body else {
        return bad_request("invalid JSON body");
    };
    let Some((base, path)) = split_url(&spec.stream_url) else {
        return bad_request(format!("invalid streamUrl {:?}", spec.stream_url));
    };
    let method = match spec.method.as_deref().map(str::to_ascii_uppercase).as_deref() {
        None | Some("GET") => HttpMethod::Get,
        Some("POST") => HttpMethod::Post,
        Some("REPORT") => HttpMethod::Report,
        Some(other) => return bad_request(format!("unsupported method {other}")),
    };
    let options = HttpOptions { connect_timeout: Duration::from_secs(5), ..HttpOptions::default() };
    let transport: Arc<dyn EngineTransport> =
        match HttpTransport::new(&base, EngineAuth::None, options) {
            Ok(t) => Arc::new(t),
            Err(e) => return bad_request(e.to_string()),
        };
    let mut request = EngineRequest::new(method, path);
    for (name, value) in &spec.headers {
        request = request.with_header(name.clone(), value.clone());
    }
    if let Some(body) = &spec.body {
        request = request.with_raw_body(body.clone());
    }
    let policy = ReconnectPolicy {
        initial_delay: Duration::from_millis(spec.initial_delay_ms.unwrap_or(1000)),
        max_delay: Duration::from_secs(30),
        max_attempts: u32::MAX,
        read_timeout: spec.read_timeout_ms.map_or(Duration::from_secs(300), Duration::from_millis),
    };
    let id = streams.next_id.fetch_add(1, Ordering::Relaxed) + 1;
    let (control_tx, control_rx) = mpsc::unbounded_channel();
    let (close_tx, close_rx) = oneshot::channel();
    streams
        .running
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(id, (control_tx, close_tx));
    let run = StreamRun {
        transport,
        request,
        policy,
        last_event_id: spec.last_event_id.filter(|id| !id.is_empty()),
        callback: spec.callback_url.trim_end_matches('/').to_owned(),
        tag: spec.tag.unwrap_or_default(),
    };
    tokio::spawn(run.run(control_rx, close_rx));
    (StatusCode::CREATED, [(header::LOCATION, format!("/streams/{id}"))]).into_response()
}

async fn command(
    State(streams): State<Shared>,
    Path(id): Path<u64>,
    _headers: HeaderMap,
    body: Result<Json<Value>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Ok(Json(body)) = body else {
        return bad_request("invalid JSON body");
    };
    let control = match body.get("command").and_then(Value::as_str) {
        Some("restart") => Control::Restart,
        other => return bad_request(format!("unknown command {other:?}")),
    };
    let running = streams.running.lock().unwrap_or_else(PoisonError::into_inner);
    match running.get(&id) {
        Some((tx, _)) if tx.send(control).is_ok() => StatusCode::NO_CONTENT.into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn close(State(streams): State<Shared>, Path(id): Path<u64>) -> StatusCode {
    let removed = streams.running.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
    match removed {
        Some((_, close)) => {
            // The stream task may have ended on its own.
            let _ = close.send(());
            StatusCode::NO_CONTENT
        }
        None => StatusCode::NOT_FOUND,
    }
}

/// One SSE client and its callback channel.
struct StreamRun {
    transport: Arc<dyn EngineTransport>,
    request: EngineRequest,
    policy: ReconnectPolicy,
    last_event_id: Option<String>,
    callback: String,
    tag: String,
}

impl StreamRun {
    fn client(&self, resume: Option<String>) -> SseClient {
        let client = SseClient::new(Arc::clone(&self.transport), self.request.clone())
            .with_policy(self.policy);
        match resume {
            Some(id) => client.with_resume_id(id),
            None => client,
        }
    }

    async fn run(
        self,
        mut control: mpsc::UnboundedReceiver<Control>,
        mut close: oneshot::Receiver<()>,
    ) {
        let http = reqwest::Client::new();
        let mut counter = 0u64;
        let mut client = self.client(self.last_event_id.clone());
        loop {
            let item = tokio::select! {
                _ = &mut close => break,
                Some(Control::Restart) = control.recv() => {
                    let resume = Some(client.last_event_id().to_owned()).filter(|id| !id.is_empty());
                    client.close();
                    client = self.client(resume);
                    continue;
                }
                item = client.next() => item,
            };
            let message = match item {
                None => break,
                Some(Ok(SseClientEvent::Event(event))) => json!({"kind": "event", "event": {
                    "type": event.event_type, "data": event.data, "id": event.last_event_id}}),
                Some(Ok(SseClientEvent::Comment(text))) => {
                    json!({"kind": "comment", "comment": text})
                }
                Some(Ok(SseClientEvent::Disconnected { reason, .. })) => {
                    json!({"kind": "error", "comment": reason.to_string()})
                }
                Some(Ok(_)) => continue,
                Some(Err(error)) => json!({"kind": "error", "comment": error.to_string()}),
            };
            counter += 1;
            let url = format!("{}/{counter}", self.callback);
            if let Err(error) = http.post(&url).json(&message).send().await {
                tracing::warn!(tag = %self.tag, %error, "callback failed");
            }
        }
        client.close();
    }
}
