//! The sidebar page: HTML, scripts and styles embedded in the binary, served under a strict
//! CSP with a fresh nonce per load and the page's config (`window.__APP_CONFIG__`) injected.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bb_bridge_ws::{Refusal, WsState};
use rand::RngCore;
use secrecy::ExposeSecret;
use serde_json::{Value, json};

/// The page's files, compiled in: (name, content type, body).
const ASSETS: &[(&str, &str, &str)] = &[
    ("app.js", "text/javascript; charset=utf-8", include_str!("../page/app.js")),
    ("folders.js", "text/javascript; charset=utf-8", include_str!("../page/folders.js")),
    ("rpc.js", "text/javascript; charset=utf-8", include_str!("../page/rpc.js")),
    ("store.js", "text/javascript; charset=utf-8", include_str!("../page/store.js")),
    ("view.js", "text/javascript; charset=utf-8", include_str!("../page/view.js")),
    ("markdown.js", "text/javascript; charset=utf-8", include_str!("../page/markdown.js")),
    ("diff.js", "text/javascript; charset=utf-8", include_str!("../page/diff.js")),
    ("dom.js", "text/javascript; charset=utf-8", include_str!("../page/dom.js")),
    ("pickers.js", "text/javascript; charset=utf-8", include_str!("../page/pickers.js")),
    ("slash.js", "text/javascript; charset=utf-8", include_str!("../page/slash.js")),
    ("questions.js", "text/javascript; charset=utf-8", include_str!("../page/questions.js")),
    ("style.css", "text/css; charset=utf-8", include_str!("../page/style.css")),
];
const INDEX: &str = include_str!("../page/index.html");

/// What the page routes share.
#[derive(Debug)]
pub(crate) struct PageState {
    pub(crate) ws: Arc<WsState>,
    /// `settings` of the page config.
    pub(crate) settings: Value,
}

/// `/` (the page, token required), `/assets/*` (its static files, no secrets in them) and
/// an empty `/favicon.ico` (browsers ask for one).
pub(crate) fn router(state: Arc<PageState>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/assets/{name}", get(asset))
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .with_state(state)
}

async fn index(
    State(state): State<Arc<PageState>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    if let Err(refusal) = state.ws.admit(&headers, query.as_deref()) {
        return refusal.into_response();
    }
    // `admit` checked Host: it is a loopback name with our port.
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    let nonce = nonce();
    let config = json!({
        "wsUrl": format!("ws://{host}/ws"),
        "authToken": state.ws.token.expose_secret(),
        "settings": state.settings,
    });
    // `<` escaped so no value can close the script element.
    let config = config.to_string().replace('<', "\\u003c");
    let html = INDEX.replace("{{NONCE}}", &nonce).replace("{{CONFIG}}", &config);
    let csp = format!(
        "default-src 'none'; script-src 'nonce-{nonce}' 'strict-dynamic'; style-src 'nonce-{nonce}'; \
         connect-src ws://{host}; img-src 'self'; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'self' tauri://localhost"
    );
    let mut response = (StatusCode::OK, html).into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    if let Ok(csp) = HeaderValue::from_str(&csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    secure_headers(h);
    response
}

async fn asset(
    State(state): State<Arc<PageState>>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Response {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    if !bb_bridge_ws::host_allowed(host, state.ws.port) {
        return Refusal::Host.into_response();
    }
    let Some((_, kind, body)) = ASSETS.iter().find(|(n, _, _)| *n == name) else {
        return (StatusCode::NOT_FOUND, "no such asset").into_response();
    };
    let mut response = (StatusCode::OK, *body).into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("default-src 'none'"));
    secure_headers(h);
    response
}

fn secure_headers(h: &mut HeaderMap) {
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // The page URL carries the token: never send it on as a referrer, never cache the page.
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

fn nonce() -> String {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
