//! Typed params of the WebSocket methods: platform routing (`dialog.open`, `shell.openPath`)
//! and the Agent Client Protocol bridge (`acp_*`, modelled on ACP's `session/*` requests).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A file-type filter of a file dialog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DialogFilter {
    /// Label shown to the user.
    pub name: String,
    /// Extensions without the dot.
    pub extensions: Vec<String>,
}

/// `dialog.open`: a desktop open-file dialog.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DialogOpenParams {
    /// Pick directories instead of files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<bool>,
    /// Allow several selections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiple: Option<bool>,
    /// Dialog title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Initial path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_path: Option<String>,
    /// File-type filters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<Vec<DialogFilter>>,
}

/// `shell.openPath`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenPathParams {
    /// Path or URL to open with the system handler.
    pub path: String,
}

/// `acp_connect`: start an ACP agent process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpConnectParams {
    /// Agent executable.
    pub command: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// Extra environment variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    /// Working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// `acp_disconnect`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpDisconnectParams {
    /// The connection id returned by `acp_connect`.
    pub id: String,
}

/// `acp_session_new` (ACP `session/new`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpSessionNewParams {
    /// The connection.
    pub connection_id: String,
    /// Session working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// MCP servers to attach (ACP `McpServer` objects, passed through).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<Vec<Value>>,
}

/// `acp_session_load` (ACP `session/load`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpSessionLoadParams {
    /// The connection.
    pub connection_id: String,
    /// The session to resume.
    pub session_id: String,
    /// Session working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// MCP servers to attach (ACP `McpServer` objects, passed through).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<Vec<Value>>,
}

/// A text or binary resource embedded in a prompt (ACP `EmbeddedResourceResource`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum EmbeddedResource {
    /// Text contents.
    Text {
        /// Resource URI.
        uri: String,
        /// The text.
        text: String,
        /// MIME type.
        #[serde(default, rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    /// Binary contents.
    Blob {
        /// Resource URI.
        uri: String,
        /// Base64 data.
        blob: String,
        /// MIME type.
        #[serde(default, rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
}

/// One block of a prompt (ACP `ContentBlock`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// ACP annotations, passed through.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
    },
    /// An image.
    Image {
        /// Base64 data.
        data: String,
        /// MIME type.
        mime_type: String,
        /// Source URI.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        uri: Option<String>,
        /// ACP annotations, passed through.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
    },
    /// Audio.
    Audio {
        /// Base64 data.
        data: String,
        /// MIME type.
        mime_type: String,
        /// ACP annotations, passed through.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
    },
    /// A link to a resource the agent can read.
    ResourceLink {
        /// Resource URI.
        uri: String,
        /// Resource name.
        name: String,
        /// MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Display title.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// Description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Size in bytes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
        /// ACP annotations, passed through.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
    },
    /// A resource embedded in the prompt.
    Resource {
        /// The contents.
        resource: EmbeddedResource,
        /// ACP annotations, passed through.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
    },
}

/// `acp_session_prompt` (ACP `session/prompt`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpSessionPromptParams {
    /// The connection.
    pub connection_id: String,
    /// The session.
    pub session_id: String,
    /// The user's message as content blocks.
    pub prompt: Vec<ContentBlock>,
}

/// `acp_session_cancel` (ACP `session/cancel`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpSessionCancelParams {
    /// The connection.
    pub connection_id: String,
    /// The session.
    pub session_id: String,
}

/// The id of the agent's `session/request_permission` JSON-RPC request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum AcpRequestId {
    /// A string id.
    Text(String),
    /// An integer id.
    Number(i64),
}

/// The user's answer to a permission request (ACP `RequestPermissionOutcome`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PermissionOutcome {
    /// The prompt turn was cancelled before the user answered.
    Cancelled,
    /// The user picked one of the offered options.
    Selected {
        /// The option picked.
        #[serde(rename = "optionId")]
        option_id: String,
    },
}

/// `acp_permission_reply`: answers an agent's `session/request_permission`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpPermissionReplyParams {
    /// The connection.
    pub connection_id: String,
    /// The session, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The agent's request id, from the `acp-permission-request` event.
    pub request_id: AcpRequestId,
    /// The answer.
    pub outcome: PermissionOutcome,
}

/// `acp_session_list` (ACP `session/list`, every page).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpSessionListParams {
    /// The connection.
    pub connection_id: String,
    /// Only sessions of this working directory (default: the connection's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// `acp_session_close` / `acp_session_delete` (ACP `session/close`, `session/delete`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpSessionParams {
    /// The connection.
    pub connection_id: String,
    /// The session.
    pub session_id: String,
}

/// `acp_session_set_config_option` (ACP `session/set_config_option`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpSetConfigOptionParams {
    /// The connection.
    pub connection_id: String,
    /// The session.
    pub session_id: String,
    /// The option (`id` of one of the session's `configOptions`).
    pub config_id: String,
    /// The value: one of a select option's values, or a boolean.
    pub value: Value,
}

/// The user's answer to an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ElicitationActionKind {
    /// The user answered (a form's `content`; a URL elicitation: consent to open it).
    Accept,
    /// The user declined.
    Decline,
    /// The user dismissed it.
    Cancel,
}

/// `acp_elicitation_reply`: answers an agent's `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcpElicitationReplyParams {
    /// The connection.
    pub connection_id: String,
    /// The agent's request id, from the `acp-elicitation-request` event.
    pub request_id: AcpRequestId,
    /// The answer.
    pub action: ElicitationActionKind,
    /// With `accept` of a form: the values, by field name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<serde_json::Map<String, Value>>,
}
