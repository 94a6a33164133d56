//! The HTTP side: the `/ws` upgrade behind the admission checks, the optional `/echo`
//! conformance route, and the admission checks themselves for other routes (the page).

use std::sync::Arc;

use axum::Router;
use axum::extract::ws::{
    Message, WebSocket, WebSocketUpgrade, rejection::WebSocketUpgradeRejection,
};
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bb_protocol::Limits;
use bb_service::WebviewSink;
use secrecy::SecretString;
use tokio::sync::mpsc;

use crate::acp::AcpHandler;
use crate::guard::{OriginPolicy, host_allowed, token_matches};
use crate::platform::Platform;

/// Largest message the `/echo` route accepts (the conformance cases send up to 16 MiB).
pub const ECHO_MAX_BYTES: usize = 64 << 20;

/// Everything a gateway's routes share.
#[derive(Debug)]
pub struct WsState {
    /// The per-run token.
    pub token: SecretString,
    /// The port the gateway listens on (for the `Host` check and its own origin).
    pub port: u16,
    /// Allowed `Origin`s.
    pub origins: OriginPolicy,
    /// Message limits: the largest message accepted (a bigger one closes the connection
    /// with 1009) and the nesting limit.
    pub limits: Limits,
    /// Serves `dialog.open` and `shell.openPath`.
    pub platform: Arc<dyn Platform>,
    /// Serves `acp_*`.
    pub acp: Arc<dyn AcpHandler>,
    /// Each new connection's sink goes to the runtime here.
    pub connections: mpsc::Sender<WebviewSink>,
    /// Serve the `/echo` route (conformance testing only).
    pub echo: bool,
    /// Turns `true` when the gateway stops: every connection closes with 1001.
    pub stopping: tokio::sync::watch::Receiver<bool>,
}

/// Why a request was refused. The body names the check, never the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `Host` is not a loopback name with the gateway's port.
    Host,
    /// `Origin` is not allowed.
    Origin,
    /// The token is missing or wrong.
    Token,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let (status, why) = match self {
            Refusal::Host => (
                StatusCode::MISDIRECTED_REQUEST,
                "refused: the Host header must be a loopback name with this gateway's port",
            ),
            Refusal::Origin => {
                (StatusCode::FORBIDDEN, "refused: this Origin may not connect to the gateway")
            }
            Refusal::Token => (
                StatusCode::FORBIDDEN,
                "refused: missing or wrong ?token= (use the URL the gateway printed)",
            ),
        };
        tracing::warn!(check = ?self, "refused a request");
        (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], why).into_response()
    }
}

/// The `token` query parameter, if any.
pub fn query_token(query: Option<&str>) -> Option<&str> {
    query?.split('&').find_map(|pair| pair.strip_prefix("token="))
}

impl WsState {
    /// Checks `Host`, `Origin` and the token, in that order.
    pub fn admit(&self, headers: &HeaderMap, query: Option<&str>) -> Result<(), Refusal> {
        let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
        if !host_allowed(text(header::HOST), self.port) {
            return Err(Refusal::Host);
        }
        if headers.contains_key(header::ORIGIN) && text(header::ORIGIN).is_none()
            || !self.origins.allows(text(header::ORIGIN))
        {
            return Err(Refusal::Origin);
        }
        if !token_matches(&self.token, query_token(query)) {
            return Err(Refusal::Token);
        }
        Ok(())
    }
}

/// The routes: `/ws` (and `/echo` when enabled).
pub fn router(state: Arc<WsState>) -> Router {
    let mut router = Router::new().route("/ws", get(ws_route));
    if state.echo {
        router = router.route("/echo", get(echo_route));
    }
    router.with_state(state)
}

async fn ws_route(
    State(state): State<Arc<WsState>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    if let Err(refusal) = state.admit(&headers, query.as_deref()) {
        return refusal.into_response();
    }
    let upgrade = match upgrade {
        Ok(upgrade) => upgrade,
        Err(rejection) => return rejection.into_response(),
    };
    let max = state.limits.max_bytes;
    upgrade
        .max_message_size(max)
        .max_frame_size(max)
        .on_upgrade(move |socket| crate::connection::serve(socket, state))
}

async fn echo_route(
    State(state): State<Arc<WsState>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    if let Err(refusal) = state.admit(&headers, query.as_deref()) {
        return refusal.into_response();
    }
    match upgrade {
        Ok(upgrade) => {
            upgrade.max_message_size(ECHO_MAX_BYTES).max_frame_size(ECHO_MAX_BYTES).on_upgrade(echo)
        }
        Err(rejection) => rejection.into_response(),
    }
}

/// Echoes text and binary messages back; pings and the closing handshake are answered by
/// the WebSocket layer (reading on after a close lets it send the reply).
async fn echo(mut socket: WebSocket) {
    while let Some(Ok(message)) = socket.recv().await {
        let reply = match message {
            Message::Text(_) | Message::Binary(_) => message,
            Message::Close(_) | Message::Ping(_) | Message::Pong(_) => continue,
        };
        if socket.send(reply).await.is_err() {
            break;
        }
    }
}
