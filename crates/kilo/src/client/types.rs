//! Kilo CLI server wire types: what the REST routes return and accept. Unknown fields are
//! tolerated and kept in `extra` where a consumer may want them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `GET /global/health`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Health {
    /// Whether the server reports itself healthy.
    pub healthy: bool,
    /// Server version, e.g. `7.7.9`.
    #[serde(default)]
    pub version: Option<String>,
}

/// Creation and update times of a session (ms since the Unix epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub struct SessionTime {
    /// Creation time.
    #[serde(default)]
    pub created: Option<u64>,
    /// Last update time.
    #[serde(default)]
    pub updated: Option<u64>,
}

/// A session (`POST /session`, `GET /session`, `GET /session/:id`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Session {
    /// `ses_…`
    pub id: String,
    /// Title (`New session - <iso>` until renamed).
    #[serde(default)]
    pub title: String,
    /// The project directory the session belongs to.
    #[serde(default)]
    pub directory: Option<String>,
    /// Parent session, for sub-agent sessions.
    #[serde(default, rename = "parentID")]
    pub parent_id: Option<String>,
    /// Times.
    #[serde(default)]
    pub time: SessionTime,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Body of `POST /session`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct CreateSession {
    /// An initial title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Parent session.
    #[serde(rename = "parentID", skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
}

/// One part of a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
#[non_exhaustive]
pub enum PromptPart {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
}

/// Model selection for a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelRef {
    /// Provider id, e.g. `mock`.
    #[serde(rename = "providerID")]
    pub provider_id: String,
    /// Model id, e.g. `mock-model`.
    #[serde(rename = "modelID")]
    pub model_id: String,
}

/// Body of `POST /session/:id/prompt_async`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptRequest {
    /// The prompt's parts.
    pub parts: Vec<PromptPart>,
    /// A model other than the configured default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
    /// An agent other than the default (`code`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

impl PromptRequest {
    /// A prompt of one text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self { parts: vec![PromptPart::Text { text: text.into() }], model: None, agent: None }
    }
}

/// A message's `info` (user or assistant).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MessageInfo {
    /// `msg_…`
    pub id: String,
    /// The session.
    #[serde(rename = "sessionID")]
    pub session_id: String,
    /// `user` or `assistant`.
    pub role: String,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One entry of `GET /session/:id/message`: a message and its parts (raw, classified by
/// the normalizer).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MessageWithParts {
    /// The message.
    pub info: MessageInfo,
    /// Its parts, as sent.
    #[serde(default)]
    pub parts: Vec<Value>,
}

/// A session's run status (`GET /session/status` values).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SessionStatus {
    /// `busy`, `idle`, `retry`, …
    #[serde(rename = "type")]
    pub kind: String,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SessionStatus {
    /// An idle status (what an absent entry in `GET /session/status` means).
    pub fn idle() -> Self {
        Self { kind: "idle".into(), extra: Map::new() }
    }
}

/// `GET /session/status`: only busy/retrying sessions are listed.
pub type StatusMap = BTreeMap<String, SessionStatus>;

/// A pending permission request (`GET /permission`, `permission.asked`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PermissionRequest {
    /// `per_…`
    pub id: String,
    /// The session asking.
    #[serde(rename = "sessionID")]
    pub session_id: String,
    /// `bash`, `edit`, …
    #[serde(default)]
    pub permission: String,
    /// What the tool wants to run or touch.
    #[serde(default)]
    pub patterns: Vec<String>,
    /// Tool-specific details (bash: command, description; edit: filepath, diff).
    #[serde(default)]
    pub metadata: Value,
    /// Patterns an `always` reply would allow from now on.
    #[serde(default)]
    pub always: Vec<String>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A reply to a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionReply {
    /// Allow this once.
    Once,
    /// Allow this and matching requests from now on.
    Always,
    /// Refuse.
    Reject,
}
