//! The typed error of every hub call, with stable wire codes.

/// Why an ACP call failed. Each variant has a stable wire code ([`AcpError::code`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AcpError {
    /// No connection with this id (`acp_connection_not_found`).
    #[error("no ACP connection {0}; call acp_connect first")]
    NotFound(String),
    /// The connection is closed: disconnected, or the agent exited (`acp_connection_closed`).
    #[error("the ACP connection {id} is closed ({reason}); call acp_connect again")]
    Closed {
        /// The connection id.
        id: String,
        /// Why it closed (`disconnected`, `the agent exited with exit code 1`, …).
        reason: String,
    },
    /// The request is malformed or names something not allowed (`invalid_params`).
    #[error("{0}")]
    InvalidParams(String),
    /// A path (the agent's cwd) is outside the workspace and the workspace is not trusted
    /// (`workspace_untrusted`).
    #[error("{0} is outside the workspace; trust the workspace to use it")]
    Untrusted(String),
    /// The agent could not be started (`acp_spawn_failed`).
    #[error("cannot start the agent {program}: {reason}")]
    Spawn {
        /// The command.
        program: String,
        /// The OS error.
        reason: String,
    },
    /// The agent answered a request with an error (`acp_agent_error`).
    #[error("the agent answered {method} with an error: {message}")]
    Agent {
        /// The ACP method.
        method: &'static str,
        /// The agent's error message (and code).
        message: String,
    },
    /// No permission request with this id is awaiting an answer (`permission_not_pending`).
    #[error("no permission request {0} is waiting for an answer (answered, cancelled or unknown)")]
    PermissionNotPending(String),
    /// The agent offers no such capability (`not_supported`).
    #[error("the agent does not offer {0}")]
    NotSupported(&'static str),
    /// The agent answered `initialize` with a protocol version this bridge does not speak
    /// (`acp_protocol_unsupported`); the text says which.
    #[error(
        "{0}; this bridge speaks ACP protocol version 1: update the agent or use one that speaks version 1"
    )]
    Protocol(String),
}

impl AcpError {
    /// The stable wire code.
    pub fn code(&self) -> &'static str {
        match self {
            AcpError::NotFound(_) => "acp_connection_not_found",
            AcpError::Closed { .. } => "acp_connection_closed",
            AcpError::InvalidParams(_) => "invalid_params",
            AcpError::Untrusted(_) => "workspace_untrusted",
            AcpError::Spawn { .. } => "acp_spawn_failed",
            AcpError::Agent { .. } => "acp_agent_error",
            AcpError::PermissionNotPending(_) => "permission_not_pending",
            AcpError::NotSupported(_) => "not_supported",
            AcpError::Protocol(_) => "acp_protocol_unsupported",
        }
    }
}
