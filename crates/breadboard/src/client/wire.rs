//! BreadBoard wire types: the event envelope and the REST bodies the sidebar uses. Tolerant
//! of unknown fields; an event's payload is kept as the engine's text where it is written as
//! its tree would be, so nothing is lost downstream.

use std::borrow::Cow;

use super::kind::event_type;
use super::scan::{self, Head};
use bb_normalize::breadboard::{TEXT_FIELDS, TextMemo, reads_text};
use bb_payload::{LooseI64, LooseStr, LooseU64, Present};
use bb_protocol::v1::{EventId, Payload};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// One engine event, as received on `GET /v1/sessions/{id}/events`.
#[derive(Debug, Clone, PartialEq)]
pub struct BbEvent {
    /// The SSE `id:` (the `seq` as text, or the UUID of an un-sequenced event).
    pub sse_id: EventId,
    /// The per-session sequence number; `None` for the connect-time snapshot.
    pub seq: Option<u64>,
    /// The event type (e.g. `assistant_delta`, `tool_call`, `stream.gap`): a static string
    /// for the types the bridge knows, an owned copy for any other.
    pub kind: Cow<'static, str>,
    /// The agent turn, when the engine set one.
    pub turn: Option<i64>,
    /// Epoch milliseconds.
    pub timestamp_ms: Option<u64>,
    /// The payload object (an empty object when the engine sent none, or something else),
    /// as its text when it is written as its tree would be ([`BbEvent::parse`]).
    pub payload: Payload,
}

/// Why an SSE `data:` line is not a BreadBoard event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EventDecodeError {
    /// Not JSON.
    #[error("event data is not JSON: {0}")]
    NotJson(String),
    /// JSON, but not an object with a string `type`.
    #[error("event data has no string `type`")]
    NoType,
}

/// The envelope's fields the bridge reads, each read leniently with `bb-payload`'s loose
/// field types (a field of another type reads as absent, as `Value::as_u64`/`as_i64`/`as_str`
/// read it, and as the engine's optional fields do), strings borrowed from the event's text
/// unless escaped: no tree is built. Other fields (the envelope's own UUID and its
/// `session_id` among them: a stream is one session's, and the SSE id names the event) are
/// skipped unread. `P`: the payload, as its text ([`BbEvent::parse`]) or its tree (when its
/// text is not kept).
#[derive(Deserialize)]
struct Envelope<'a, P> {
    #[serde(default)]
    seq: LooseU64,
    #[serde(rename = "type", default, borrow)]
    kind: LooseStr<'a>,
    #[serde(default)]
    turn: LooseI64,
    /// Present (even as `null`) or not: a present `timestamp_ms` is the one read.
    #[serde(default)]
    timestamp_ms: Present<LooseU64>,
    #[serde(default)]
    timestamp: LooseU64,
    #[serde(default)]
    payload: P,
}

impl BbEvent {
    /// Parses one SSE event (`id:` and `data:`) into an envelope. Only the envelope's own
    /// fields are kept, read without a tree; a known `type` is held as a static string
    /// (`client/kind.rs`). An object payload is kept as its text, copied once, when it is
    /// written as serde_json writes its value (or can be rewritten so: whitespace, string
    /// escapes, number forms; [`Payload::as_written`]): the webview gets the bytes its tree
    /// would give, and its readers read the fields they need from the text. Any other
    /// payload is read as a tree, as the whole envelope was before.
    ///
    /// The common envelope is read in one pass over its bytes (`client/scan.rs`); what that
    /// pass does not decide is read with serde, to the same result.
    pub fn parse(sse_id: &str, data: &str) -> Result<Self, EventDecodeError> {
        let Some(scanned) = scan::envelope(data) else {
            return Self::parse_serde(sse_id, data);
        };
        let payload = match scanned.payload {
            None => Payload::default(),
            Some((payload, found)) => {
                with_memo(payload, found, scanned.head.kind.is_some_and(reads_text))
            }
        };
        Self::from_head(sse_id, scanned.head, payload)
    }

    /// [`BbEvent::parse`] with serde alone: the envelope read field by field, its payload
    /// as text when [`Payload::as_written`] keeps it, else the envelope read again with its
    /// payload as a tree.
    pub(crate) fn parse_serde(sse_id: &str, data: &str) -> Result<Self, EventDecodeError> {
        if let Ok(envelope) = serde_json::from_str::<Envelope<'_, Option<&RawValue>>>(data) {
            let payload = match envelope.payload {
                None => Some(Payload::default()),
                Some(raw) if raw.get().starts_with('{') => {
                    as_written(raw.get(), envelope.kind.get().is_some_and(reads_text))
                }
                // Anything else reads as an empty object, unless too deep to read: below.
                Some(_) => None,
            };
            if let Some(payload) = payload {
                return Self::from_head(sse_id, envelope.head(), payload);
            }
        }
        let mut envelope: Envelope<'_, Value> = serde_json::from_str(data).map_err(|e| {
            if serde_json::from_str::<IgnoredAny>(data).is_ok() {
                // JSON, but not an object (or one with a field twice).
                return EventDecodeError::NoType;
            }
            EventDecodeError::NotJson(e.to_string())
        })?;
        let payload = match std::mem::take(&mut envelope.payload) {
            Value::Object(map) => Payload::from(map),
            _ => Payload::default(),
        };
        Self::from_head(sse_id, envelope.head(), payload)
    }

    fn from_head(sse_id: &str, head: Head<'_>, payload: Payload) -> Result<Self, EventDecodeError> {
        let Some(kind) = head.kind else {
            return Err(EventDecodeError::NoType);
        };
        Ok(Self {
            sse_id: EventId::from(sse_id),
            seq: head.seq,
            kind: event_type(kind),
            turn: head.turn,
            timestamp_ms: head.timestamp_ms,
            payload,
        })
    }
}

#[cfg(test)]
impl BbEvent {
    /// Whether [`BbEvent::parse`] decides `data` in its one pass, without serde's read.
    pub(crate) fn read_in_one_pass(data: &str) -> bool {
        scan::envelope(data).is_some()
    }

    /// Whether [`BbEvent::parse`] reads `data` as an envelope in the engine's layout, each
    /// key compared where that layout puts it.
    pub(crate) fn read_in_layout(data: &str) -> bool {
        scan::in_layout(data).is_some()
    }
}

impl<P> Envelope<'_, P> {
    /// The fields kept, as the one-pass scan gives them.
    fn head(&self) -> Head<'_> {
        Head {
            seq: self.seq.0,
            kind: self.kind.get(),
            turn: self.turn.0,
            timestamp_ms: self.timestamp_ms.0.unwrap_or(self.timestamp).0,
        }
    }
}

/// An object payload's `text` kept as [`Payload::as_written`] keeps it; with `memo`, the
/// fields the batcher and the reducers read of an assistant or reasoning event
/// ([`bb_normalize::breadboard::TEXT_FIELDS`]) are found in the same scan and kept on it
/// as their memo, so that neither reads the text again.
fn as_written(text: &str, memo: bool) -> Option<Payload> {
    if !memo {
        return Payload::as_written(text);
    }
    let (payload, found) = Payload::as_written_fields(text, TEXT_FIELDS)?;
    Some(with_memo(payload, found, true))
}

/// `payload`, with the memo of its [`TEXT_FIELDS`] as its scan `found` them when `memo`
/// (an assistant or reasoning event's) and none is written with an escape. Inlined: the
/// payload (112 bytes) is then built in place rather than moved in and out of a call.
#[inline(always)]
fn with_memo(mut payload: Payload, found: [bb_payload::Field; 4], memo: bool) -> Payload {
    if memo && let Some(memo) = TextMemo::new(found) {
        payload.set_memo(memo);
    }
    payload
}

/// `GET /health`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Health {
    /// `ok` when healthy.
    pub status: String,
    /// `1.0` at the engine's HEAD.
    #[serde(default)]
    pub protocol_version: Option<String>,
    /// Engine version.
    #[serde(default)]
    pub engine_version: Option<String>,
    /// When the engine process started (a change means it restarted and lost its sessions).
    #[serde(default)]
    pub started_at: Option<String>,
    /// The same instant as epoch seconds, with a fraction.
    #[serde(default)]
    pub started_at_unix: Option<f64>,
    /// The engine's process id.
    #[serde(default)]
    pub pid: Option<u64>,
}

/// `POST /v1/sessions` body.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CreateSession {
    /// The agent config (required by the engine).
    pub config_path: String,
    /// The first input; empty for none.
    pub task: String,
    /// Workspace directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// `prompt` makes edits, shell and web fetches ask for permission.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    /// Dotted config overrides (e.g. the model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overrides: Option<Map<String, Value>>,
    /// Free-form session metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// `POST /v1/sessions` answer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CreatedSession {
    /// The new session's UUID.
    pub session_id: String,
    /// `starting`.
    #[serde(default)]
    pub status: String,
    /// ISO time.
    #[serde(default)]
    pub created_at: Option<String>,
}

/// `SessionSummary` of `GET /v1/sessions[/{id}]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SessionSummary {
    /// Session UUID.
    pub session_id: String,
    /// `starting`, `running`, `completed`, `failed` or `stopped`.
    pub status: String,
    /// ISO time.
    #[serde(default)]
    pub created_at: Option<String>,
    /// ISO time of the last event.
    #[serde(default)]
    pub last_activity_at: Option<String>,
    /// Current model.
    #[serde(default)]
    pub model: Option<String>,
    /// Current mode.
    #[serde(default)]
    pub mode: Option<String>,
    /// The last turn's completion summary.
    #[serde(default)]
    pub completion_summary: Option<Value>,
    /// Free-form metadata.
    #[serde(default)]
    pub metadata: Option<Value>,
}

impl SessionSummary {
    /// Whether the session's run loop has ended (its stream will not resume).
    pub fn is_finished(&self) -> bool {
        matches!(self.status.as_str(), "completed" | "failed" | "stopped")
    }
}

/// One entry of `GET /v1/sessions/{id}/files`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FileEntry {
    /// Workspace-relative path with `/`.
    pub path: String,
    /// `file` or `directory`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Size in bytes (files).
    #[serde(default)]
    pub size: Option<u64>,
}

/// How much of a file to read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SnippetOptions {
    /// Lines from the start (snippet mode default 200).
    pub head_lines: Option<u32>,
    /// Lines from the end (snippet mode default 80).
    pub tail_lines: Option<u32>,
    /// Byte cap (snippet mode default 80000).
    pub max_bytes: Option<u64>,
}

/// `GET /v1/sessions/{id}/files/content`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FileContent {
    /// Workspace-relative path.
    pub path: String,
    /// The (possibly truncated) text.
    pub content: String,
    /// Whether something was left out.
    #[serde(default)]
    pub truncated: bool,
    /// Size of the whole file.
    #[serde(default)]
    pub total_bytes: Option<u64>,
}

/// One uploaded attachment.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Attachment {
    /// `att-…`, passed in `input.attachments`.
    pub id: String,
    /// Stored file name.
    #[serde(default)]
    pub filename: Option<String>,
    /// MIME type.
    #[serde(default)]
    pub mime: Option<String>,
    /// Size in bytes.
    #[serde(default)]
    pub size_bytes: Option<u64>,
}

/// A 202 command answer: `{"status":"accepted","detail":{...}}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CommandAccepted {
    /// `accepted`.
    #[serde(default)]
    pub status: String,
    /// Command-specific detail.
    #[serde(default)]
    pub detail: Value,
}

/// The engine's error envelope `{"error", "detail", "path"}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct ErrorEnvelope {
    pub(crate) error: String,
    #[serde(default)]
    pub(crate) detail: Value,
}
