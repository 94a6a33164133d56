//! Agent Client Protocol updates in the transcript: message and thought chunks (text appended
//! to the message's block) and the facts of `tool_call` / `tool_call_update`.

use serde_json::Value;

use super::super::blocks::Block;
use super::Transcript;
use crate::event::RawEvent;
use crate::json::{as_text, at, str_at, string_at};
use crate::truncate::{BodyStore, Limits};

/// The text of an ACP `ContentBlock` (`{"type":"text","text":…}`); other kinds are named.
fn content_text(content: Option<&Value>) -> String {
    let Some(c) = content else { return String::new() };
    match str_at(c, &[&["type"]]) {
        Some("text") | None => str_at(c, &[&["text"]]).unwrap_or_default().to_owned(),
        Some(kind) => format!("[{kind}]"),
    }
}

impl Transcript {
    /// `agent_message_chunk` / `agent_thought_chunk`: appends to the message's block.
    pub(crate) fn acp_chunk(&mut self, ev: &RawEvent, reasoning: bool) {
        let text = content_text(ev.payload.get("content"));
        let mid = str_at(&ev.payload, &[&["messageId"]]);
        let scope = self.scope(ev);
        let i = self.text_block_for(reasoning, mid, ev.turn, scope);
        if let Some(b) = self.text_block(i) {
            b.text.push_str(&text);
        }
    }

    /// `user_message_chunk`: appends to the user block of the message (or the last user
    /// block when the agent gives no message id), else opens one.
    /// Returns whether it opened a new user block.
    pub(crate) fn acp_user_chunk(&mut self, ev: &RawEvent, bodies: &mut BodyStore) -> bool {
        let text = content_text(ev.payload.get("content"));
        let mid = string_at(&ev.payload, &[&["messageId"]]);
        let existing = match &mid {
            Some(m) => self.user_block_at(m),
            None => match self.blocks.last() {
                Some(Block::User(b)) if b.message_id.is_none() => Some(self.blocks.len() - 1),
                _ => None,
            },
        };
        if let Some(i) = existing
            && let Some(Block::User(b)) = self.block_mut(i)
        {
            let mut whole = b.text.as_ref().map(|t| t.text.clone()).unwrap_or_default();
            whole.push_str(&text);
            b.text = Some(bodies.preview(&whole, Limits::default()));
            return false;
        }
        let preview = Some(bodies.preview(&text, Limits::default()));
        self.push_user(ev, mid, preview);
        true
    }
}

/// What an ACP tool call or update says.
pub(super) struct AcpTool {
    pub(super) call_id: Option<String>,
    /// The tool call's `kind` (`execute`, `edit`, `read`, …).
    pub(super) kind: Option<String>,
    pub(super) title: Option<String>,
    pub(super) input: Option<String>,
    pub(super) output: Option<String>,
    pub(super) failed: bool,
}

/// Reads an ACP `tool_call` / `tool_call_update` object.
pub(super) fn acp_tool(p: &Value) -> AcpTool {
    // What the tool showed (its text content), else its raw output.
    let shown = || {
        let parts: Vec<String> = p
            .get("content")
            .and_then(Value::as_array)?
            .iter()
            .filter(|c| str_at(c, &[&["type"]]) == Some("content"))
            .map(|c| content_text(c.get("content")))
            .filter(|t| !t.is_empty())
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n"))
    };
    let output = shown().or_else(|| at(p, &["rawOutput"]).and_then(as_text));
    AcpTool {
        call_id: string_at(p, &[&["toolCallId"]]),
        kind: string_at(p, &[&["kind"]]),
        title: string_at(p, &[&["title"]]),
        input: at(p, &["rawInput"]).and_then(as_text),
        output,
        failed: str_at(p, &[&["status"]]) == Some("failed"),
    }
}
