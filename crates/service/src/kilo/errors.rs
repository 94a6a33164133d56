//! Kilo client failures as engine errors with stable codes.

use bb_engine_client::kilo::KiloError;
use bb_engine_client::transport::TransportError;

use crate::engine::EngineError;

/// Maps a Kilo client failure; `session` names the session a 404 is about.
pub(crate) fn map(err: KiloError, session: Option<&str>) -> EngineError {
    match err {
        KiloError::Transport(TransportError::Auth { status }) => EngineError::Auth { status },
        KiloError::Transport(TransportError::Http { status: 404, body }) => match session {
            Some(id) => EngineError::SessionNotFound(id.to_owned()),
            None => EngineError::Engine(format!("not found: {body}")),
        },
        KiloError::Transport(TransportError::Http { status: 400, body }) => {
            EngineError::InvalidRequest(body)
        }
        KiloError::Transport(TransportError::Connect(why)) => EngineError::Unavailable(why),
        KiloError::Transport(TransportError::Timeout) => EngineError::Timeout,
        KiloError::InvalidId { id, .. } => EngineError::SessionNotFound(id),
        other => EngineError::Engine(other.to_string()),
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
