//! The transcript lane's block types, as the webview renders them.

use std::num::NonZeroU64;

use serde::{Serialize, Serializer};

use crate::truncate::Preview;

/// Stable id of a block within the session view: its number, written `b1`, `b2`, … (kept as
/// the number, so a block holds no string for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlockId(pub u64);

impl std::fmt::Display for BlockId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "b{}", self.0)
    }
}

impl Serialize for BlockId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// One block of the transcript, in event order. Each variant is boxed: a session holds
/// thousands of blocks, and the vector of them then costs two words a slot, whatever the
/// largest variant's size.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Block {
    /// A user message; immutable once its text is known.
    User(Box<UserBlock>),
    /// An assistant message, streamed or whole.
    Assistant(Box<TextBlock>),
    /// Reasoning / thought-summary text of an assistant message.
    Reasoning(Box<TextBlock>),
    /// A tool invocation and its result.
    Tool(Box<ToolBlock>),
    /// An actionable approval (permission or question) card.
    Approval(Box<ApprovalBlock>),
    /// A high-visibility error, warning, gap or info notice.
    Notice(Box<NoticeBlock>),
}

/// A user message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UserBlock {
    /// Stable block id within the session view (`b1`, `b2`, …).
    pub block_id: BlockId,
    /// Id of the event that created the block.
    pub event_id: Option<String>,
    /// The engine's message id, when given.
    pub message_id: Option<String>,
    /// The turn, when given.
    pub turn: Option<i64>,
    /// The text, as a preview (BreadBoard appends its whole system prompt to the user text).
    pub text: Option<Preview>,
}

/// Streaming state of an assistant or reasoning block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamStatus {
    /// Text may still grow.
    Streaming,
    /// The message ended.
    Complete,
    /// The message ended with an error.
    Error,
}

/// An assistant or reasoning text block, keyed by message id + turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TextBlock {
    /// Stable block id within the session view.
    pub block_id: BlockId,
    /// The engine's message id, when given.
    pub message_id: Option<String>,
    /// The turn, when given.
    pub turn: Option<i64>,
    /// The text so far (all parts of the message, in part order).
    pub text: String,
    /// Streaming state.
    pub status: StreamStatus,
    /// The error of a failed message (redacted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Byte spans of `text`, in order: the number the transcript gave a Kilo part id, `None`
    /// for text written without one.
    #[serde(skip)]
    pub(crate) parts: Vec<(Option<NonZeroU64>, usize)>,
}

impl TextBlock {
    /// Ends the stream with `status`. The first time the block leaves `Streaming`, its text
    /// and spans give back the spare capacity their growth left (a long session keeps
    /// thousands of finished blocks); text arriving later grows them again.
    pub(crate) fn settle(&mut self, status: StreamStatus) {
        if self.status == StreamStatus::Streaming {
            self.text.shrink_to_fit();
            self.parts.shrink_to_fit();
        }
        self.status = status;
    }
}

/// Tool status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ToolStatus {
    /// Opened by its call; no result yet.
    Running,
    /// Closed by a successful result.
    Completed,
    /// Closed by a failed result.
    Error,
}

/// A tool invocation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolBlock {
    /// Stable block id within the session view.
    pub block_id: BlockId,
    /// The engine's call id, when given.
    pub call_id: Option<String>,
    /// The tool name.
    pub tool: Option<String>,
    /// The turn, when given.
    pub turn: Option<i64>,
    /// Running, completed or error.
    pub status: ToolStatus,
    /// A title for the block (engine display title).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A one-line summary of the result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The tool input (arguments), previewed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<Preview>,
    /// The tool output, previewed; the full body is behind `output.bodyRef`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Preview>,
    /// The error text of a failed call (redacted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The engine's artifact reference for the full output (`display.detail_artifact`,
    /// `artifact_ref`), for an open action (boxed: most calls have none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Box<serde_json::Value>>,
    /// Streamed output of a running call, before it is previewed.
    #[serde(skip)]
    pub(crate) live: String,
}

/// What an approval card asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ApprovalKind {
    /// A tool permission.
    Permission,
    /// A question to the user.
    Question,
}

/// State of an approval card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum ApprovalState {
    /// Waiting for the user.
    Pending,
    /// Answered.
    Resolved {
        /// The decision (`once`, `always`, `reject`, `answered`, `rejected`, …).
        decision: String,
    },
}

/// An approval card.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalBlock {
    /// Stable block id within the session view.
    pub block_id: BlockId,
    /// The request id the response must name.
    pub request_id: Option<String>,
    /// Permission or question.
    pub approval: ApprovalKind,
    /// The tool or permission category.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// What is asked, one line (redacted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The patterns the permission would cover.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
    /// The call this permission gates, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Pending or resolved.
    pub state: ApprovalState,
}

/// Severity of a notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum NoticeLevel {
    /// The run failed.
    Error,
    /// The stream has a continuity gap.
    Gap,
    /// A warning.
    Warning,
    /// Informational (checkpoint restored).
    Info,
}

/// A high-visibility notice card.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NoticeBlock {
    /// Stable block id within the session view.
    pub block_id: BlockId,
    /// Id of the event behind the notice.
    pub event_id: Option<String>,
    /// Severity.
    pub level: NoticeLevel,
    /// The message (redacted, one line, capped).
    pub message: String,
}
