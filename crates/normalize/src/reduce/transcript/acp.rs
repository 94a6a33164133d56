//! Agent Client Protocol updates in the transcript: message and thought chunks (text appended
//! to the message's block), the facts of `tool_call` / `tool_call_update`, notices and
//! context compactions as notice cards.

use serde_json::Value;

use super::super::blocks::{Block, NoticeBlock, NoticeLevel};
use super::{Transcript, one_line};
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
            && let Some(Block::User(b)) = self.blocks.get(i)
        {
            let mut whole =
                self.text_at(b.text.as_ref().map(|t| t.text)).unwrap_or_default().to_owned();
            whole.push_str(&text);
            self.set_user_text(i, bodies.preview(&whole, Limits::default()));
            return false;
        }
        let preview = Some(bodies.preview(&text, Limits::default()));
        self.push_user(ev, mid.as_deref(), preview);
        true
    }
}

impl Transcript {
    /// A notice-class ACP event as a card: an agent's `notice` (`title`: `description`, its
    /// `severity`) or the bridge's own (`message`, else `reason`). Returns its level.
    pub(crate) fn acp_notice(&mut self, ev: &RawEvent) -> NoticeLevel {
        let level = crate::reduce::acp::notice_level(ev);
        let p = &ev.payload;
        let message = match (str_at(p, &[&["title"]]), str_at(p, &[&["description"]])) {
            (Some(t), Some(d)) if ev.kind == "notice" => format!("{t}: {d}"),
            (Some(t), _) if ev.kind == "notice" => t.to_owned(),
            _ => str_at(p, &[&["message"], &["reason"], &["error", "message"]])
                .unwrap_or(&*ev.kind)
                .to_owned(),
        };
        self.notice(ev, level, &message);
        level
    }

    /// `compaction_update` / `compaction_summary_chunk`: one notice card per compaction id,
    /// updated in place (status, error, the summary so far).
    pub(crate) fn acp_compaction(&mut self, ev: &RawEvent) {
        let p = &ev.payload;
        let Some(id) = string_at(p, &[&["compactionId"]]) else { return };
        let mut c = self.idx.compactions.get(&id).cloned().unwrap_or_default();
        if ev.kind == "compaction_update" {
            if let Some(s) = str_at(p, &[&["status"]]) {
                c.status = Some(s.to_owned());
            }
            match p.get("summary") {
                Some(Value::Array(blocks)) => {
                    c.summary = blocks.iter().map(|b| content_text(Some(b))).collect();
                }
                Some(Value::Null) => c.summary.clear(),
                _ => {}
            }
            match p.get("error") {
                Some(Value::String(e)) => c.error = Some(e.clone()),
                Some(Value::Null) => c.error = None,
                _ => {}
            }
        } else {
            c.summary.push_str(&content_text(p.get("content")));
        }
        let status = c.status.as_deref().unwrap_or("in_progress");
        let level = if status == "failed" { NoticeLevel::Warning } else { NoticeLevel::Info };
        let mut message = format!("context compaction {}", status.replace('_', " "));
        if let Some(e) = &c.error {
            message.push_str(": ");
            message.push_str(e);
        }
        if !c.summary.is_empty() {
            message.push_str(" — ");
            message.push_str(&c.summary);
        }
        let message = one_line(&message);
        match c.block {
            Some(i) => {
                if let Some(Block::Notice(b)) = self.block_mut(i) {
                    b.level = level;
                    b.message = message;
                }
            }
            None => {
                let event_id = ev.id.as_deref().map(str::to_owned);
                let prompt_id = self.idx.prompt.clone();
                c.block = Some(self.push(|block_id| {
                    Block::Notice(Box::new(NoticeBlock {
                        block_id,
                        event_id,
                        level,
                        message,
                        prompt_id,
                    }))
                }));
            }
        }
        self.idx.compactions.insert(id, c);
    }
}

/// A context compaction's card and what it said so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Compaction {
    block: Option<usize>,
    status: Option<String>,
    summary: String,
    error: Option<String>,
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
