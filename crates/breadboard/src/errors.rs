//! BreadBoard errors → adapter errors, saying who refused: the bridge's own checks
//! (`invalid_request`, "the bridge refused"), or the engine (its 404 on a session is
//! `session_not_found`, its 501 `not_supported`, its other refusals "the engine rejected").

use crate::client::BbError;
use bb_engine_client::transport::TransportError;

use bb_service::engine::EngineError;

/// What the engine's 409 `workspace not ready` means for a user of the bridge.
const NO_WORKSPACE: &str = "the engine has no workspace for this session (409 workspace not ready): start the bridge with --workspace DIR so new sessions get one, then create a new session";

/// Maps a BreadBoard error to the adapter's error for an operation on `session`.
pub(crate) fn engine_error(error: BbError, session: &str) -> EngineError {
    match error {
        BbError::InvalidId { .. } | BbError::Refused { .. } => EngineError::refused(
            "invalid_request",
            format!("the bridge refused the request: {error}"),
        ),
        BbError::Unauthorized { status } => EngineError::Auth { status },
        BbError::NotFound { detail }
            if !session.is_empty()
                && !matches!(
                    detail.as_str(),
                    "file not found" | "path not found" | "artifact not found"
                ) =>
        {
            EngineError::SessionNotFound(session.to_owned())
        }
        BbError::Conflict { detail } if detail.contains("workspace not ready") => {
            EngineError::InvalidRequest(NO_WORKSPACE.to_owned())
        }
        BbError::NotFound { detail } | BbError::Conflict { detail } => {
            EngineError::InvalidRequest(detail)
        }
        BbError::InvalidRequest { detail, .. } => EngineError::InvalidRequest(detail),
        BbError::NotImplemented { .. } => {
            EngineError::NotSupported { method: "bb.command", engine: "breadboard" }
        }
        BbError::Transport(TransportError::Timeout { after }) => EngineError::Timeout(after),
        BbError::Transport(TransportError::Connect(e)) => EngineError::Unavailable(e),
        other => EngineError::Engine(other.to_string()),
    }
}
