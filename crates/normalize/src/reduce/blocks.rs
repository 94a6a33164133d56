//! The transcript lane's block types, as the webview renders them.

use std::num::NonZeroU64;

use bb_protocol::v1::{AnsweredBy, AskQuestion, ToolView};
use serde::{Serialize, Serializer};

use super::arena::TextRef;
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
/// largest variant's size. The ids of user and text blocks live in the transcript's arena
/// (read them with [`Transcript::text_at`](super::Transcript::text_at)); the transcript serializes
/// its blocks.
#[derive(Debug, Clone, PartialEq)]
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
#[derive(Debug, Clone, PartialEq)]
pub struct UserBlock {
    /// Stable block id within the session view (`b1`, `b2`, …).
    pub block_id: BlockId,
    /// Id of the event that created the block (in the transcript's arena).
    pub event_id: Option<TextRef>,
    /// The engine's message id, when given (in the transcript's arena).
    pub message_id: Option<TextRef>,
    /// The turn, when given.
    pub turn: Option<i64>,
    /// The text, as a preview (BreadBoard appends its whole system prompt to the user text).
    pub text: Option<UserText>,
    /// The webview's `messageId` of the `bb.sendMessage` that sent it, when known (in the
    /// transcript's arena).
    pub prompt_id: Option<TextRef>,
}

/// A user message's text: a [`Preview`] whose text lives in the transcript's arena (read it
/// with [`Transcript::text_at`](super::Transcript::text_at)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserText {
    /// The text to show: the whole message, or head + marker + tail.
    pub text: TextRef,
    /// Whether anything was cut.
    pub truncated: bool,
    /// Size of the whole message in bytes.
    pub total_bytes: usize,
    /// Lines of the whole message.
    pub total_lines: usize,
    /// Reference of the whole message in the view's body store, when truncated.
    pub body_ref: Option<Box<str>>,
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
    /// The user stopped the turn while the message streamed.
    Stopped,
}

/// An assistant or reasoning text block, keyed by message id + turn.
#[derive(Debug, Clone, PartialEq)]
pub struct TextBlock {
    /// Stable block id within the session view.
    pub block_id: BlockId,
    /// The engine's message id, when given (in the transcript's arena).
    pub message_id: Option<TextRef>,
    /// The turn, when given.
    pub turn: Option<i64>,
    /// The text so far (all parts of the message, in part order).
    pub text: String,
    /// Streaming state.
    pub status: StreamStatus,
    /// The error of a failed message (redacted).
    pub error: Option<String>,
    /// The webview's `messageId` of the prompt this message answers, when known (in the
    /// transcript's arena).
    pub prompt_id: Option<TextRef>,
    /// Byte spans of `text`, in order: the number the transcript gave a Kilo part id, `None`
    /// for text written without one.
    pub(crate) parts: Vec<(Option<NonZeroU64>, usize)>,
    /// The exchange (prompt and reply) the block's key belongs to, for engines whose message
    /// ids repeat across replies (0 where ids are unique).
    pub(crate) scope: u64,
    /// How much of the text the updates sent so far carried.
    pub(crate) sent: SentText,
}

/// What the updates sent so far said of a text block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SentText {
    /// Bytes of `text` sent.
    pub(crate) bytes: usize,
    /// The same prefix's length in UTF-16 code units.
    pub(crate) utf16: u64,
    /// The text was rewritten (not only appended to) since.
    pub(crate) rewritten: bool,
    /// The state sent last (`None`: nothing sent yet).
    pub(crate) status: Option<StreamStatus>,
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

    /// Replaces the whole text.
    pub(crate) fn rewrite(&mut self, text: &str) {
        if self.text != text {
            text.clone_into(&mut self.text);
            self.sent.rewritten = true;
        }
        self.parts.clear();
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
    /// What the tool did in readable form (a command, a listing, diffs), when recognized
    /// (boxed: most calls have none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view: Option<Box<ToolView<'static>>>,
    /// The exit code of a command, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// The webview's `messageId` of the prompt whose turn made the call, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
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
    /// The id of the event that showed it (an answer names it: a later request may reuse
    /// the request id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    /// The session that asks, when it is not the view's own: a sub-agent's prompt shown on
    /// an ancestor's tab (the answer names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Permission or question.
    pub approval: ApprovalKind,
    /// The tool or permission category.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// What is asked, one line (redacted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// What is asked, in words (`Run echo hi`, `Edit Makefile`).
    pub prompt: String,
    /// The patterns the permission would cover.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
    /// The call this permission gates, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// A question card's questions (with the answers offered).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<AskQuestion<'static>>,
    /// Pending or resolved.
    pub state: ApprovalState,
    /// Which webview's answer the engine took, when the bridge said (`bb.prompt.closed`);
    /// the engine's own later report of the same answer keeps it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<AnsweredBy>,
    /// The webview's `messageId` of the prompt whose turn asks, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
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
    /// The user stopped the turn.
    Stopped,
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
    /// The webview's `messageId` of the prompt whose turn it is about, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
}
