//! Typed errors of the BreadBoard client, decoded from the engine's error envelope.

use serde_json::Value;

use super::wire::ErrorEnvelope;
use bb_engine_client::transport::TransportError;

/// Why a BreadBoard call failed. [`BbError::InvalidId`] and [`BbError::Refused`] are the
/// client's own checks (no request was sent); every other variant is the engine's answer or
/// the transport's failure.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BbError {
    /// The session id cannot be a path segment (e.g. `../etc`): refused before any request.
    #[error("invalid session id {id:?}: not sent to the engine (ids are single path segments)")]
    InvalidId {
        /// The refused id (at most 128 characters of it).
        id: String,
    },
    /// A request the client refuses before sending it (e.g. blank content, which the
    /// engine would answer with a bare 500).
    #[error("{detail} (not sent to the engine)")]
    Refused {
        /// What is wrong.
        detail: String,
    },
    /// 401: the token is missing or wrong. Retrying will not help.
    #[error("the BreadBoard engine refused the token (HTTP {status})")]
    Unauthorized {
        /// 401 or 403.
        status: u16,
    },
    /// 404 `not_found` (unknown session, path or artifact).
    #[error("not found: {detail}")]
    NotFound {
        /// The engine's detail (`session not found`, `file not found`, …).
        detail: String,
    },
    /// 409 `resume_window_exceeded`: the resume id is no longer in the engine's ring.
    #[error("resume window exceeded: {detail}")]
    ResumeWindowExceeded {
        /// The engine's detail.
        detail: String,
    },
    /// Another 409 (`session is closed`, `no permission request is active`).
    #[error("conflict: {detail}")]
    Conflict {
        /// The engine's detail.
        detail: String,
    },
    /// 400/422 `invalid_request` (bad path, unsupported command, validation).
    #[error("invalid request (HTTP {status}): {detail}")]
    InvalidRequest {
        /// 400 or 422.
        status: u16,
        /// The engine's detail, as text.
        detail: String,
    },
    /// 501: the engine does not implement this command.
    #[error("not implemented by the engine: {detail}")]
    NotImplemented {
        /// The engine's detail.
        detail: String,
    },
    /// 5xx, or an answer that is not the envelope.
    #[error("engine error (HTTP {status}): {detail}")]
    Engine {
        /// The status code.
        status: u16,
        /// The envelope detail or the start of the body.
        detail: String,
    },
    /// The request could not be made or the answer not read.
    #[error(transparent)]
    Transport(TransportError),
    /// The event stream failed every allowed reconnect attempt; open a new stream to retry.
    #[error("event stream lost after {attempts} attempts: {last}")]
    StreamLost {
        /// Attempts made.
        attempts: u32,
        /// The last failure.
        last: String,
    },
    /// A 2xx answer whose body is not what the route documents.
    #[error("unexpected answer from {route}: {message}")]
    Decode {
        /// The route.
        route: String,
        /// What did not fit.
        message: String,
    },
}

impl BbError {
    /// Whether the same call may succeed later without a change.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Transport(e) => e.is_retryable(),
            Self::Engine { status, .. } => *status >= 500 && *status != 501,
            _ => false,
        }
    }
}

fn detail_text(detail: &Value) -> String {
    match detail {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

impl From<TransportError> for BbError {
    fn from(error: TransportError) -> Self {
        match error {
            TransportError::Auth { status } => Self::Unauthorized { status },
            TransportError::Http { status, body } => from_status(status, &body),
            other => Self::Transport(other),
        }
    }
}

/// Decodes a non-2xx answer from its status and body.
pub(crate) fn from_status(status: u16, body: &str) -> BbError {
    let Ok(envelope) = serde_json::from_str::<ErrorEnvelope>(body) else {
        // Not the envelope: a framework answer such as `{"detail":"Not Found"}`, or text.
        let detail = serde_json::from_str::<Value>(body)
            .ok()
            .and_then(|v| v.get("detail").map(detail_text))
            .unwrap_or_else(|| body.chars().take(512).collect());
        return match status {
            401 | 403 => BbError::Unauthorized { status },
            404 => BbError::NotFound { detail },
            _ => BbError::Engine { status, detail },
        };
    };
    let detail = detail_text(&envelope.detail);
    match (status, envelope.error.as_str()) {
        (_, "unauthorized") | (401 | 403, _) => BbError::Unauthorized { status },
        (_, "resume_window_exceeded") => BbError::ResumeWindowExceeded { detail },
        (404, _) | (_, "not_found") => BbError::NotFound { detail },
        (409, _) => BbError::Conflict { detail },
        (501, _) => BbError::NotImplemented { detail },
        (400..=499, _) => BbError::InvalidRequest { status, detail },
        _ => BbError::Engine { status, detail },
    }
}
