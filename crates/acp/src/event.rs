//! What a connection reports on its own: session updates, session and connection state,
//! permission requests and their settlement. Each becomes one `acp-*` WebSocket event.

use bb_protocol::ws::{AcpRequestId, WsEventKind, WsPayload};
use serde_json::{Map, Value, json};

/// One event of one ACP connection.
#[derive(Debug, Clone, PartialEq)]
pub struct AcpEvent {
    /// The connection that owns the agent.
    pub connection_id: String,
    /// What happened.
    pub kind: AcpEventKind,
}

/// The kinds of [`AcpEvent`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AcpEventKind {
    /// A `session/update` notification, its `update` object untouched (every kind, also
    /// those this bridge does not know).
    SessionUpdate {
        /// The session.
        session_id: String,
        /// The `update` object (`sessionUpdate` names its kind).
        update: Value,
    },
    /// A session or the connection changed state: `running` / `idle` (with `stopReason` or
    /// `error`) per session; `closed` (with `reason`) for the whole connection.
    State {
        /// The session; `None` for the connection itself.
        session_id: Option<String>,
        /// `running`, `idle`, `closed`.
        state: &'static str,
        /// `stopReason`, `error`, `reason`.
        detail: Map<String, Value>,
    },
    /// The agent asks the user (`session/request_permission`).
    PermissionRequest {
        /// The session.
        session_id: String,
        /// The agent's JSON-RPC request id; answer with it.
        request_id: AcpRequestId,
        /// The tool call the request is about.
        tool_call: Value,
        /// The options (`optionId`, `name`, `kind`).
        options: Value,
    },
    /// A permission request was answered (by the user, or `cancelled` by a cancel).
    PermissionSettled {
        /// The session.
        session_id: String,
        /// The agent's request id.
        request_id: AcpRequestId,
        /// The ACP outcome sent (`{"outcome":"selected","optionId":…}` or `cancelled`).
        outcome: Value,
    },
}

impl AcpEventKind {
    /// The session it concerns, if any.
    pub fn session_id(&self) -> Option<&str> {
        match self {
            Self::SessionUpdate { session_id, .. }
            | Self::PermissionRequest { session_id, .. }
            | Self::PermissionSettled { session_id, .. } => Some(session_id),
            Self::State { session_id, .. } => session_id.as_deref(),
        }
    }
}

impl AcpEvent {
    /// The WebSocket event: `acp-session-update`, `acp-session-state` or
    /// `acp-permission-request`, each payload carrying `connectionId`.
    pub fn to_ws(&self) -> WsEventKind {
        let mut p = WsPayload::new();
        p.insert("connectionId".to_owned(), self.connection_id.clone().into());
        match &self.kind {
            AcpEventKind::SessionUpdate { session_id, update } => {
                p.insert("sessionId".to_owned(), session_id.clone().into());
                p.insert("update".to_owned(), update.clone());
                WsEventKind::AcpSessionUpdate(p)
            }
            AcpEventKind::State { session_id, state, detail } => {
                if let Some(s) = session_id {
                    p.insert("sessionId".to_owned(), s.clone().into());
                }
                p.insert("state".to_owned(), (*state).into());
                p.extend(detail.clone());
                WsEventKind::AcpSessionState(p)
            }
            AcpEventKind::PermissionRequest { session_id, request_id, tool_call, options } => {
                p.insert("sessionId".to_owned(), session_id.clone().into());
                p.insert("requestId".to_owned(), id_value(request_id));
                p.insert("toolCall".to_owned(), tool_call.clone());
                p.insert("options".to_owned(), options.clone());
                WsEventKind::AcpPermissionRequest(p)
            }
            AcpEventKind::PermissionSettled { session_id, request_id, outcome } => {
                p.insert("sessionId".to_owned(), session_id.clone().into());
                p.insert("state".to_owned(), "permission_settled".into());
                p.insert("requestId".to_owned(), id_value(request_id));
                p.insert("outcome".to_owned(), outcome.clone());
                WsEventKind::AcpSessionState(p)
            }
        }
    }
}

/// The request id as JSON (number or string, as the agent sent it).
pub(crate) fn id_value(id: &AcpRequestId) -> Value {
    match id {
        AcpRequestId::Text(s) => json!(s),
        AcpRequestId::Number(n) => json!(n),
    }
}
