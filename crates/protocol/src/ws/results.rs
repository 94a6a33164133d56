//! Typed results of the WebSocket methods.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What `dialog.open` returns: `null` when cancelled, a path, or several paths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum DialogSelection {
    /// One path.
    One(String),
    /// Several paths (`multiple: true`).
    Many(Vec<String>),
}

/// Result of `dialog.open`.
pub type DialogOpenResult = Option<DialogSelection>;

/// Lifecycle of an ACP connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AcpConnectionStatus {
    /// Process started.
    Created,
    /// `initialize` answered.
    Initialized,
    /// Ready for sessions.
    Ready,
    /// Closed.
    Closed,
}

/// The agent's self-description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentInfo {
    /// Agent name.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Agent version.
    pub version: String,
}

/// Result of `acp_connect`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpConnectionInfo {
    /// Connection id.
    pub id: String,
    /// Connection state.
    pub status: AcpConnectionStatus,
    /// ACP protocol version, as a string.
    pub protocol_version: String,
    /// The agent.
    pub agent_info: AgentInfo,
}

/// Why a prompt turn ended (ACP `StopReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The turn ended normally.
    EndTurn,
    /// The token limit was reached.
    MaxTokens,
    /// The request limit for the turn was reached.
    MaxTurnRequests,
    /// The agent refused.
    Refusal,
    /// The client cancelled.
    Cancelled,
}

/// Result of `acp_session_prompt` (ACP `PromptResponse`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpPromptResult {
    /// Why the turn ended.
    pub stop_reason: StopReason,
}

/// Result of `acp_session_list`: the agent's `SessionInfo` objects (`sessionId`, `cwd`,
/// `title?`, `updatedAt?`), as it sent them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpSessionList {
    /// The sessions.
    pub sessions: Vec<serde_json::Value>,
}

/// Result of `acp_session_resume` and `acp_session_set_config_option`: the session's
/// config options (ACP `SessionConfigOption` objects) and, for agents still using them, its
/// modes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpSessionSetup {
    /// The session's config options, when the agent has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_options: Option<Vec<serde_json::Value>>,
    /// ACP `SessionModeState`, when the agent sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<serde_json::Value>,
}
