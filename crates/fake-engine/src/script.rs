//! The upstream replay format: one JSON event per line (`type`, `payload`, `turn?`,
//! `delay_ms?`), `#` comment lines and blank lines skipped. A line of a configured script
//! (an agent turn) may add `when: "allowed" | "denied"`: after a permission request, it plays
//! only if the user's answer was that (so a demo does what the user chose).

use serde::Deserialize;
use serde_json::{Map, Value};

/// The 35 event types the engine defines (`events.py`). A script line with any other type
/// fails the run, as the engine does.
pub const EVENT_TYPES: [&str; 35] = [
    "turn_start",
    "user_message",
    "assistant_message",
    "assistant_delta",
    "assistant.message.start",
    "assistant.message.delta",
    "assistant.message.end",
    "assistant.reasoning.delta",
    "assistant.thought_summary.delta",
    "tool_call",
    "tool_result",
    "tool.result",
    "tool.exec.start",
    "tool.exec.stdout.delta",
    "tool.exec.stderr.delta",
    "tool.exec.end",
    "permission_request",
    "permission_response",
    "task_event",
    "ctree_node",
    "ctree_snapshot",
    "checkpoint_list",
    "checkpoint_restored",
    "skills_catalog",
    "skills_selection",
    "warning",
    "stream.gap",
    "conversation.compaction.start",
    "conversation.compaction.end",
    "reward_update",
    "limits_update",
    "completion",
    "log_link",
    "error",
    "run_finished",
];

/// Whether `kind` is one of the engine's event types.
pub fn is_known_type(kind: &str) -> bool {
    EVENT_TYPES.contains(&kind)
}

/// One line of a turn script.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ScriptLine {
    /// The event type, published as-is.
    #[serde(rename = "type")]
    pub kind: String,
    /// The payload, published as-is (the engine does not normalise replay payloads).
    #[serde(default)]
    pub payload: Map<String, Value>,
    /// The envelope `turn`, null when absent.
    #[serde(default)]
    pub turn: Option<i64>,
    /// How long to wait before publishing this event.
    #[serde(default)]
    pub delay_ms: u64,
    /// Plays only when the last permission request of the turn was answered so (absent:
    /// always).
    #[serde(default)]
    pub when: Option<When>,
}

/// What a script line's `when` asks of the last permission answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum When {
    /// Allowed (once or always), or not asked yet.
    Allowed,
    /// Denied.
    Denied,
}

impl When {
    /// Whether a line with this `when` plays after the answer `response` (`once`, `always`,
    /// `reject`; `None`: nothing answered yet in this turn).
    pub fn plays(self, response: Option<&str>) -> bool {
        let denied = response == Some("reject");
        match self {
            When::Allowed => !denied,
            When::Denied => denied,
        }
    }
}

/// A parsed turn script.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Script {
    /// The events in file order.
    pub lines: Vec<ScriptLine>,
}

/// Why a script could not be parsed.
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum ScriptError {
    /// A non-comment line is not a JSON object with a string `type`.
    #[error("script line {line}: {message}")]
    BadLine {
        /// 1-based line number.
        line: usize,
        /// What serde said.
        message: String,
    },
}

impl Script {
    /// Parses the replay format. Unknown event types are kept: the run fails on them when
    /// it reaches them, like the engine.
    pub fn parse(text: &str) -> Result<Self, ScriptError> {
        let mut lines = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let line: ScriptLine = serde_json::from_str(trimmed)
                .map_err(|e| ScriptError::BadLine { line: index + 1, message: e.to_string() })?;
            lines.push(line);
        }
        Ok(Self { lines })
    }

    /// Whether the script has an event of this type.
    pub fn has(&self, kind: &str) -> bool {
        self.lines.iter().any(|l| l.kind == kind)
    }
}
