//! The soak's tap on the engine side: an HTTP proxy on loopback between the bridges and the
//! fake engine. It records what the engine sent on every session stream (the truth the
//! windows are checked against) and every permission decision the engine was told, follows
//! the engine to its new port after a restart, and injects the stream faults: a stall (the
//! streams forward nothing for a while) and a cut (every open stream is aborted, no
//! terminating chunk, as a dropped connection).

use std::collections::{HashMap, HashSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use bb_engine_client::sse::{SseItem, SseParser};
use futures_util::StreamExt as _;
use serde_json::Value;
use tokio::sync::watch;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One event the engine sent on a session stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sent {
    pub(crate) id: String,
    pub(crate) kind: String,
    /// For a text delta: what adjacent deltas of one message merge by (type, message, turn).
    pub(crate) merge_key: Option<String>,
    /// For a text delta: its text.
    pub(crate) text: String,
}

impl Sent {
    /// Reads one event of a BreadBoard stream (its SSE id, the bridge's id for it, and its
    /// `data:`); `None` for what is not an event envelope.
    pub(crate) fn parse(sse_id: &str, data: &str) -> Option<(String, Self)> {
        let v: Value = serde_json::from_str(data).ok()?;
        let id = sse_id.to_owned();
        let session = v["session_id"].as_str()?.to_owned();
        let kind = v["type"].as_str()?.to_owned();
        let payload = &v["payload"];
        let field = match kind.as_str() {
            "assistant.message.delta"
            | "assistant.reasoning.delta"
            | "assistant.thought_summary.delta" => Some("delta"),
            "assistant_delta" => Some("text"),
            _ => None,
        };
        let (merge_key, text) = match field {
            Some(field) => {
                let message = payload["item_id"]
                    .as_str()
                    .or_else(|| payload["message_id"].as_str())
                    .unwrap_or_default();
                let key = format!("{kind}\u{1f}{message}\u{1f}{}", v["turn"]);
                (Some(key), payload[field].as_str().unwrap_or_default().to_owned())
            }
            None => (None, String::new()),
        };
        Some((session, Self { id, kind, merge_key, text }))
    }
}

/// What the engine sent and was told, per session.
#[derive(Debug, Default)]
pub(crate) struct SessionTruth {
    /// Every event the engine sent, once, in the order first sent.
    pub(crate) events: Vec<Sent>,
    ids: HashSet<String>,
    /// For each permission decision the engine took: how many events it had sent by the
    /// time it was sent (the decision answers the last `permission_request` before that
    /// point). Recorded from the engine's reply, even when the bridge hung up meanwhile.
    pub(crate) decisions: Vec<usize>,
    /// The same for the decisions the engine refused as answering no active request (409):
    /// it took nothing from them.
    pub(crate) refused: Vec<usize>,
}

impl SessionTruth {
    pub(crate) fn record(&mut self, sent: Sent) {
        if self.ids.insert(sent.id.clone()) {
            self.events.push(sent);
        }
    }
}

/// Everything recorded, by session id.
pub(crate) type Truth = HashMap<String, SessionTruth>;

struct Shared {
    upstream: Mutex<SocketAddr>,
    client: reqwest::Client,
    truth: Mutex<Truth>,
    /// True while the streams are stalled.
    stall: watch::Sender<bool>,
    /// Bumped by every cut.
    cuts: watch::Sender<u64>,
}

/// The running proxy.
pub(crate) struct Proxy {
    pub(crate) url: String,
    shared: Arc<Shared>,
}

impl Proxy {
    /// Serves on a free loopback port, forwarding to `upstream`.
    pub(crate) async fn start(upstream: SocketAddr) -> anyhow::Result<Self> {
        let shared = Arc::new(Shared {
            upstream: Mutex::new(upstream),
            client: reqwest::Client::builder().build()?,
            truth: Mutex::new(Truth::new()),
            stall: watch::channel(false).0,
            cuts: watch::channel(0).0,
        });
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let url = format!("http://{}", listener.local_addr()?);
        let app = axum::Router::new().fallback(forward).with_state(Arc::clone(&shared));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { url, shared })
    }

    /// Points the proxy at a restarted engine.
    pub(crate) fn retarget(&self, upstream: SocketAddr) {
        *lock(&self.shared.upstream) = upstream;
    }

    pub(crate) fn set_stalled(&self, stalled: bool) {
        self.shared.stall.send_replace(stalled);
    }

    /// Aborts every open session stream.
    pub(crate) fn cut(&self) {
        self.shared.cuts.send_modify(|n| *n += 1);
    }

    /// A copy of what was recorded so far.
    pub(crate) fn with_truth<R>(&self, f: impl FnOnce(&Truth) -> R) -> R {
        f(&lock(&self.shared.truth))
    }
}

fn session_of(path: &str) -> Option<&str> {
    path.strip_prefix("/v1/sessions/")?.split('/').next()
}

async fn forward(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    match forward_inner(&shared, request).await {
        Ok(response) => response,
        Err(e) => {
            let mut response = Response::new(Body::from(format!("proxy: {e}")));
            *response.status_mut() = StatusCode::BAD_GATEWAY;
            response
        }
    }
}

async fn forward_inner(shared: &Arc<Shared>, request: Request) -> anyhow::Result<Response> {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
    let body = axum::body::to_bytes(body, 16 << 20).await?;
    let session = session_of(parts.uri.path()).map(str::to_owned);
    let is_stream = parts.uri.path().ends_with("/events") && parts.method == "GET";
    let mut decision = None;
    if let Some(session) = &session {
        let text = String::from_utf8_lossy(&body);
        if parts.uri.path().ends_with("/command") && text.contains("\"permission_decision\"") {
            let at = lock(&shared.truth).get(session).map_or(0, |t| t.events.len());
            decision = Some((session.clone(), at));
        }
    }
    let upstream = *lock(&shared.upstream);
    let mut headers = HeaderMap::new();
    for (name, value) in &parts.headers {
        if name != "host" && name != "content-length" && name != "connection" {
            headers.append(name, value.clone());
        }
    }
    let send = shared
        .client
        .request(parts.method.clone(), format!("http://{upstream}{path}"))
        .headers(headers)
        .body(body)
        .send();
    let out = match decision {
        // A decision is forwarded on a task of its own, so what the engine answered is
        // recorded even when the bridge is killed while it waits.
        Some((session, at)) => {
            let shared = Arc::clone(shared);
            tokio::spawn(async move {
                let out = send.await;
                if let Ok(reply) = &out {
                    let mut truth = lock(&shared.truth);
                    let entry = truth.entry(session).or_default();
                    if reply.status() == StatusCode::CONFLICT {
                        entry.refused.push(at);
                    } else {
                        entry.decisions.push(at);
                    }
                }
                out
            })
            .await??
        }
        None => send.await?,
    };
    let status = out.status();
    let mut response_headers = HeaderMap::new();
    for (name, value) in out.headers() {
        if name != "content-length" && name != "transfer-encoding" && name != "connection" {
            response_headers.append(name, value.clone());
        }
    }
    let body = match (is_stream && status.is_success(), session) {
        (true, Some(session)) => Body::from_stream(tap(Arc::clone(shared), session, out)),
        _ => Body::from(out.bytes().await?),
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = response_headers;
    Ok(response)
}

/// The stream's bytes as the engine sent them, each event recorded once it went through
/// whole; held while stalled, aborted at a cut or when the engine's side fails.
fn tap(
    shared: Arc<Shared>,
    session: String,
    upstream: reqwest::Response,
) -> impl futures_util::Stream<Item = std::io::Result<Bytes>> {
    let mut stall = shared.stall.subscribe();
    let mut cuts = shared.cuts.subscribe();
    cuts.mark_unchanged();
    let mut parser = SseParser::default();
    let mut items = Vec::new();
    let mut bytes = upstream.bytes_stream();
    async_stream(move |yield_| async move {
        loop {
            let chunk = tokio::select! {
                chunk = bytes.next() => chunk,
                _ = cuts.changed() => return abort("cut by the soak").await,
            };
            let chunk = match chunk {
                None => return Ok(()),
                Some(Ok(chunk)) => chunk,
                Some(Err(_)) => return abort("the engine's side failed").await,
            };
            while *stall.borrow_and_update() {
                tokio::select! {
                    _ = stall.changed() => {}
                    _ = cuts.changed() => return abort("cut by the soak").await,
                }
            }
            if parser.feed(&chunk, &mut items).is_err() {
                return Err(std::io::Error::other("unparseable stream"));
            }
            // Recorded once handed on to the bridge's connection; a bridge that hung up stops
            // the stream.
            if !yield_.send(chunk).await {
                return Ok(());
            }
            {
                let mut truth = lock(&shared.truth);
                for item in items.drain(..) {
                    if let SseItem::Event(event) = item
                        && let Some((id_session, sent)) =
                            Sent::parse(&event.last_event_id, &event.data)
                    {
                        debug_assert_eq!(id_session, session);
                        truth.entry(id_session).or_default().record(sent);
                    }
                }
            }
        }
    })
}

/// Aborts the response (no terminating chunk), once what was handed on had time to reach
/// the bridge's socket: an abort drops what the server has not written yet, and what was
/// recorded as sent must have been.
async fn abort(why: &str) -> std::io::Result<()> {
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    Err(std::io::Error::other(why.to_owned()))
}

/// A channel that hands a producer's chunks to a body stream; the producer's `Err` ends the
/// stream with that error (an aborted response).
struct Yield(tokio::sync::mpsc::Sender<std::io::Result<Bytes>>);

impl Yield {
    /// False when the body stream is gone (the bridge hung up).
    async fn send(&self, chunk: Bytes) -> bool {
        self.0.send(Ok(chunk)).await.is_ok()
    }
}

fn async_stream<F, Fut>(producer: F) -> impl futures_util::Stream<Item = std::io::Result<Bytes>>
where
    F: FnOnce(Yield) -> Fut,
    Fut: Future<Output = std::io::Result<()>> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    let done = tx.clone();
    let fut = producer(Yield(tx));
    tokio::spawn(async move {
        if let Err(e) = fut.await {
            let _ = done.send(Err(e)).await;
        }
    });
    tokio_stream_from(rx)
}

fn tokio_stream_from(
    mut rx: tokio::sync::mpsc::Receiver<std::io::Result<Bytes>>,
) -> impl futures_util::Stream<Item = std::io::Result<Bytes>> {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}
