//! The WebSocket event names. Their payloads are JSON objects whose fields the transport spec
//! leaves open, so they are carried as objects.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

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
    /// ACP `session/update` notification (reserved).
    #[serde(rename = "acp-session-update")]
    AcpSessionUpdate(WsPayload),
    /// ACP session state change (reserved).
    #[serde(rename = "acp-session-state")]
    AcpSessionState(WsPayload),
    /// ACP `session/request_permission` (reserved).
    #[serde(rename = "acp-permission-request")]
    AcpPermissionRequest(WsPayload),
    /// ACP terminal output (reserved).
    #[serde(rename = "acp-terminal-output")]
    AcpTerminalOutput(WsPayload),
}

impl WsEventKind {
    /// Every event name.
    pub const NAMES: [&'static str; 6] = [
        "session-data",
        "scan-progress",
        "acp-session-update",
        "acp-session-state",
        "acp-permission-request",
        "acp-terminal-output",
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
        }
    }

    /// The event with this name and payload; `None` for an unknown name.
    pub fn from_parts(name: &str, payload: WsPayload) -> Option<Self> {
        Some(match name {
            "session-data" => WsEventKind::SessionData(payload),
            "scan-progress" => WsEventKind::ScanProgress(payload),
            "acp-session-update" => WsEventKind::AcpSessionUpdate(payload),
            "acp-session-state" => WsEventKind::AcpSessionState(payload),
            "acp-permission-request" => WsEventKind::AcpPermissionRequest(payload),
            "acp-terminal-output" => WsEventKind::AcpTerminalOutput(payload),
            _ => return None,
        })
    }

    /// The payload.
    pub fn payload(&self) -> &WsPayload {
        match self {
            WsEventKind::SessionData(p)
            | WsEventKind::ScanProgress(p)
            | WsEventKind::AcpSessionUpdate(p)
            | WsEventKind::AcpSessionState(p)
            | WsEventKind::AcpPermissionRequest(p)
            | WsEventKind::AcpTerminalOutput(p) => p,
        }
    }
}
