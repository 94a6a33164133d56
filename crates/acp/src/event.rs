//! What a connection reports on its own: session updates, session and connection state,
//! permission requests and their settlement, elicitations, terminal output and the agent's
//! file accesses. Each becomes one `acp-*` WebSocket event.

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
    /// The agent asks the user for input (`elicitation/create`): a form or a URL.
    Elicitation {
        /// The session, when the elicitation is session-scoped.
        session_id: Option<String>,
        /// The agent's JSON-RPC request id; answer with it.
        request_id: AcpRequestId,
        /// The request as the agent sent it (`mode`, `message`, `requestedSchema` or `url`).
        request: Value,
    },
    /// An elicitation was answered (`accept`/`decline`/`cancel`), or the agent reported a URL
    /// elicitation complete (`elicitation/complete`: `request_id` is `None`).
    ElicitationSettled {
        /// The session, when known.
        session_id: Option<String>,
        /// The agent's request id, when it was an answer.
        request_id: Option<AcpRequestId>,
        /// `{"action": …}` sent, or `{"elicitationId": …, "completed": true}`.
        outcome: Value,
    },
    /// A chunk of a terminal's output (one line, with its newline).
    TerminalOutput {
        /// The session.
        session_id: String,
        /// The terminal.
        terminal_id: String,
        /// The text.
        output: String,
    },
    /// A terminal's command exited (or was killed).
    TerminalExited {
        /// The session.
        session_id: String,
        /// The terminal.
        terminal_id: String,
        /// ACP `TerminalExitStatus` (`exitCode`, `signal`).
        exit: Value,
    },
    /// The agent read or wrote a file through the bridge, or was refused.
    FileAccess {
        /// The session.
        session_id: String,
        /// `read` or `write`.
        op: &'static str,
        /// The path as the agent gave it.
        path: String,
        /// `None` when done; why it was refused otherwise.
        refused: Option<String>,
    },
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
            AcpEventKind::Elicitation { session_id, request_id, request } => {
                if let Some(s) = session_id {
                    p.insert("sessionId".to_owned(), s.clone().into());
                }
                p.insert("requestId".to_owned(), id_value(request_id));
                p.insert("elicitation".to_owned(), request.clone());
                WsEventKind::AcpElicitationRequest(p)
            }
            AcpEventKind::ElicitationSettled { session_id, request_id, outcome } => {
                if let Some(s) = session_id {
                    p.insert("sessionId".to_owned(), s.clone().into());
                }
                p.insert("state".to_owned(), "elicitation_settled".into());
                if let Some(r) = request_id {
                    p.insert("requestId".to_owned(), id_value(r));
                }
                p.insert("outcome".to_owned(), outcome.clone());
                WsEventKind::AcpSessionState(p)
            }
            AcpEventKind::TerminalOutput { session_id, terminal_id, output } => {
                terminal(p, session_id, terminal_id, ("output", output.clone().into()))
            }
            AcpEventKind::TerminalExited { session_id, terminal_id, exit } => {
                terminal(p, session_id, terminal_id, ("exitStatus", exit.clone()))
            }
            AcpEventKind::FileAccess { session_id, op, path, refused } => {
                p.insert("sessionId".to_owned(), session_id.clone().into());
                p.insert("state".to_owned(), "file_access".into());
                p.insert("op".to_owned(), (*op).into());
                p.insert("path".to_owned(), path.clone().into());
                if let Some(r) = refused {
                    p.insert("refused".to_owned(), r.clone().into());
                }
                WsEventKind::AcpSessionState(p)
            }
        }
    }
}

/// An `acp-terminal-output` event: the terminal and one more field.
fn terminal(
    mut p: WsPayload,
    session_id: &str,
    terminal_id: &str,
    (key, value): (&str, Value),
) -> WsEventKind {
    p.insert("sessionId".to_owned(), session_id.into());
    p.insert("terminalId".to_owned(), terminal_id.into());
    p.insert(key.to_owned(), value);
    WsEventKind::AcpTerminalOutput(p)
}

/// The request id as JSON (number or string, as the agent sent it).
pub(crate) fn id_value(id: &AcpRequestId) -> Value {
    match id {
        AcpRequestId::Text(s) => json!(s),
        AcpRequestId::Number(n) => json!(n),
    }
}
