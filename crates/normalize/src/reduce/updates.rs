//! The view model as `WebviewUpdate`s (`bb_protocol::v1`): what changed since the updates
//! were last taken ([`SessionView::take_updates`]), or the whole view
//! ([`SessionView::snapshot_updates`], a resync). Both read the view the reducers built, so
//! the updates a webview applies and the host's view cannot disagree: the updates of a
//! session, applied in order from its first, rebuild exactly what its snapshot does.
//!
//! The reducers mark what they change (blocks, the run lane, tasks, todos, changed files,
//! unknown events); taking the updates writes each marked part once, as JSON, and clears the
//! marks. A text block remembers how much of its text was sent: its growth goes out as
//! `assistantDelta`s starting at that offset, a rewrite as its whole text.

use std::borrow::Cow;

use bb_protocol::v1::{
    AskKind, AskOption, AssistantDelta, AssistantMessage, Checkpoint, FileChangeKind, FileChanged,
    MessageStatus, PermissionRequest, Run, RunOutcome, RunPhase, Status, StatusLevel, Task,
    TaskState, TextPreview, TodoItem, Todos, ToolRunState, ToolState, ToolView, UnknownEvent,
    UserMessage, WebviewUpdate,
};
use serde_json::value::RawValue;

use super::SessionView;
use super::blocks::{
    ApprovalBlock, ApprovalKind, ApprovalState, Block, NoticeBlock, NoticeLevel, StreamStatus,
    TextBlock, ToolBlock, ToolStatus, UserBlock,
};
use super::debug::UnknownNode;
use super::run::{FileChange, Outcome, RunState};
use super::tasks::{TaskNode, TaskStatus};
use super::transcript::WITHDRAWN;
use crate::truncate::Preview;

/// Most text one update carries: a longer text goes out as several deltas, so no update
/// outgrows a message.
pub const UPDATE_TEXT_CHUNK: usize = 64 * 1024;

/// Updates as JSON texts, in order.
pub type UpdateList = Vec<Box<RawValue>>;

fn push(out: &mut UpdateList, update: &WebviewUpdate<'_>) {
    // Cannot fail: every field is a string, number, boolean or a list or map of them.
    if let Ok(json) = serde_json::value::to_raw_value(update) {
        out.push(json);
    }
}

/// Length of `s` in UTF-16 code units (a JavaScript string's `length`).
fn utf16_len(s: &str) -> u64 {
    if s.is_ascii() { s.len() as u64 } else { s.chars().map(|c| c.len_utf16() as u64).sum() }
}

/// `s` cut into pieces of at most [`UPDATE_TEXT_CHUNK`] bytes, at character boundaries.
fn chunks(s: &str) -> impl Iterator<Item = &str> {
    let mut rest = s;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = rest.len().min(UPDATE_TEXT_CHUNK);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

fn preview(p: &Preview) -> TextPreview<'_> {
    TextPreview {
        text: Cow::Borrowed(&p.text),
        truncated: p.truncated,
        total_bytes: p.truncated.then_some(p.total_bytes as u64),
        body_ref: p.body_ref.as_deref().map(Cow::Borrowed),
    }
}

fn borrowed(s: &Option<String>) -> Option<Cow<'_, str>> {
    s.as_deref().map(Cow::Borrowed)
}

fn message_status(s: StreamStatus) -> MessageStatus {
    match s {
        StreamStatus::Streaming => MessageStatus::Streaming,
        StreamStatus::Complete => MessageStatus::Complete,
        StreamStatus::Error => MessageStatus::Error,
        StreamStatus::Stopped => MessageStatus::Stopped,
    }
}

fn task_state(s: TaskStatus) -> TaskState {
    match s {
        TaskStatus::Queued => TaskState::Queued,
        TaskStatus::Completed => TaskState::Completed,
        TaskStatus::Running => TaskState::Running,
        TaskStatus::Failed => TaskState::Failed,
    }
}

/// Text appended to a message from byte `from` (UTF-16 offset `at`) on, in chunks.
fn deltas(out: &mut UpdateList, key: &str, text: &str, mut at: u64) -> u64 {
    for piece in chunks(text) {
        let delta = WebviewUpdate::AssistantDelta(AssistantDelta {
            key: Cow::Borrowed(key),
            at,
            delta: Cow::Borrowed(piece),
        });
        push(out, &delta);
        at += utf16_len(piece);
    }
    at
}

/// A text block's state, with its whole text when `whole` (then in chunks: the first in
/// the state, the rest as deltas); returns the text's UTF-16 length when sent whole.
fn text_block(out: &mut UpdateList, b: &TextBlock, reasoning: bool, whole: bool) -> Option<u64> {
    let key = b.block_id.to_string();
    let mut pieces = chunks(&b.text);
    let first = if whole { Some(pieces.next().unwrap_or_default()) } else { None };
    let state = WebviewUpdate::AssistantMessage(AssistantMessage {
        key: Cow::Borrowed(&key),
        message_id: borrowed(&b.prompt_id),
        reasoning,
        status: message_status(b.status),
        error: borrowed(&b.error),
        text: first.map(Cow::Borrowed),
    });
    push(out, &state);
    let first = first?;
    let rest = &b.text[first.len()..];
    Some(deltas(out, &key, rest, utf16_len(first)))
}

/// What has changed of a text block since its last update, marked sent.
fn text_changes(out: &mut UpdateList, b: &mut TextBlock, reasoning: bool) {
    let sent = b.sent;
    if sent.rewritten || sent.bytes > b.text.len() || !b.text.is_char_boundary(sent.bytes) {
        let utf16 = text_block(out, b, reasoning, true).unwrap_or_default();
        b.sent.bytes = b.text.len();
        b.sent.utf16 = utf16;
        b.sent.rewritten = false;
        b.sent.status = Some(b.status);
        return;
    }
    if sent.status != Some(b.status) {
        text_block(out, b, reasoning, false);
        b.sent.status = Some(b.status);
    }
    if b.text.len() > sent.bytes {
        let key = b.block_id.to_string();
        b.sent.utf16 = deltas(out, &key, &b.text[sent.bytes..], sent.utf16);
        b.sent.bytes = b.text.len();
    }
}

fn user(b: &UserBlock) -> WebviewUpdate<'_> {
    let empty = TextPreview {
        text: Cow::Borrowed(""),
        truncated: false,
        total_bytes: None,
        body_ref: None,
    };
    WebviewUpdate::UserMessage(UserMessage {
        key: Cow::Owned(b.block_id.to_string()),
        message_id: borrowed(&b.prompt_id),
        text: b.text.as_ref().map_or(empty, preview),
    })
}

fn tool(b: &ToolBlock) -> WebviewUpdate<'_> {
    WebviewUpdate::ToolState(ToolState {
        key: Cow::Owned(b.block_id.to_string()),
        message_id: borrowed(&b.prompt_id),
        tool_id: borrowed(&b.call_id),
        tool: borrowed(&b.tool),
        state: match b.status {
            ToolStatus::Running => ToolRunState::Running,
            ToolStatus::Completed => ToolRunState::Done,
            ToolStatus::Error => ToolRunState::Error,
        },
        title: borrowed(&b.title),
        summary: borrowed(&b.summary),
        view: b.view.as_deref().map(Cow::Borrowed),
        // What the view says replaces the raw input, and a listing's or diff's raw output.
        input: b.input.as_ref().filter(|_| b.view.is_none()).map(preview),
        output: b
            .output
            .as_ref()
            .filter(|_| {
                !matches!(b.view.as_deref(), Some(ToolView::Files { .. } | ToolView::Diff { .. }))
            })
            .map(preview),
        error: borrowed(&b.error),
    })
}

/// How a card the engine no longer knows reads.
const STALE_WORDS: &str =
    "no longer known to the engine (it restarted or forgot the request); nothing was decided";

/// A decision as the card says it.
fn decision_words(decision: &str) -> Cow<'_, str> {
    let d = decision.to_ascii_lowercase();
    Cow::Borrowed(match d.as_str() {
        // `settled`: the host's word for a prompt the engine closed while an answer was on
        // its way (`bb.prompt.closed`).
        // `reply`: a question's answers, as the bridge's `bb.prompt.closed` names them.
        "answered" | "settled" | "reply" => "answered",
        "rejected" => "dismissed",
        _ if decision == WITHDRAWN => "no longer needed",
        _ if d.contains("always") || d.contains("rule") => "always allowed",
        _ if d.contains("reject") || d.contains("deny") || d.contains("denied") => "denied",
        _ if d.contains("cancel") => "cancelled",
        // The host's word for a prompt the engine no longer knows (it restarted, the
        // session is gone, its answer was refused): nothing was decided.
        _ if d.contains("stale") => STALE_WORDS,
        _ if d.contains("expire") => "expired",
        _ if d.contains("once") || d.contains("allow") || d == "selected" => "allowed once",
        _ => return Cow::Borrowed(decision),
    })
}

const PERMISSION_OPTIONS: [(&str, &str); 3] =
    [("Allow once", "allow_once"), ("Always allow", "allow_rule"), ("Deny", "deny")];

fn approval(b: &ApprovalBlock) -> WebviewUpdate<'_> {
    let ask = match b.approval {
        ApprovalKind::Permission => AskKind::Permission,
        ApprovalKind::Question => AskKind::Question,
    };
    let options = match b.approval {
        ApprovalKind::Permission => PERMISSION_OPTIONS
            .iter()
            .map(|(label, value)| AskOption {
                label: Cow::Borrowed(label),
                value: Cow::Borrowed(value),
                description: None,
            })
            .collect(),
        ApprovalKind::Question => match b.questions.as_slice() {
            [one] => one.options.clone(),
            _ => Vec::new(),
        },
    };
    let (resolved, decision) = match &b.state {
        ApprovalState::Pending => (false, None),
        ApprovalState::Resolved { decision } => (true, Some(decision_words(decision))),
    };
    WebviewUpdate::PermissionRequest(PermissionRequest {
        key: Cow::Owned(b.block_id.to_string()),
        message_id: borrowed(&b.prompt_id),
        permission_id: borrowed(&b.request_id),
        session_id: borrowed(&b.session_id),
        ask,
        prompt: Cow::Borrowed(b.prompt.as_str()),
        tool: borrowed(&b.tool),
        tool_id: borrowed(&b.call_id),
        patterns: b.patterns.iter().map(|p| Cow::Borrowed(p.as_str())).collect(),
        options,
        questions: b.questions.clone(),
        resolved,
        decision,
        answered_by: b.answered_by.clone(),
    })
}

fn notice(b: &NoticeBlock) -> WebviewUpdate<'_> {
    WebviewUpdate::Status(Status {
        key: Cow::Owned(b.block_id.to_string()),
        message_id: borrowed(&b.prompt_id),
        level: match b.level {
            NoticeLevel::Error => StatusLevel::Error,
            NoticeLevel::Gap => StatusLevel::Gap,
            NoticeLevel::Warning => StatusLevel::Warning,
            NoticeLevel::Info => StatusLevel::Info,
            NoticeLevel::Stopped => StatusLevel::Stopped,
        },
        text: Cow::Borrowed(&b.message),
    })
}

fn file(f: &FileChange) -> WebviewUpdate<'_> {
    WebviewUpdate::Diff(FileChanged {
        path: Cow::Borrowed(&f.path),
        change: match f.status.as_str() {
            "added" | "created" | "new" => FileChangeKind::Added,
            "deleted" | "removed" => FileChangeKind::Deleted,
            "edited" => FileChangeKind::Edited,
            _ => FileChangeKind::Modified,
        },
        additions: f.additions,
        deletions: f.deletions,
    })
}

fn task(t: &TaskNode<'_>) -> WebviewUpdate<'static> {
    let owned = |s: Option<&str>| s.map(|s| Cow::Owned(s.to_owned()));
    WebviewUpdate::Task(Task {
        task_id: Cow::Owned(t.id.to_owned()),
        parent_task_id: owned(t.parent),
        order: t.order,
        state: task_state(t.status),
        rollup: task_state(t.rollup),
        title: owned(t.title),
        lane: owned(t.lane),
        child_session_id: owned(t.child_session),
    })
}

fn unknown(n: &UnknownNode) -> WebviewUpdate<'_> {
    WebviewUpdate::UnknownEvent(UnknownEvent {
        n: n.n,
        event_id: borrowed(&n.event_id),
        event_type: Cow::Borrowed(&n.kind),
        size: n.payload_size as u64,
        payload: Cow::Borrowed(&n.payload),
    })
}

impl SessionView {
    fn run_update(&self) -> WebviewUpdate<'_> {
        let r = &self.run;
        let summary = r.summary.as_ref();
        WebviewUpdate::Run(Run {
            phase: match r.state {
                RunState::Idle => RunPhase::Idle,
                RunState::Running => RunPhase::Running,
                RunState::Retrying => RunPhase::Retrying,
            },
            turns: r.turns_started,
            outcome: summary.and_then(|s| s.outcome).map(|o| match o {
                Outcome::Done => RunOutcome::Done,
                Outcome::Stopped => RunOutcome::Stopped,
                Outcome::Failed => RunOutcome::Failed,
            }),
            steps: summary.and_then(|s| s.steps),
            title: borrowed(&r.title),
            errors: r.errors,
            gap: r.gap_detected,
            checkpoints: r
                .checkpoints
                .iter()
                .map(|c| Checkpoint {
                    id: Cow::Borrowed(&c.checkpoint_id),
                    preview: borrowed(&c.preview),
                    restored: c.restored,
                })
                .collect(),
            links: r.log_links.iter().map(|l| Cow::Borrowed(l.url.as_str())).collect(),
        })
    }

    fn todos_update(&self) -> WebviewUpdate<'_> {
        WebviewUpdate::Todos(Todos {
            items: self
                .tasks
                .todos
                .iter()
                .map(|t| TodoItem {
                    content: Cow::Borrowed(&t.content),
                    state: task_state(t.status),
                    priority: borrowed(&t.priority),
                })
                .collect(),
        })
    }

    /// Writes into `out` the updates of what changed since they were last taken (of the
    /// whole view, the first time), and marks it sent.
    pub fn take_updates(&mut self, out: &mut UpdateList) {
        for i in self.transcript.take_changed() {
            match self.transcript.blocks.get_mut(i) {
                Some(Block::User(b)) => push(out, &user(b)),
                Some(Block::Assistant(b)) => text_changes(out, b, false),
                Some(Block::Reasoning(b)) => text_changes(out, b, true),
                Some(Block::Tool(b)) => push(out, &tool(b)),
                Some(Block::Approval(b)) => push(out, &approval(b)),
                Some(Block::Notice(b)) => push(out, &notice(b)),
                None => {}
            }
        }
        if !std::mem::replace(&mut self.run_sent, true) {
            push(out, &self.run_update());
        }
        let mut files = std::mem::take(&mut self.run.files_changed);
        files.sort_unstable();
        for i in files {
            if let Some(f) = self.run.changed_files.get(i) {
                push(out, &file(f));
            }
        }
        for t in self.tasks.take_changed() {
            push(out, &task(&t));
        }
        if std::mem::take(&mut self.tasks.todos_changed) {
            push(out, &self.todos_update());
        }
        let count = self.debug.unknown_count;
        if count > self.unknown_sent {
            for n in self.debug.unknown.iter().filter(|n| n.n > self.unknown_sent) {
                push(out, &unknown(n));
            }
            self.unknown_sent = count;
        }
    }

    /// Writes into `out` the updates that rebuild the whole view (what a resync sends),
    /// leaving what was taken as it was.
    pub fn snapshot_updates(&self, out: &mut UpdateList) {
        for block in &self.transcript.blocks {
            match block {
                Block::User(b) => push(out, &user(b)),
                Block::Assistant(b) => {
                    text_block(out, b, false, true);
                }
                Block::Reasoning(b) => {
                    text_block(out, b, true, true);
                }
                Block::Tool(b) => push(out, &tool(b)),
                Block::Approval(b) => push(out, &approval(b)),
                Block::Notice(b) => push(out, &notice(b)),
            }
        }
        push(out, &self.run_update());
        for f in &self.run.changed_files {
            push(out, &file(f));
        }
        for t in self.tasks.nodes() {
            push(out, &task(&t));
        }
        if self.tasks.todos_known {
            push(out, &self.todos_update());
        }
        for n in &self.debug.unknown {
            push(out, &unknown(n));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{STALE_WORDS, UPDATE_TEXT_CHUNK, chunks, decision_words, utf16_len};

    #[test]
    fn text_is_cut_at_character_boundaries() {
        let text = "é".repeat(UPDATE_TEXT_CHUNK); // two bytes each
        let pieces: Vec<&str> = chunks(&text).collect();
        assert_eq!(pieces.len(), 2);
        assert!(pieces.iter().all(|p| p.len() <= UPDATE_TEXT_CHUNK));
        assert_eq!(pieces.concat(), text);
        assert_eq!(chunks("").count(), 0);
    }

    #[test]
    fn offsets_count_utf16_units() {
        assert_eq!(utf16_len("abc"), 3);
        assert_eq!(utf16_len("é"), 1);
        assert_eq!(utf16_len("😀"), 2);
    }

    #[test]
    fn decisions_are_said_in_words() {
        for (engine, words) in [
            ("once", "allowed once"),
            ("allow_once", "allowed once"),
            ("always", "always allowed"),
            ("allow_rule", "always allowed"),
            ("reject", "denied"),
            ("deny", "denied"),
            ("answered", "answered"),
            ("settled", "answered"),
            ("reply", "answered"),
            ("stale", STALE_WORDS),
            ("expired", "expired"),
            ("cancelled", "cancelled"),
            ("rejected", "dismissed"),
            ("withdrawn", "no longer needed"),
        ] {
            assert_eq!(decision_words(engine), words, "{engine}");
        }
    }
}
