//! The WebSocket event names. The spec's own events carry JSON objects whose fields it
//! leaves open, so they are carried as objects; the v1 topics (`bb/connection`, `bb/state`,
//! `bb/events`) are events here too, with their exact v1 payloads.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::v1::{ConnectionPayload, EventsPayload, StatePayload, V1Topic};

/// An event payload: any JSON object.
pub type WsPayload = Map<String, Value>;

/// A WebSocket event: name plus payload.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "event", content = "payload")]
pub enum WsEventKind {
    /// Session data for the webview.
    #[serde(rename = "session-data")]
    SessionData(WsPayload),
    /// Progress of a workspace scan.
    #[serde(rename = "scan-progress")]
    ScanProgress(WsPayload),
    /// ACP `session/update` notification: `{connectionId, sessionId, update}`.
    #[serde(rename = "acp-session-update")]
    AcpSessionUpdate(WsPayload),
    /// ACP session or connection state change: `{connectionId, sessionId?, state, …}`.
    #[serde(rename = "acp-session-state")]
    AcpSessionState(WsPayload),
    /// ACP `session/request_permission`: `{connectionId, sessionId, requestId, toolCall,
    /// options}`.
    #[serde(rename = "acp-permission-request")]
    AcpPermissionRequest(WsPayload),
    /// ACP terminal output or exit: `{connectionId, sessionId, terminalId, output |
    /// exitStatus}`.
    #[serde(rename = "acp-terminal-output")]
    AcpTerminalOutput(WsPayload),
    /// ACP `elicitation/create`: `{connectionId, sessionId?, requestId, elicitation}`.
    #[serde(rename = "acp-elicitation-request")]
    AcpElicitationRequest(WsPayload),
    /// The v1 `bb/connection` topic.
    #[serde(rename = "bb/connection")]
    BbConnection(ConnectionPayload),
    /// The v1 `bb/state` topic.
    #[serde(rename = "bb/state")]
    BbState(Arc<StatePayload>),
    /// The v1 `bb/events` topic.
    #[serde(rename = "bb/events")]
    BbEvents(EventsPayload),
}

impl From<V1Topic> for WsEventKind {
    fn from(topic: V1Topic) -> Self {
        match topic {
            V1Topic::Connection(p) => WsEventKind::BbConnection(p),
            V1Topic::State(p) => WsEventKind::BbState(p),
            V1Topic::Events(p) => WsEventKind::BbEvents(p),
        }
    }
}

impl WsEventKind {
    /// Every event name.
    pub const NAMES: [&'static str; 10] = [
        "session-data",
        "scan-progress",
        "acp-session-update",
        "acp-session-state",
        "acp-permission-request",
        "acp-terminal-output",
        "acp-elicitation-request",
        "bb/connection",
        "bb/state",
        "bb/events",
    ];

    /// The event name on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            WsEventKind::SessionData(_) => "session-data",
            WsEventKind::ScanProgress(_) => "scan-progress",
            WsEventKind::AcpSessionUpdate(_) => "acp-session-update",
            WsEventKind::AcpSessionState(_) => "acp-session-state",
            WsEventKind::AcpPermissionRequest(_) => "acp-permission-request",
            WsEventKind::AcpTerminalOutput(_) => "acp-terminal-output",
            WsEventKind::AcpElicitationRequest(_) => "acp-elicitation-request",
            WsEventKind::BbConnection(_) => "bb/connection",
            WsEventKind::BbState(_) => "bb/state",
            WsEventKind::BbEvents(_) => "bb/events",
        }
    }

    /// The event with this name and payload; `None` for an unknown name, an error when a
    /// v1 topic's payload does not match it.
    pub fn from_parts(name: &str, payload: WsPayload) -> Option<Result<Self, serde_json::Error>> {
        let typed = || Value::Object(payload.clone());
        Some(Ok(match name {
            "session-data" => WsEventKind::SessionData(payload),
            "scan-progress" => WsEventKind::ScanProgress(payload),
            "acp-session-update" => WsEventKind::AcpSessionUpdate(payload),
            "acp-session-state" => WsEventKind::AcpSessionState(payload),
            "acp-permission-request" => WsEventKind::AcpPermissionRequest(payload),
            "acp-terminal-output" => WsEventKind::AcpTerminalOutput(payload),
            "acp-elicitation-request" => WsEventKind::AcpElicitationRequest(payload),
            "bb/connection" | "bb/state" | "bb/events" => {
                return V1Topic::parse(name, typed()).map(|r| r.map(WsEventKind::from));
            }
            _ => return None,
        }))
    }
}
