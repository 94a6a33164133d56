//! Kilo client failures as engine errors with stable codes. An engine error body never goes
//! out raw: its message is read when it is Kilo's JSON shape, redacted and capped.

use crate::client::KiloError;
use bb_engine_client::transport::TransportError;
use bb_normalize::redact::redact_log_line;
use serde_json::Value;

use bb_service::engine::EngineError;

/// Longest engine message passed on, in characters.
const MESSAGE_CAP: usize = 300;

/// What an engine error body says, safe to show: Kilo's `data.message` / `message` when the
/// body is its JSON error shape (else the error's name, else nothing), redacted, one line,
/// capped.
pub(crate) fn engine_message(status: u16, body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let said = parsed.as_ref().and_then(|v| {
        v.pointer("/data/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("name"))
            .or_else(|| v.get("_tag"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    match said {
        Some(text) => format!("HTTP {status}: {}", redact_log_line(&text, MESSAGE_CAP)),
        None => format!("HTTP {status}"),
    }
}

/// Maps a Kilo client failure; `session` names the session a 404 is about.
pub(crate) fn map(err: KiloError, session: Option<&str>) -> EngineError {
    match err {
        KiloError::Transport(TransportError::Auth { status }) => EngineError::Auth { status },
        KiloError::Transport(TransportError::Http { status: 404, body }) => match session {
            Some(id) => EngineError::SessionNotFound(id.to_owned()),
            None => EngineError::Engine(engine_message(404, &body)),
        },
        KiloError::Transport(TransportError::Http { status: 400, body }) => {
            EngineError::InvalidRequest(engine_message(400, &body))
        }
        KiloError::Transport(TransportError::Http { status, body }) => {
            EngineError::Engine(engine_message(status, &body))
        }
        KiloError::Transport(TransportError::Connect(why)) => {
            EngineError::Unavailable(redact_log_line(&why, MESSAGE_CAP))
        }
        KiloError::Transport(TransportError::Timeout { after }) => EngineError::Timeout(after),
        KiloError::Transport(TransportError::TooLarge { limit }) => {
            EngineError::Engine(format!("the engine's answer is larger than {limit} bytes"))
        }
        KiloError::InvalidId { id, what: "session" } => EngineError::SessionNotFound(id),
        KiloError::InvalidId { id, what } => EngineError::refused(
            "invalid_params",
            format!("{what} id {:?} is not a Kilo id", redact_log_line(&id, 80)),
        ),
        KiloError::Decode { route, .. } => {
            EngineError::Engine(format!("the engine's answer to {route} has an unexpected shape"))
        }
        other => EngineError::Engine(redact_log_line(&other.to_string(), MESSAGE_CAP)),
    }
}

/// A Kilo session id: `ses` then `[A-Za-z0-9_-]` (Kilo answers 500, not 404, for other ids,
/// and they must never reach a request path).
pub(crate) fn checked_session_id(id: &str) -> Result<&str, EngineError> {
    let ok = id.starts_with("ses")
        && id.len() <= 128
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok { Ok(id) } else { Err(EngineError::SessionNotFound(id.to_owned())) }
}
