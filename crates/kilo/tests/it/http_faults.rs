//! Faults over real HTTP: an axum fake Kilo engine behind `HttpTransport` drops a
//! connection mid-event, refuses credentials, or answers a stream with the wrong type.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bb_engine_client::sse::{ReconnectPolicy, SseClient, SseClientError};
use bb_engine_client::transport::{EngineAuth, HttpOptions, HttpTransport, TransportError};
use bb_kilo::client::{KiloClient, KiloRouterHandle, KiloUpdate};
use bytes::Bytes;
use futures_util::stream;
use secrecy::SecretString;
use serde_json::json;
use tokio::sync::mpsc;

/// `base64("kilo:secret")`.
const BASIC: &str = "Basic a2lsbzpzZWNyZXQ=";
const SES: &str = "ses_a";

#[derive(Clone, Default)]
struct Engine {
    event_hits: Arc<AtomicUsize>,
    plain_text_events: bool,
}

fn authorized(headers: &HeaderMap) -> bool {
    headers.get(header::AUTHORIZATION).is_some_and(|v| v == BASIC)
}

fn unauthorized() -> Response {
    (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Basic realm=\"Secure Area\"")], "")
        .into_response()
}

fn delta(id: &str) -> String {
    let event = json!({"id": id, "type": "message.part.delta",
        "properties": {"sessionID": SES, "messageID": "msg_1", "partID": "prt_1",
                       "field": "text", "delta": "x"}});
    format!("data: {event}\n\n")
}

async fn events(State(engine): State<Engine>, headers: HeaderMap) -> Response {
    if !authorized(&headers) {
        return unauthorized();
    }
    let hit = engine.event_hits.fetch_add(1, Ordering::SeqCst);
    let content_type = if engine.plain_text_events { "text/plain" } else { "text/event-stream" };
    let hello = "data: {\"type\":\"server.connected\",\"properties\":{}}\n\n".to_owned();
    let body = if hit == 0 {
        // One whole event, half of the next, then the connection breaks.
        let half = delta("evt_2")[..30].to_owned();
        let chunks: Vec<Result<Bytes, std::io::Error>> =
            vec![Ok(Bytes::from(hello)), Ok(Bytes::from(delta("evt_1"))), Ok(Bytes::from(half))];
        // Yield once so that the head and the chunks go out before the connection breaks.
        let cut = stream::once(async {
            tokio::task::yield_now().await;
            Err(std::io::Error::other("cut"))
        });
        Body::from_stream(futures_util::StreamExt::chain(stream::iter(chunks), cut))
    } else {
        let chunks: Vec<Result<Bytes, std::io::Error>> =
            vec![Ok(Bytes::from(hello)), Ok(Bytes::from(delta("evt_3")))];
        Body::from_stream(futures_util::StreamExt::chain(stream::iter(chunks), stream::pending()))
    };
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

async fn json_route(headers: HeaderMap, value: serde_json::Value) -> Response {
    if !authorized(&headers) {
        return unauthorized();
    }
    axum::Json(value).into_response()
}

async fn serve(engine: Engine) -> String {
    let app = Router::new()
        .route("/event", get(events))
        .route(
            "/session/status",
            get(|h: HeaderMap| json_route(h, json!({ SES: {"type": "busy"} }))),
        )
        .route("/permission", get(|h: HeaderMap| json_route(h, json!([]))))
        .route(
            "/session/ses_a/message",
            get(|h: HeaderMap| {
                json_route(
                    h,
                    json!([{"info": {"id": "msg_1", "sessionID": SES, "role": "user"},
                                      "parts": []}]),
                )
            }),
        )
        .route("/global/health", get(|h: HeaderMap| json_route(h, json!({"healthy": true}))))
        .route("/session", post(|h: HeaderMap| json_route(h, json!({"id": SES, "title": "t"}))))
        .with_state(engine);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

fn client(url: &str, password: &str) -> KiloClient {
    let auth = EngineAuth::Basic { user: "kilo".into(), password: SecretString::from(password) };
    let transport = HttpTransport::new(url, auth, HttpOptions::default()).unwrap();
    KiloClient::new(Arc::new(transport))
}

/// The router of `client`'s stream, retrying quickly and twice at most.
fn spawn_router(client: KiloClient) -> (KiloRouterHandle, mpsc::Receiver<KiloUpdate>) {
    let policy = ReconnectPolicy {
        initial_delay: Duration::from_millis(5),
        max_attempts: 2,
        ..ReconnectPolicy::default()
    };
    let sse =
        SseClient::new(client.transport().clone(), client.event_request()).with_policy(policy);
    crate::spawn_router(client, sse, 64)
}

fn label(update: &KiloUpdate) -> String {
    match update {
        KiloUpdate::Connected { reconnects } => format!("connected {reconnects}"),
        KiloUpdate::Rehydrated { session_id, messages, status, .. } => {
            format!("rehydrated {session_id} {} {}", messages.len(), status.kind)
        }
        KiloUpdate::Event { event, .. } => format!("event {}", event.id.as_deref().unwrap_or("")),
        KiloUpdate::Unrouted(event) => format!("unrouted {}", event.event_type),
        KiloUpdate::Reconnecting { attempt, .. } => format!("reconnecting {attempt}"),
        other => format!("{other:?}"),
    }
}

#[tokio::test]
async fn drop_mid_event_discards_partial_reconnects_and_rehydrates() {
    let engine = Engine::default();
    let url = serve(engine.clone()).await;
    let (handle, mut rx) = spawn_router(client(&url, "secret"));
    handle.track(SES);
    let mut got = Vec::new();
    while got.len() < 9 {
        got.push(label(&rx.recv().await.unwrap()));
    }
    assert_eq!(
        got,
        vec![
            "connected 0",
            "rehydrated ses_a 1 busy",
            "unrouted server.connected",
            "event evt_1",
            "reconnecting 1",
            "connected 1",
            "rehydrated ses_a 1 busy",
            "unrouted server.connected",
            "event evt_3",
        ]
    );
    assert_eq!(engine.event_hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn wrong_password_is_an_auth_error_without_retry_loop() {
    let engine = Engine::default();
    let url = serve(engine.clone()).await;
    let kilo = client(&url, "wrong");
    let err = kilo.health().await.unwrap_err();
    assert!(err.is_auth(), "{err:?}");
    let (handle, mut rx) = spawn_router(kilo);
    assert_eq!(rx.recv().await, Some(KiloUpdate::Failed(SseClientError::Auth { status: 401 })));
    assert_eq!(rx.recv().await, None);
    assert!(handle.is_finished());
    assert_eq!(engine.event_hits.load(Ordering::SeqCst), 0, "401 is answered before counting");
}

#[tokio::test]
async fn rest_calls_carry_basic_auth() {
    let url = serve(Engine::default()).await;
    let kilo = client(&url, "secret");
    assert!(kilo.health().await.unwrap().healthy);
    let session = kilo.create_session(&Default::default()).await.unwrap();
    assert_eq!(session.id, SES);
    let err = kilo.get_session("../config").await.unwrap_err();
    assert!(matches!(err, bb_kilo::client::KiloError::InvalidId { .. }), "{err:?}");
}

#[tokio::test]
async fn a_stream_that_is_not_an_event_stream_is_fatal() {
    let url = serve(Engine { plain_text_events: true, ..Engine::default() }).await;
    let (_handle, mut rx) = spawn_router(client(&url, "secret"));
    let update = rx.recv().await.unwrap();
    assert_eq!(
        update,
        KiloUpdate::Failed(SseClientError::Fatal(TransportError::NotEventStream {
            content_type: "text/plain".into()
        }))
    );
}

#[test]
fn only_loopback_engines_are_accepted() {
    for url in ["http://example.com:4096", "http://10.0.0.1", "ftp://127.0.0.1", "not a url"] {
        let err = HttpTransport::new(url, EngineAuth::None, HttpOptions::default()).unwrap_err();
        assert!(matches!(err, TransportError::Invalid(_)), "{url}: {err:?}");
    }
    for url in ["http://127.0.0.1:1", "http://localhost:2", "http://[::1]:3"] {
        HttpTransport::new(url, EngineAuth::None, HttpOptions::default()).unwrap();
    }
}

/// A hung engine: a start-up request (the health probe of an attach) is bounded by the
/// transport's deadline, and the error names it (as does the `engine_timeout` a webview is
/// told).
#[tokio::test]
async fn a_hung_engine_fails_a_startup_request_naming_the_deadline() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"healthy": true, "version": "1"}))
                .set_delay(Duration::from_secs(30)),
        )
        .mount(&server)
        .await;
    let options =
        HttpOptions { request_timeout: Duration::from_millis(300), ..HttpOptions::default() };
    let transport = HttpTransport::new(&server.uri(), EngineAuth::None, options).unwrap();
    let kilo = KiloClient::new(Arc::new(transport));
    let err = tokio::time::timeout(Duration::from_secs(20), kilo.health())
        .await
        .expect("bounded by the deadline, not the server's 30 s")
        .unwrap_err();
    assert!(
        matches!(err, bb_kilo::client::KiloError::Transport(TransportError::Timeout { after })
            if after == Duration::from_millis(300)),
        "{err:?}"
    );
    assert!(err.to_string().contains("within 300ms"), "the deadline is named: {err}");
    let told = bb_service::EngineError::Timeout(Duration::from_millis(300)).to_string();
    assert!(told.contains("within 300ms") && told.contains("retry"), "{told}");
}
