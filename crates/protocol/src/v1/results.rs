//! Typed results of the v1 `bb.*` methods (the `result` of a successful `res`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which engine the bridge drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    /// The Kilo CLI server.
    Kilo,
    /// The BreadBoard engine.
    Breadboard,
    /// An Agent Client Protocol agent.
    Acp,
}

/// The engine's lifecycle state as the bridge sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EngineStatus {
    /// Being spawned or health-checked.
    Starting,
    /// Answering requests.
    Ready,
    /// Lost; the bridge is reconnecting or restarting it.
    Reconnecting,
    /// Failed and not being restarted.
    Failed,
    /// Shut down.
    Stopped,
}

/// The engine part of `bb.init`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EngineInfo {
    /// Engine kind.
    pub kind: EngineKind,
    /// Engine state.
    pub status: EngineStatus,
    /// Engine version, when it reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// What the bridge and engine support, so the webview can hide what does not work.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// Several sessions can be listed, selected and deleted.
    pub sessions: bool,
    /// Permission requests are surfaced and can be answered.
    pub permissions: bool,
    /// `bb.command` is supported.
    pub commands: bool,
    /// `bb.listFiles` and `bb.readFileSnippet` are supported.
    pub files: bool,
    /// `bb.openDiff` is supported.
    pub diffs: bool,
    /// `bb.downloadArtifact` is supported.
    pub artifacts: bool,
    /// Event streams resume with `Last-Event-ID` after a reconnect.
    pub resume: bool,
}

/// Result of `bb.init`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitResult {
    /// The envelope version the bridge speaks (always 1).
    pub protocol_version: u32,
    /// The engine.
    pub engine: EngineInfo,
    /// What is supported.
    pub capabilities: Capabilities,
    /// The workspace folders the bridge serves, the default (`bb.createSession` without
    /// `folder`) first; absent when the bridge was given no folder list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folders: Option<Vec<String>>,
}

/// One session, as listed (`bb.listSessions`, `bb/state`) or created (`bb.createSession`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    /// Engine session id.
    pub session_id: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Engine status string (open set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Last update, milliseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<f64>,
    /// Prompts the engine holds queued behind the running turn (`bb/state` only; absent
    /// when none).
    #[serde(
        default,
        deserialize_with = "crate::count::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub queued_prompts: Option<u64>,
    /// The session that started this one (a sub-agent's parent), when the engine says so;
    /// a page may nest it there. A sub-agent's prompt no tab of its own shows is shown on
    /// the tab of its nearest ancestor that one shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Permission requests and questions of this session awaiting an answer (`bb/state`
    /// only; absent when none): names the session that waits.
    #[serde(
        default,
        deserialize_with = "crate::count::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub pending_permission_count: Option<u64>,
    /// The workspace folder the session works in (a bridge serving several folders).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
}

/// Result of `bb.listSessions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListSessionsResult {
    /// Sessions, most recently updated first.
    pub sessions: Vec<SessionSummary>,
}

/// Result of the methods that act on one session and return nothing else
/// (`bb.selectSession`, `bb.deleteSession`, `bb.stop`, `bb.approvePermission`,
/// `bb.openDiff`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionAck {
    /// The session acted on.
    pub session_id: String,
}

/// Result of `bb.sendMessage`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageResult {
    /// The session.
    pub session_id: String,
    /// Id the engine gave the message, when it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
}

/// Result of `bb.command`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandResult {
    /// The session.
    pub session_id: String,
    /// Command output, engine-defined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
}

/// Result of `bb.history`: older turns, oldest first, as the updates that rebuild them
/// (applied before the ones the webview holds: `UpdatedView::prepend`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryResult {
    /// The session.
    pub session_id: String,
    /// The turns' updates, oldest first.
    #[schemars(with = "Vec<super::updates::WebviewUpdate<'static>>")]
    pub updates: super::update_list::Updates,
    /// What is older still, if anything: the next page's `before`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earlier: Option<super::topics::Earlier>,
}

/// What a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// Regular file.
    File,
    /// Directory.
    Dir,
    /// Symbolic link (not followed).
    Symlink,
    /// Anything else.
    Other,
}

/// One entry of `bb.listFiles`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileEntry {
    /// File name.
    pub name: String,
    /// Path relative to the session workspace.
    pub path: String,
    /// Entry kind.
    pub kind: FileKind,
    /// Size in bytes, for files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// Result of `bb.listFiles`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListFilesResult {
    /// The directory listed.
    pub path: String,
    /// Its entries.
    pub entries: Vec<FileEntry>,
}

/// Result of `bb.readFileSnippet`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileSnippetResult {
    /// The file read.
    pub path: String,
    /// The snippet (UTF-8, lossy).
    pub content: String,
    /// Whether limits cut the file.
    pub truncated: bool,
    /// The file's full size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_bytes: Option<u64>,
}

/// Result of `bb.downloadArtifact`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DownloadArtifactResult {
    /// The artifact.
    pub artifact_path: String,
    /// Where the host saved it, if the user chose a place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved_path: Option<String>,
}

/// Result of `bb.visibility`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VisibilityResult {
    /// The visibility now in effect.
    pub visible: bool,
}
