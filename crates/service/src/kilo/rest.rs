//! The Kilo REST routes the adapter uses, over the engine transport port, with transport
//! errors mapped to [`EngineError`]s.

use std::collections::{HashMap, HashSet};

use bb_engine_client::transport::{EngineRequest, EngineTransport, HttpMethod, TransportError};
use serde_json::{Value, json};

use crate::engine::EngineError;

/// Maps a transport failure; `session` names the session a 404 is about.
pub(crate) fn map_error(err: TransportError, session: Option<&str>) -> EngineError {
    match err {
        TransportError::Auth { status } => EngineError::Auth { status },
        TransportError::Http { status: 404, body } => match session {
            Some(id) => EngineError::SessionNotFound(id.to_owned()),
            None => EngineError::Engine(format!("not found: {body}")),
        },
        TransportError::Http { status: 400, body } => EngineError::InvalidRequest(body),
        TransportError::Http { status, body } => {
            EngineError::Engine(format!("HTTP {status}: {body}"))
        }
        TransportError::Connect(why) => EngineError::Unavailable(why),
        TransportError::Timeout => EngineError::Timeout,
        other => EngineError::Engine(other.to_string()),
    }
}

/// A Kilo session id usable as one path segment: `ses` followed by `[A-Za-z0-9_-]`. Anything
/// else cannot name a session (and must never reach a URL path).
pub(crate) fn checked_session_id(id: &str) -> Result<&str, EngineError> {
    let ok = id.starts_with("ses")
        && id.len() <= 128
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok { Ok(id) } else { Err(EngineError::SessionNotFound(id.to_owned())) }
}

async fn json_of(
    transport: &dyn EngineTransport,
    request: EngineRequest,
    session: Option<&str>,
) -> Result<Value, EngineError> {
    let response = transport.request(request).await.map_err(|e| map_error(e, session))?;
    if response.body.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(&response.body)
        .map_err(|e| EngineError::Engine(format!("engine answered invalid JSON: {e}")))
}

/// `GET /global/health` → the version, when healthy.
pub(crate) async fn health(transport: &dyn EngineTransport) -> Result<String, EngineError> {
    let v = json_of(transport, EngineRequest::get("/global/health"), None).await?;
    if v.get("healthy").and_then(Value::as_bool) != Some(true) {
        return Err(EngineError::Unavailable("the engine reports itself unhealthy".into()));
    }
    Ok(v.get("version").and_then(Value::as_str).unwrap_or("unknown").to_owned())
}

/// `GET /config` (boots the workspace instance).
pub(crate) async fn config(transport: &dyn EngineTransport) -> Result<Value, EngineError> {
    json_of(transport, EngineRequest::get("/config"), None).await
}

/// `POST /session`.
pub(crate) async fn create_session(
    transport: &dyn EngineTransport,
    title: Option<&str>,
) -> Result<Value, EngineError> {
    let body = match title {
        Some(t) => json!({ "title": t }),
        None => json!({}),
    };
    json_of(transport, EngineRequest::post("/session", body), None).await
}

/// `GET /session`.
pub(crate) async fn list_sessions(
    transport: &dyn EngineTransport,
) -> Result<Vec<Value>, EngineError> {
    match json_of(transport, EngineRequest::get("/session"), None).await? {
        Value::Array(items) => Ok(items),
        other => Err(EngineError::Engine(format!("GET /session answered {}", kind(&other)))),
    }
}

/// `GET /session/:id`.
pub(crate) async fn get_session(
    transport: &dyn EngineTransport,
    id: &str,
) -> Result<Value, EngineError> {
    let id = checked_session_id(id)?;
    json_of(transport, EngineRequest::get(format!("/session/{id}")), Some(id)).await
}

/// `DELETE /session/:id`.
pub(crate) async fn delete_session(
    transport: &dyn EngineTransport,
    id: &str,
) -> Result<(), EngineError> {
    let id = checked_session_id(id)?;
    json_of(transport, EngineRequest::delete(format!("/session/{id}")), Some(id)).await.map(drop)
}

/// `POST /session/:id/prompt_async` with one text part (answers 204 before the turn starts).
pub(crate) async fn prompt_async(
    transport: &dyn EngineTransport,
    id: &str,
    text: &str,
) -> Result<(), EngineError> {
    let id = checked_session_id(id)?;
    let body = json!({ "parts": [{ "type": "text", "text": text }] });
    let request = EngineRequest::post(format!("/session/{id}/prompt_async"), body);
    json_of(transport, request, Some(id)).await.map(drop)
}

/// `POST /session/:id/abort`.
pub(crate) async fn abort(transport: &dyn EngineTransport, id: &str) -> Result<(), EngineError> {
    let id = checked_session_id(id)?;
    let request =
        EngineRequest::new(HttpMethod::Post, format!("/session/{id}/abort")).with_body(json!({}));
    json_of(transport, request, Some(id)).await.map(drop)
}

/// `GET /session/status` → the sessions currently busy.
pub(crate) async fn busy_sessions(
    transport: &dyn EngineTransport,
) -> Result<HashSet<String>, EngineError> {
    let v = json_of(transport, EngineRequest::get("/session/status"), None).await?;
    let Value::Object(map) = v else { return Ok(HashSet::new()) };
    Ok(map
        .into_iter()
        .filter(|(_, s)| s.get("type").and_then(Value::as_str).is_some_and(|t| t != "idle"))
        .map(|(id, _)| id)
        .collect())
}

/// `GET /permission` → pending request ids per session.
pub(crate) async fn pending_permissions(
    transport: &dyn EngineTransport,
) -> Result<HashMap<String, HashSet<String>>, EngineError> {
    let v = json_of(transport, EngineRequest::get("/permission"), None).await?;
    let mut out: HashMap<String, HashSet<String>> = HashMap::new();
    for item in v.as_array().into_iter().flatten() {
        if let (Some(session), Some(id)) =
            (item.get("sessionID").and_then(Value::as_str), item.get("id").and_then(Value::as_str))
        {
            out.entry(session.to_owned()).or_default().insert(id.to_owned());
        }
    }
    Ok(out)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
