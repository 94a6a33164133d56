//! Typed params of every v1 `bb.*` method (camelCase on the wire; unknown fields ignored).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Params of `bb.listSessions`: none. `null`, absent and `{}` are all accepted; fields are
/// ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NoParams {}

/// `bb.init`: every field optional (`null`, absent and `{}` are all accepted).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitParams {
    /// The last `seq` the webview saw per tab (a recreated webview sends what it kept): the
    /// bridge replays exactly what each tab missed, or sends a declared resync.
    #[serde(
        default,
        deserialize_with = "crate::count::map_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub last_seen: Option<BTreeMap<String, u64>>,
    /// The workspace is trusted for write/exec actions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_trusted: Option<bool>,
    /// What `bb/events` messages carry for this webview: `events` (the default), `updates`
    /// (the view-model updates of the host's reducers, `events` left empty) or `both`. A
    /// later `bb.init` without it keeps the choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive: Option<super::updates::Receive>,
}

/// `bb.visibility`: the webview was shown or hidden.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VisibilityParams {
    /// Whether the webview is visible now.
    pub visible: bool,
}

/// `bb.createSession`: every field optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateSessionParams {
    /// Engine config file for the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_path: Option<String>,
    /// Initial task text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Model identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Engine permission mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    /// The webview tab the new session is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tab_id: Option<String>,
    /// The workspace folder the session works in: one of `bb.init`'s `folders` (default: the
    /// first). Its files, paths and engine project are that folder's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
}

/// `bb.selectSession`, `bb.deleteSession`, `bb.stop`: a session id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionParams {
    /// The session.
    pub session_id: String,
    /// `bb.selectSession`: the webview tab the session is bound to (ignored by the other
    /// methods).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tab_id: Option<String>,
}

/// `bb.history`: the turns of a session's transcript before a cursor, for a webview that
/// was sent its recent turns only (a resync with `earlier`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryParams {
    /// The session.
    pub session_id: String,
    /// The `before` of the resync's (or the previous page's) `earlier`.
    #[serde(deserialize_with = "crate::count::required")]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub before: u64,
    /// Most turns to return (default 50, at most 500); a page also stops at 512 KiB of
    /// updates.
    #[serde(
        default,
        deserialize_with = "crate::count::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub limit: Option<u64>,
}

/// `bb.sendMessage`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageParams {
    /// The session.
    pub session_id: String,
    /// The user's message.
    pub text: String,
    /// Attachments uploaded earlier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachment_ids: Option<Vec<String>>,
    /// Webview-chosen id of this prompt; the events of the reply carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
}

/// `bb.command`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandParams {
    /// The session.
    pub session_id: String,
    /// Command name.
    pub command: String,
    /// Command arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Map<String, Value>>,
}

/// A permission decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PermissionDecision {
    /// Allow this request only.
    AllowOnce,
    /// Deny this request.
    Deny,
    /// Allow and remember a rule.
    AllowRule,
}

/// `bb.approvePermission`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovePermissionParams {
    /// The session.
    pub session_id: String,
    /// The pending permission request.
    pub request_id: String,
    /// The decision.
    pub decision: PermissionDecision,
    /// Rule change to record with `allow_rule`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_update: Option<Map<String, Value>>,
    /// The `id` of the event that showed the card answered (its `permission_request`; a
    /// `permissionRequest` update's `eventId`). An engine may give a later request the id of
    /// an earlier one (BreadBoard numbers them per run): naming the card, an answer to the
    /// earlier request is refused (`permission_not_pending`) rather than taken for the later
    /// one. Without it the answer goes to the open request of that id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
}

/// `bb.listFiles`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListFilesParams {
    /// The session.
    pub session_id: String,
    /// Directory, relative to the session workspace.
    pub path: String,
}

/// `bb.readFileSnippet`. Counts are non-negative integers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadFileSnippetParams {
    /// The session.
    pub session_id: String,
    /// File, relative to the session workspace.
    pub path: String,
    /// Most bytes to return.
    #[serde(
        default,
        deserialize_with = "crate::count::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub max_bytes: Option<u64>,
    /// Lines to keep from the head.
    #[serde(
        default,
        deserialize_with = "crate::count::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub head_lines: Option<u64>,
    /// Lines to keep from the tail.
    #[serde(
        default,
        deserialize_with = "crate::count::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub tail_lines: Option<u64>,
}

/// `bb.openDiff`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenDiffParams {
    /// The session.
    pub session_id: String,
    /// File to diff.
    pub file_path: String,
    /// Left side (defaults to the run's base).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_ref: Option<String>,
    /// Right side (defaults to the working tree).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_ref: Option<String>,
}

/// `bb.downloadArtifact`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DownloadArtifactParams {
    /// The session.
    pub session_id: String,
    /// Artifact path within the run.
    pub artifact_path: String,
}
