//! The transcript lane: user, assistant, reasoning, tool, approval and notice blocks, and the
//! mutation rules that keep them keyed by message id + turn, call id and request id.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use super::blocks::{
    ApprovalBlock, ApprovalKind, ApprovalState, Block, NoticeBlock, NoticeLevel, StreamStatus,
    TextBlock, ToolBlock, ToolStatus, UserBlock,
};
use crate::event::RawEvent;
use crate::json::{as_text, at, bool_at, id_at, str_at, string_at};
use crate::redact::redact_log_line;
use crate::truncate::{BodyStore, Limits, truncate};

/// Longest notice or summary line kept in a card, in bytes.
const LINE_CAP: usize = 2048;

/// The transcript lane.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Transcript {
    /// The blocks, in event order.
    pub blocks: Vec<Block>,
    #[serde(skip)]
    idx: Index,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Index {
    next_block: u64,
    assistant: HashMap<String, usize>,
    reasoning: HashMap<String, usize>,
    user: HashMap<String, usize>,
    parts: HashMap<String, usize>,
    tools: HashMap<String, usize>,
    open_tools: Vec<usize>,
    approvals: HashMap<String, usize>,
    active_assistant: Option<usize>,
    active_reasoning: Option<usize>,
    streaming: Vec<usize>,
}

fn msg_key(message_id: Option<&str>, turn: Option<i64>) -> Option<String> {
    message_id.map(|m| match turn {
        Some(t) => format!("{m}\u{0}{t}"),
        None => m.to_owned(),
    })
}

/// The message id of a BreadBoard assistant event (`item_id` on the agent path,
/// `message_id` in replays). Shared with the batcher so coalescing uses the same key.
pub(crate) fn bb_message_id(p: &Value) -> Option<&str> {
    str_at(p, &[&["item_id"], &["message_id"]])
}

fn one_line(s: &str) -> String {
    redact_log_line(s, LINE_CAP)
}

impl Transcript {
    fn push(&mut self, make: impl FnOnce(String) -> Block) -> usize {
        self.idx.next_block += 1;
        let id = format!("b{}", self.idx.next_block);
        self.blocks.push(make(id));
        self.blocks.len() - 1
    }

    fn text_block(&mut self, i: usize) -> Option<&mut TextBlock> {
        match self.blocks.get_mut(i) {
            Some(Block::Assistant(b) | Block::Reasoning(b)) => Some(b),
            _ => None,
        }
    }

    /// The assistant (or reasoning) block for a message id + turn, created when missing.
    /// Without a message id, the active streaming block of the same turn is used.
    fn text_block_for(
        &mut self,
        reasoning: bool,
        message_id: Option<&str>,
        turn: Option<i64>,
    ) -> usize {
        let key = msg_key(message_id, turn);
        let map = if reasoning { &self.idx.reasoning } else { &self.idx.assistant };
        if let Some(&i) = key.as_ref().and_then(|k| map.get(k)) {
            return i;
        }
        if key.is_none() {
            let active =
                if reasoning { self.idx.active_reasoning } else { self.idx.active_assistant };
            if let Some(i) = active
                && let Some(Block::Assistant(b) | Block::Reasoning(b)) = self.blocks.get(i)
                && b.status == StreamStatus::Streaming
                && b.turn == turn
                && b.message_id.is_none()
            {
                return i;
            }
        }
        let block = |block_id| TextBlock {
            block_id,
            message_id: message_id.map(str::to_owned),
            turn,
            text: String::new(),
            status: StreamStatus::Streaming,
            error: None,
            parts: Vec::new(),
        };
        let i = if reasoning {
            self.push(|id| Block::Reasoning(block(id)))
        } else {
            self.push(|id| Block::Assistant(block(id)))
        };
        if let Some(k) = key {
            if reasoning {
                self.idx.reasoning.insert(k, i);
            } else {
                self.idx.assistant.insert(k, i);
            }
        }
        if reasoning {
            self.idx.active_reasoning = Some(i);
        } else {
            self.idx.active_assistant = Some(i);
        }
        self.idx.streaming.push(i);
        i
    }

    // ---- user -------------------------------------------------------------------------

    /// Appends an immutable user block (BreadBoard `user_message`, Kilo user `message.updated`).
    pub(crate) fn user_message(&mut self, ev: &RawEvent, bodies: &mut BodyStore) {
        let p = &ev.payload;
        let message_id = string_at(p, &[&["info", "id"], &["message_id"], &["id"]]);
        if let Some(&i) = message_id.as_ref().and_then(|m| self.idx.user.get(m)) {
            // Known user message: only a first text may be filled in, never rewritten.
            let text = str_at(p, &[&["text"]]).map(str::to_owned);
            if let (Some(Block::User(b)), Some(t)) = (self.blocks.get_mut(i), text)
                && b.text.is_none()
            {
                b.text = Some(bodies.preview(&t, Limits::default()));
            }
            return;
        }
        let text = str_at(p, &[&["text"]]).map(|t| bodies.preview(t, Limits::default()));
        let (event_id, turn) = (ev.id.clone(), ev.turn);
        let mid = message_id.clone();
        let i = self.push(|block_id| {
            Block::User(UserBlock { block_id, event_id, message_id: mid, turn, text })
        });
        if let Some(m) = message_id {
            self.idx.user.insert(m, i);
        }
    }

    // ---- assistant / reasoning --------------------------------------------------------

    /// BreadBoard assistant stream: `assistant_message`, `assistant_delta`,
    /// `assistant.message.start|delta|end`.
    pub(crate) fn breadboard_assistant(&mut self, ev: &RawEvent) {
        let p = &ev.payload;
        let mid = bb_message_id(p);
        match ev.kind.as_str() {
            "assistant.message.start" => {
                self.text_block_for(false, mid, ev.turn);
            }
            "assistant.message.delta" | "assistant_delta" => {
                let field = if ev.kind == "assistant_delta" { "text" } else { "delta" };
                let delta = p.get(field).and_then(Value::as_str).unwrap_or_default();
                let i = self.text_block_for(false, mid, ev.turn);
                if let Some(b) = self.text_block(i) {
                    b.text.push_str(delta);
                }
            }
            "assistant.message.end" => {
                let i = self.text_block_for(false, mid, ev.turn);
                if let Some(b) = self.text_block(i) {
                    b.status = StreamStatus::Complete;
                }
            }
            _ => {
                // `assistant_message`: the whole text. Empty text (tool-call-only reply)
                // finalizes a streamed block but opens none.
                let text = str_at(p, &[&["text"]]).unwrap_or_default();
                let key = msg_key(mid, ev.turn);
                let existing = match &key {
                    Some(k) => self.idx.assistant.get(k).copied(),
                    None => self.idx.active_assistant.filter(|&i| {
                        matches!(self.blocks.get(i), Some(Block::Assistant(b))
                            if b.status == StreamStatus::Streaming && b.turn == ev.turn)
                    }),
                };
                if existing.is_none() && text.is_empty() {
                    return;
                }
                let i = match existing {
                    Some(i) => i,
                    None => self.text_block_for(false, mid, ev.turn),
                };
                if let Some(b) = self.text_block(i) {
                    if !text.is_empty() {
                        text.clone_into(&mut b.text);
                        b.parts.clear();
                    }
                    b.status = StreamStatus::Complete;
                }
            }
        }
    }

    /// BreadBoard reasoning deltas.
    pub(crate) fn breadboard_reasoning(&mut self, ev: &RawEvent) {
        let p = &ev.payload;
        let mid = bb_message_id(p);
        let delta = p
            .get("delta")
            .and_then(Value::as_str)
            .or_else(|| p.get("text").and_then(Value::as_str))
            .unwrap_or_default();
        let i = self.text_block_for(true, mid, ev.turn);
        if let Some(b) = self.text_block(i) {
            b.text.push_str(delta);
        }
    }

    /// Kilo `message.updated` of an assistant message: its state (streaming, complete, error).
    pub(crate) fn kilo_message(&mut self, ev: &RawEvent) {
        let info = ev.payload.get("info").unwrap_or(&Value::Null);
        let Some(mid) = str_at(info, &[&["id"]]) else {
            return;
        };
        let i = self.text_block_for(false, Some(mid), None);
        let error = info.get("error").filter(|e| !e.is_null()).map(|e| {
            let msg = str_at(e, &[&["data", "message"], &["message"], &["name"]])
                .map_or_else(|| e.to_string(), str::to_owned);
            one_line(&msg)
        });
        let completed = at(info, &["time", "completed"]).is_some_and(|v| !v.is_null());
        if let Some(b) = self.text_block(i) {
            if let Some(err) = error {
                b.status = StreamStatus::Error;
                b.error = Some(err);
            } else if completed && b.status == StreamStatus::Streaming {
                b.status = StreamStatus::Complete;
            }
        }
    }

    /// Kilo `message.part.updated` of a text or reasoning part: the part's full text.
    pub(crate) fn kilo_text_part(
        &mut self,
        ev: &RawEvent,
        reasoning: bool,
        bodies: &mut BodyStore,
    ) {
        let part = ev.payload.get("part").unwrap_or(&Value::Null);
        let (Some(pid), Some(mid)) = (str_at(part, &[&["id"]]), str_at(part, &[&["messageID"]]))
        else {
            return;
        };
        let text = str_at(part, &[&["text"]]).unwrap_or_default();
        if let Some(&u) = self.idx.user.get(mid) {
            if let Some(Block::User(b)) = self.blocks.get_mut(u)
                && b.text.is_none()
            {
                b.text = Some(bodies.preview(text, Limits::default()));
            }
            return;
        }
        let i = match self.idx.parts.get(pid) {
            Some(&i) => i,
            None => {
                let i = self.text_block_for(reasoning, Some(mid), None);
                self.idx.parts.insert(pid.to_owned(), i);
                i
            }
        };
        if let Some(b) = self.text_block(i) {
            set_part(b, pid, text);
        }
    }

    /// Kilo `message.part.delta`: appends to the named part's field (only `text` is shown).
    pub(crate) fn kilo_delta(&mut self, ev: &RawEvent) {
        let p = &ev.payload;
        if str_at(p, &[&["field"]]).is_some_and(|f| f != "text") {
            return;
        }
        let (Some(pid), Some(mid)) = (str_at(p, &[&["partID"]]), str_at(p, &[&["messageID"]]))
        else {
            return;
        };
        if self.idx.user.contains_key(mid) {
            return;
        }
        let delta = p.get("delta").and_then(Value::as_str).unwrap_or_default();
        let i = match self.idx.parts.get(pid) {
            Some(&i) => i,
            None => {
                let i = self.text_block_for(false, Some(mid), None);
                self.idx.parts.insert(pid.to_owned(), i);
                i
            }
        };
        if let Some(b) = self.text_block(i) {
            append_part(b, pid, delta);
        }
    }

    // ---- tools -------------------------------------------------------------------------

    fn find_open_tool(&self, call_id: Option<&str>, tool: Option<&str>) -> Option<usize> {
        if let Some(&i) = call_id.and_then(|c| self.idx.tools.get(c)) {
            return Some(i);
        }
        let open = |i: &&usize| matches!(self.blocks.get(**i), Some(Block::Tool(b)) if b.status == ToolStatus::Running);
        let by_name = self.idx.open_tools.iter().filter(open).find(|&&i| {
            matches!(self.blocks.get(i), Some(Block::Tool(b)) if tool.is_some() && b.tool.as_deref() == tool && (call_id.is_none() || b.call_id.is_none()))
        });
        by_name.or_else(|| {
            self.idx.open_tools.iter().filter(open).find(|&&i| {
                call_id.is_none() && matches!(self.blocks.get(i), Some(Block::Tool(b)) if b.call_id.is_none() && tool.is_none())
            })
        }).copied()
    }

    fn open_tool(
        &mut self,
        call_id: Option<String>,
        tool: Option<String>,
        turn: Option<i64>,
    ) -> usize {
        let cid = call_id.clone();
        let i = self.push(|block_id| {
            Block::Tool(Box::new(ToolBlock {
                block_id,
                call_id: cid,
                tool,
                turn,
                status: ToolStatus::Running,
                title: None,
                summary: None,
                input: None,
                output: None,
                error: None,
                artifact: None,
                live: String::new(),
            }))
        });
        if let Some(c) = call_id {
            self.idx.tools.insert(c, i);
        }
        self.idx.open_tools.push(i);
        i
    }

    fn tool_mut(&mut self, i: usize) -> Option<&mut ToolBlock> {
        match self.blocks.get_mut(i) {
            Some(Block::Tool(b)) => Some(b),
            _ => None,
        }
    }

    fn close_tool(&mut self, i: usize) {
        self.idx.open_tools.retain(|&j| j != i);
    }

    /// `tool.call`: opens a running tool block (or updates the open one with the same id).
    pub(crate) fn tool_call(&mut self, ev: &RawEvent, bodies: &mut BodyStore) {
        let call = ToolFacts::call(ev);
        let i = match call.call_id.as_deref().and_then(|c| self.idx.tools.get(c)) {
            Some(&i) => i,
            None => self.open_tool(call.call_id.clone(), call.tool.clone(), ev.turn),
        };
        if let Some(b) = self.tool_mut(i) {
            if b.tool.is_none() {
                b.tool = call.tool;
            }
            if call.title.is_some() {
                b.title = call.title;
            }
            if let Some(input) = call.input {
                b.input = Some(bodies.preview(&input, Limits::default()));
            }
            if let Some(out) = call.output {
                b.output = Some(truncate(&out, Limits::default(), None));
            }
        }
    }

    /// `tool.output`: streamed stdout/stderr of a running call.
    pub(crate) fn tool_output(&mut self, ev: &RawEvent) {
        let p = &ev.payload;
        let call_id = id_at(p, &[&["call_id"], &["exec_id"]]);
        let delta = str_at(p, &[&["delta"]]).unwrap_or_default();
        let i = match self.find_open_tool(call_id.as_deref(), None) {
            Some(i) => i,
            None => self.open_tool(call_id, None, ev.turn),
        };
        if let Some(b) = self.tool_mut(i) {
            b.live.push_str(delta);
            b.output = Some(truncate(&b.live, Limits::default(), None));
        }
    }

    /// `tool.result`: closes the matching tool block and attaches a compact preview. A result
    /// without an open match refreshes the latest block of the same call or tool in the same
    /// turn (BreadBoard emits two results per call), or else opens a closed block.
    pub(crate) fn tool_result(&mut self, ev: &RawEvent, bodies: &mut BodyStore) {
        let r = ToolFacts::result(ev);
        let i = self.find_open_tool(r.call_id.as_deref(), r.tool.as_deref()).or_else(|| {
            self.blocks.iter().rposition(|b| {
                matches!(b, Block::Tool(t) if t.turn == ev.turn
                    && ((r.call_id.is_some() && t.call_id == r.call_id)
                        || (r.call_id.is_none() && r.tool.is_some() && t.tool == r.tool)))
            })
        });
        let i = match i {
            Some(i) => i,
            None => self.open_tool(r.call_id.clone(), r.tool.clone(), ev.turn),
        };
        self.close_tool(i);
        let output = r.output.as_deref().map(|o| bodies.preview(o, Limits::default()));
        if let Some(b) = self.tool_mut(i) {
            if b.tool.is_none() {
                b.tool = r.tool;
            }
            if b.status != ToolStatus::Error {
                b.status = if r.failed { ToolStatus::Error } else { ToolStatus::Completed };
            }
            if r.title.is_some() {
                b.title = r.title;
            }
            if r.summary.is_some() {
                b.summary = r.summary;
            }
            if r.error.is_some() {
                b.error = r.error;
            }
            if r.artifact.is_some() {
                b.artifact = r.artifact;
            }
            if let Some(input) = r.input {
                b.input = Some(bodies.preview(&input, Limits::default()));
            }
            if output.is_some() {
                b.output = output;
            }
            b.live.clear();
        }
    }

    /// A turn boundary: later id-less deltas start new blocks. With `finished`, blocks
    /// still streaming are complete (the run is over).
    pub(crate) fn turn_boundary(&mut self, finished: bool) {
        self.idx.active_assistant = None;
        self.idx.active_reasoning = None;
        if finished {
            for i in std::mem::take(&mut self.idx.streaming) {
                if let Some(Block::Assistant(t) | Block::Reasoning(t)) = self.blocks.get_mut(i)
                    && t.status == StreamStatus::Streaming
                {
                    t.status = StreamStatus::Complete;
                }
            }
        }
    }

    // ---- approvals and notices ---------------------------------------------------------

    /// `permission.request`: appends an actionable approval card.
    pub(crate) fn permission_request(&mut self, ev: &RawEvent) {
        let p = &ev.payload;
        let question = ev.kind == "question.asked";
        let request_id = id_at(p, &[&["request_id"], &["id"], &["requestID"]]);
        let tool = string_at(p, &[&["permission"], &["tool"], &["tool", "name"], &["category"]]);
        let summary = str_at(
            p,
            &[&["summary"], &["metadata", "command"], &["metadata", "filepath"], &["title"]],
        )
        .map(str::to_owned)
        .or_else(|| {
            p.get("questions")
                .and_then(Value::as_array)
                .and_then(|q| q.first())
                .and_then(|q| str_at(q, &[&["question"], &["header"]]))
                .map(str::to_owned)
        })
        .map(|s| one_line(&s));
        let patterns = p
            .get("patterns")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(one_line).collect())
            .unwrap_or_default();
        let call_id = string_at(p, &[&["tool", "callID"], &["call_id"]]);
        if let Some(&i) = request_id.as_ref().and_then(|r| self.idx.approvals.get(r))
            && let Some(Block::Approval(b)) = self.blocks.get(i)
            && b.state == ApprovalState::Pending
        {
            return; // a repeated request for a pending card changes nothing
        }
        let rid = request_id.clone();
        let i = self.push(|block_id| {
            Block::Approval(ApprovalBlock {
                block_id,
                request_id: rid,
                approval: if question { ApprovalKind::Question } else { ApprovalKind::Permission },
                tool,
                summary,
                patterns,
                call_id,
                state: ApprovalState::Pending,
            })
        });
        if let Some(r) = request_id {
            self.idx.approvals.insert(r, i);
        }
    }

    /// `permission.response`: resolves the matching card (or records a resolved one).
    pub(crate) fn permission_response(&mut self, ev: &RawEvent) {
        let p = &ev.payload;
        let request_id = id_at(p, &[&["request_id"], &["requestID"], &["id"]]);
        let decision = match ev.kind.as_str() {
            "question.replied" => "answered".to_owned(),
            "question.rejected" => "rejected".to_owned(),
            _ => str_at(p, &[&["decision"], &["reply"], &["response"]])
                .map_or_else(|| "unknown".to_owned(), one_line),
        };
        let state = ApprovalState::Resolved { decision };
        if let Some(&i) = request_id.as_ref().and_then(|r| self.idx.approvals.get(r))
            && let Some(Block::Approval(b)) = self.blocks.get_mut(i)
        {
            b.state = state;
            return;
        }
        let question = ev.kind.starts_with("question.");
        let rid = request_id.clone();
        let i = self.push(|block_id| {
            Block::Approval(ApprovalBlock {
                block_id,
                request_id: rid,
                approval: if question { ApprovalKind::Question } else { ApprovalKind::Permission },
                tool: None,
                summary: None,
                patterns: Vec::new(),
                call_id: None,
                state,
            })
        });
        if let Some(r) = request_id {
            self.idx.approvals.insert(r, i);
        }
    }

    /// Appends a notice card.
    pub(crate) fn notice(&mut self, ev: &RawEvent, level: NoticeLevel, message: &str) {
        let event_id = ev.id.clone();
        let message = one_line(message);
        self.push(|block_id| Block::Notice(NoticeBlock { block_id, event_id, level, message }));
    }
}

/// Bytes of `text` not owned by a part; parts always follow them.
fn untracked(b: &TextBlock) -> usize {
    let tracked: usize = b.parts.iter().map(|(_, l)| l).sum();
    b.text.len().saturating_sub(tracked)
}

fn set_part(b: &mut TextBlock, pid: &str, text: &str) {
    let mut start = untracked(b);
    for k in 0..b.parts.len() {
        let (id, len) = &b.parts[k];
        if id == pid {
            let len = *len;
            b.text.replace_range(start..start + len, text);
            b.parts[k].1 = text.len();
            return;
        }
        start += len;
    }
    // A new part goes after the text the block already has (untracked text first).
    b.text.push_str(text);
    b.parts.push((pid.to_owned(), text.len()));
}

fn append_part(b: &mut TextBlock, pid: &str, delta: &str) {
    if let Some((id, len)) = b.parts.last_mut()
        && id == pid
    {
        b.text.push_str(delta);
        *len += delta.len();
        return;
    }
    let mut end = untracked(b);
    for k in 0..b.parts.len() {
        end += b.parts[k].1;
        if b.parts[k].0 == pid {
            b.text.insert_str(end, delta);
            b.parts[k].1 += delta.len();
            return;
        }
    }
    b.text.push_str(delta);
    b.parts.push((pid.to_owned(), delta.len()));
}

/// What a tool call or result says, whichever engine shape it has.
#[derive(Debug, Default)]
struct ToolFacts {
    call_id: Option<String>,
    tool: Option<String>,
    title: Option<String>,
    summary: Option<String>,
    input: Option<String>,
    output: Option<String>,
    error: Option<String>,
    artifact: Option<Value>,
    failed: bool,
}

impl ToolFacts {
    fn call(ev: &RawEvent) -> Self {
        let p = &ev.payload;
        if let Some(part) = p.get("part") {
            return Self::kilo(part);
        }
        Self {
            call_id: id_at(p, &[&["call_id"], &["call", "id"], &["exec_id"]]),
            tool: string_at(
                p,
                &[
                    &["tool"],
                    &["tool", "name"],
                    &["call", "function", "name"],
                    &["call", "name"],
                    &["tool_name"],
                ],
            ),
            title: string_at(p, &[&["display", "title"]]),
            input: at(p, &["call", "function", "arguments"])
                .or_else(|| at(p, &["call", "arguments"]))
                .or_else(|| at(p, &["tool", "args"]))
                .or_else(|| at(p, &["command"]))
                .and_then(as_text),
            ..Self::default()
        }
    }

    fn result(ev: &RawEvent) -> Self {
        let p = &ev.payload;
        if let Some(part) = p.get("part") {
            return Self::kilo(part);
        }
        let failed = bool_at(p, &["error"]) == Some(true)
            || bool_at(p, &["success"]) == Some(false)
            || bool_at(p, &["result", "ok"]) == Some(false)
            || matches!(
                str_at(p, &[&["status"], &["tool", "status"]]),
                Some("error" | "failed" | "failure")
            )
            || p.get("exit_code").and_then(Value::as_i64).is_some_and(|c| c != 0);
        let output = at(p, &["display", "detail"])
            .or_else(|| at(p, &["tool", "output"]))
            .or_else(|| at(p, &["message", "content"]))
            .or_else(|| at(p, &["result"]))
            .and_then(as_text);
        let error = if failed {
            str_at(p, &[&["result", "error"], &["error_message"], &["message"]]).map(one_line)
        } else {
            None
        };
        Self {
            call_id: id_at(p, &[&["call_id"], &["result", "id"], &["exec_id"]]),
            tool: string_at(
                p,
                &[
                    &["tool"],
                    &["tool", "name"],
                    &["message", "name"],
                    &["result", "name"],
                    &["tool_name"],
                ],
            ),
            title: string_at(p, &[&["display", "title"]]),
            summary: str_at(p, &[&["display", "summary"], &["result", "summary"]]).map(one_line),
            artifact: at(p, &["display", "detail_artifact"])
                .or_else(|| p.get("artifact_ref"))
                .filter(|a| a.is_object())
                .map(crate::redact::redacted),
            input: None,
            output,
            error,
            failed,
        }
    }

    fn kilo(part: &Value) -> Self {
        let state = part.get("state").unwrap_or(&Value::Null);
        let status = str_at(state, &[&["status"]]);
        let failed = status == Some("error");
        let output = if status == Some("completed") {
            state.get("output").and_then(as_text)
        } else {
            at(state, &["metadata", "output"]).and_then(as_text)
        };
        Self {
            call_id: string_at(part, &[&["callID"], &["id"]]),
            tool: string_at(part, &[&["tool"]]),
            title: string_at(state, &[&["title"]]),
            summary: None,
            input: state
                .get("input")
                .filter(|v| v.as_object().is_none_or(|o| !o.is_empty()))
                .and_then(as_text),
            output,
            error: if failed { str_at(state, &[&["error"]]).map(one_line) } else { None },
            artifact: None,
            failed,
        }
    }
}
