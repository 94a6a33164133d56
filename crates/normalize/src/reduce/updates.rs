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
    AskKind, AskOption, AssistantDelta, AssistantMessage, Checkpoint, ConfigChoice, ConfigKind,
    ConfigOption, Cost, FileChangeKind, FileChanged, MessageStatus, PermissionRequest, Run,
    RunOutcome, RunPhase, SlashCommand, Status, StatusLevel, Task, TaskState, TextPreview,
    TodoItem, Todos, ToolRunState, ToolState, ToolView, UnknownEvent, Usage, UserMessage,
    WebviewUpdate,
};
use serde_json::Value;
use serde_json::value::RawValue;

use super::SessionView;
use super::blocks::{
    ApprovalBlock, ApprovalKind, ApprovalState, Block, NoticeBlock, NoticeLevel, SentText,
    StreamStatus, TextBlock, ToolBlock, ToolStatus, UserBlock,
};
use super::debug::UnknownNode;
use super::run::{FileChange, Outcome, RunState};
use super::tasks::{TaskNode, TaskStatus};
use super::transcript::{Transcript, WITHDRAWN};
use crate::truncate::Preview;

/// Most text one update carries: a longer text goes out as several deltas, so no update
/// outgrows a message.
pub const UPDATE_TEXT_CHUNK: usize = 64 * 1024;

/// Updates as JSON texts, in order.
pub type UpdateList = Vec<Box<RawValue>>;

/// The part of a transcript a paged view left out: the blocks before `before` (the cursor
/// [`SessionView::history_updates`] pages back from), which hold `turns` turns (a turn
/// starts at a user message; blocks before the first user message count as one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Earlier {
    /// Index of the first block already written: older ones come before it.
    pub before: usize,
    /// Turns left out.
    pub turns: usize,
}

/// The updates of one transcript block, whole (`t` holds its ids).
fn block_updates(out: &mut UpdateList, t: &Transcript, block: &Block) {
    match block {
        Block::User(b) => push(out, &user(t, b)),
        Block::Assistant(b) => {
            text_block(out, t, b, false, true);
        }
        Block::Reasoning(b) => {
            text_block(out, t, b, true, true);
        }
        Block::Tool(b) => push(out, &tool(b)),
        Block::Approval(b) => push(out, &approval(b)),
        Block::Notice(b) => push(out, &notice(b)),
    }
}

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
fn text_block(
    out: &mut UpdateList,
    t: &Transcript,
    b: &TextBlock,
    reasoning: bool,
    whole: bool,
) -> Option<u64> {
    let key = b.block_id.to_string();
    let mut pieces = chunks(&b.text);
    let first = if whole { Some(pieces.next().unwrap_or_default()) } else { None };
    let state = WebviewUpdate::AssistantMessage(AssistantMessage {
        key: Cow::Borrowed(&key),
        message_id: t.text_at(b.prompt_id).map(Cow::Borrowed),
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

/// What has changed of text block `i` since its last update, marked sent.
fn text_changes(out: &mut UpdateList, t: &mut Transcript, i: usize) {
    let (b, reasoning) = match t.blocks.get(i) {
        Some(Block::Assistant(b)) => (b, false),
        Some(Block::Reasoning(b)) => (b, true),
        _ => return,
    };
    let mut sent = b.sent;
    if sent.rewritten || sent.bytes > b.text.len() || !b.text.is_char_boundary(sent.bytes) {
        let utf16 = text_block(out, t, b, reasoning, true).unwrap_or_default();
        sent = SentText { bytes: b.text.len(), utf16, rewritten: false, status: Some(b.status) };
    } else {
        if sent.status != Some(b.status) {
            text_block(out, t, b, reasoning, false);
            sent.status = Some(b.status);
        }
        if b.text.len() > sent.bytes {
            let key = b.block_id.to_string();
            sent.utf16 = deltas(out, &key, &b.text[sent.bytes..], sent.utf16);
            sent.bytes = b.text.len();
        }
    }
    if let Some(Block::Assistant(b) | Block::Reasoning(b)) = t.blocks.get_mut(i) {
        b.sent = sent;
    }
}

fn user<'a>(t: &'a Transcript, b: &'a UserBlock) -> WebviewUpdate<'a> {
    let empty = TextPreview {
        text: Cow::Borrowed(""),
        truncated: false,
        total_bytes: None,
        body_ref: None,
    };
    WebviewUpdate::UserMessage(UserMessage {
        key: Cow::Owned(b.block_id.to_string()),
        message_id: t.text_at(b.prompt_id).map(Cow::Borrowed),
        text: b.text.as_ref().map_or(empty, |p| TextPreview {
            text: Cow::Borrowed(t.text_at(Some(p.text)).unwrap_or_default()),
            truncated: p.truncated,
            total_bytes: p.truncated.then_some(p.total_bytes as u64),
            body_ref: p.body_ref.as_deref().map(Cow::Borrowed),
        }),
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
        event_id: borrowed(&b.event_id),
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

fn text<'a>(v: &'a Value, key: &str) -> Option<Cow<'a, str>> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(Cow::Borrowed)
}

/// ACP `usage_update`'s figures (`used`, `size`, `cost {amount, currency}`).
fn usage(v: &Value) -> Usage<'_> {
    Usage {
        used: v.get("used").and_then(Value::as_u64),
        size: v.get("size").and_then(Value::as_u64),
        cost: v.get("cost").and_then(|c| {
            Some(Cost {
                amount: c.get("amount").and_then(|a| a.as_number()).cloned()?,
                currency: text(c, "currency")?,
            })
        }),
    }
}

/// ACP `availableCommands` (`name`, `description`, `input.hint`); nameless ones left out.
fn commands(v: &Value) -> Vec<SlashCommand<'_>> {
    let list = v.as_array().map(Vec::as_slice).unwrap_or_default();
    list.iter()
        .filter_map(|c| {
            Some(SlashCommand {
                name: text(c, "name")?,
                description: text(c, "description"),
                hint: c.get("input").and_then(|i| text(i, "hint")),
            })
        })
        .collect()
}

fn choice<'a>(c: &'a Value, group: Option<Cow<'a, str>>) -> Option<ConfigChoice<'a>> {
    let value = text(c, "value")?;
    Some(ConfigChoice {
        name: text(c, "name").unwrap_or_else(|| value.clone()),
        value,
        description: text(c, "description"),
        group,
    })
}

/// ACP `configOptions`: selects (flat or grouped options) and booleans; an option of
/// another type is left out (nothing to pick it with).
fn config_options(v: &Value) -> Vec<ConfigOption<'_>> {
    let list = v.as_array().map(Vec::as_slice).unwrap_or_default();
    list.iter()
        .filter_map(|o| {
            let kind = match o.get("type").and_then(Value::as_str) {
                Some("select") => ConfigKind::Select,
                Some("boolean") => ConfigKind::Boolean,
                _ => return None,
            };
            let id = text(o, "id")?;
            let mut options = Vec::new();
            for c in o.get("options").and_then(Value::as_array).into_iter().flatten() {
                match c.get("options").and_then(Value::as_array) {
                    Some(grouped) => {
                        let group = text(c, "name").or_else(|| text(c, "group"));
                        options.extend(grouped.iter().filter_map(|g| choice(g, group.clone())));
                    }
                    None => options.extend(choice(c, None)),
                }
            }
            Some(ConfigOption {
                name: text(o, "name").unwrap_or_else(|| id.clone()),
                id,
                description: text(o, "description"),
                category: text(o, "category"),
                kind,
                value: text(o, "currentValue"),
                on: o.get("currentValue").and_then(Value::as_bool),
                options,
            })
        })
        .collect()
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
            usage: r.usage.as_ref().map(usage),
            commands: r.commands.as_ref().map(commands).unwrap_or_default(),
            config_options: r.config_options.as_ref().map(config_options).unwrap_or_default(),
            mode: borrowed(&r.mode),
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
            let t = &self.transcript;
            match t.blocks.get(i) {
                Some(Block::User(b)) => push(out, &user(t, b)),
                Some(Block::Assistant(_) | Block::Reasoning(_)) => {
                    text_changes(out, &mut self.transcript, i);
                }
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
            block_updates(out, &self.transcript, block);
        }
        self.lanes_snapshot(out);
    }

    /// Writes into `out` the updates that rebuild the view with only its recent transcript
    /// (what a resync sends, paged): the last `turns` turns (a turn starts at a user
    /// message), fewer when they pass `max_bytes` of updates (never fewer than one), then
    /// every approval or question still pending in the turns left out, then the run, tasks,
    /// todos, changed files and unknown events whole. Returns where the transcript left out
    /// ends, for [`SessionView::history_updates`], or `None` when nothing was left out.
    pub fn snapshot_recent_updates(
        &self,
        out: &mut UpdateList,
        turns: usize,
        max_bytes: usize,
    ) -> Option<Earlier> {
        let blocks = &self.transcript.blocks;
        let (start, parts) = self.turns_back(blocks.len(), turns, max_bytes);
        for block in &blocks[..start] {
            if let Block::Approval(b) = block
                && b.state == ApprovalState::Pending
            {
                push(out, &approval(b));
            }
        }
        out.extend(parts.into_iter().rev().flatten());
        self.lanes_snapshot(out);
        self.earlier(start)
    }

    /// Writes into `out` the updates of the transcript's turns that end at block `before`
    /// (an [`Earlier::before`]), oldest first: at most `turns` turns, fewer when they pass
    /// `max_bytes` (at least one block). Returns where the part still older ends, or `None`
    /// when this page reaches the start.
    pub fn history_updates(
        &self,
        out: &mut UpdateList,
        before: usize,
        turns: usize,
        max_bytes: usize,
    ) -> Option<Earlier> {
        let before = before.min(self.transcript.blocks.len());
        let (start, parts) = self.turns_back(before, turns, max_bytes);
        out.extend(parts.into_iter().rev().flatten());
        self.earlier(start)
    }

    /// Number of transcript blocks (the `before` that pages from the newest).
    pub fn transcript_len(&self) -> usize {
        self.transcript.blocks.len()
    }

    /// The part of the transcript before block `start`, if any.
    fn earlier(&self, start: usize) -> Option<Earlier> {
        (start > 0).then(|| Earlier {
            before: start,
            turns: self.transcript.blocks[..start]
                .iter()
                .filter(|b| matches!(b, Block::User(_)))
                .count()
                .max(1),
        })
    }

    /// The updates of up to `turns` turns ending at block `end`, newest turn first: each
    /// turn's updates in block order. Stops before a turn that would pass `max_bytes`; a
    /// first turn over it alone is cut to its newest blocks within it (at least one).
    /// Returns the first block written and the turns.
    fn turns_back(&self, end: usize, turns: usize, max_bytes: usize) -> (usize, Vec<UpdateList>) {
        let blocks = &self.transcript.blocks[..end];
        let mut parts: Vec<UpdateList> = Vec::new();
        let mut bytes = 0;
        let mut end = end;
        while end > 0 && parts.len() < turns.max(1) {
            let start =
                blocks[..end].iter().rposition(|b| matches!(b, Block::User(_))).unwrap_or(0);
            let mut part = UpdateList::new();
            let mut sizes = Vec::new();
            for block in &blocks[start..end] {
                let before = part.len();
                block_updates(&mut part, &self.transcript, block);
                sizes.push(part[before..].iter().map(|u| u.get().len() + 1).sum::<usize>());
            }
            let size: usize = sizes.iter().sum();
            if bytes + size > max_bytes {
                if !parts.is_empty() {
                    break;
                }
                // One turn larger than a page: its newest blocks that fit, at least one.
                let mut kept = 0;
                let mut cut = end;
                for (i, s) in sizes.iter().enumerate().rev() {
                    if kept > 0 && kept + s > max_bytes {
                        break;
                    }
                    kept += s;
                    cut = start + i;
                }
                let mut tail = UpdateList::new();
                for block in &blocks[cut..end] {
                    block_updates(&mut tail, &self.transcript, block);
                }
                return (cut, vec![tail]);
            }
            bytes += size;
            parts.push(part);
            end = start;
        }
        (end, parts)
    }

    /// The run, changed files, tasks, todos and unknown events, whole.
    fn lanes_snapshot(&self, out: &mut UpdateList) {
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
