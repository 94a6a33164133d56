//! The transcript lane: user, assistant and reasoning blocks keyed by message id + turn
//! (tool, approval and notice blocks in the submodules).

use std::collections::HashMap;
use std::num::NonZeroU64;

use bb_payload::{LooseObj, LooseStr};
use serde::{Deserialize, Serialize};
use serde_json::Value;

mod acp;
mod approvals;
mod keyed;
mod tools;

use keyed::KeyIndex;

use super::blocks::{Block, BlockId, StreamStatus, TextBlock, UserBlock};
use crate::event::RawEvent;
use crate::json::str_at;
use crate::kilo;
use crate::redact::redact_log_line;
use crate::truncate::{BodyStore, Limits};

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
    /// Assistant and reasoning blocks by message id + turn, user blocks by message id.
    assistant: KeyIndex,
    reasoning: KeyIndex,
    user: KeyIndex,
    /// Kilo part id → its block and the number its spans carry (the id is kept once, here).
    parts: HashMap<Box<str>, (usize, NonZeroU64)>,
    parts_seen: u64,
    tools: HashMap<String, usize>,
    open_tools: Vec<usize>,
    approvals: HashMap<String, usize>,
    /// ACP context compactions by id: their notice card and state.
    compactions: HashMap<String, acp::Compaction>,
    active_assistant: Option<usize>,
    active_reasoning: Option<usize>,
    streaming: Vec<usize>,
}

/// The message id of a BreadBoard assistant event (`item_id` on the agent path,
/// `message_id` in replays). Shared with the batcher so coalescing uses the same key.
pub(crate) fn bb_message_id(p: &Value) -> Option<&str> {
    str_at(p, &[&["item_id"], &["message_id"]])
}

/// A user message (BreadBoard `user_message`, Kilo user `message.updated`): its id
/// (`info.id`, else `message_id`, else `id`) and text.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct UserFields<'a> {
    #[serde(borrow)]
    info: LooseObj<UserInfo<'a>>,
    #[serde(borrow)]
    message_id: LooseStr<'a>,
    #[serde(borrow)]
    id: LooseStr<'a>,
    #[serde(borrow)]
    text: LooseStr<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct UserInfo<'a> {
    #[serde(borrow)]
    id: LooseStr<'a>,
}

fn one_line(s: &str) -> String {
    redact_log_line(s, LINE_CAP)
}

impl Transcript {
    fn push(&mut self, make: impl FnOnce(BlockId) -> Block) -> usize {
        self.idx.next_block += 1;
        let id = BlockId(self.idx.next_block);
        self.blocks.push(make(id));
        self.blocks.len() - 1
    }

    fn text_block(&mut self, i: usize) -> Option<&mut TextBlock> {
        match self.blocks.get_mut(i) {
            Some(Block::Assistant(b) | Block::Reasoning(b)) => Some(&mut **b),
            _ => None,
        }
    }

    /// The assistant (or reasoning) block indexed for a message id + turn.
    fn text_block_at(&self, reasoning: bool, mid: &str, turn: Option<i64>) -> Option<usize> {
        let map = if reasoning { &self.idx.reasoning } else { &self.idx.assistant };
        map.get((mid, turn), |i| match self.blocks.get(i) {
            Some(Block::Assistant(b)) if !reasoning => {
                b.message_id.as_deref() == Some(mid) && b.turn == turn
            }
            Some(Block::Reasoning(b)) if reasoning => {
                b.message_id.as_deref() == Some(mid) && b.turn == turn
            }
            _ => false,
        })
    }

    /// The user block indexed for a message id.
    fn user_block_at(&self, mid: &str) -> Option<usize> {
        self.idx.user.get(mid, |i| {
            matches!(self.blocks.get(i), Some(Block::User(b)) if b.message_id.as_deref() == Some(mid))
        })
    }

    /// The assistant (or reasoning) block for a message id + turn, created when missing.
    /// Without a message id, the active streaming block of the same turn is used.
    fn text_block_for(
        &mut self,
        reasoning: bool,
        message_id: Option<&str>,
        turn: Option<i64>,
    ) -> usize {
        if let Some(i) = message_id.and_then(|m| self.text_block_at(reasoning, m, turn)) {
            return i;
        }
        if message_id.is_none() {
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
            self.push(|id| Block::Reasoning(Box::new(block(id))))
        } else {
            self.push(|id| Block::Assistant(Box::new(block(id))))
        };
        if let Some(m) = message_id {
            let map = if reasoning { &mut self.idx.reasoning } else { &mut self.idx.assistant };
            map.insert((m, turn), i);
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
        let f: UserFields<'_> = ev.payload.read();
        let message_id = f
            .info
            .get()
            .and_then(|i| kilo::non_empty(&i.id))
            .or_else(|| kilo::non_empty(&f.message_id))
            .or_else(|| kilo::non_empty(&f.id));
        let text = kilo::non_empty(&f.text);
        if let Some(i) = message_id.and_then(|m| self.user_block_at(m)) {
            // Known user message: only a first text may be filled in, never rewritten.
            if let (Some(Block::User(b)), Some(t)) = (self.blocks.get_mut(i), text)
                && b.text.is_none()
            {
                b.text = Some(bodies.preview(t, Limits::default()));
            }
            return;
        }
        let text = text.map(|t| bodies.preview(t, Limits::default()));
        let (event_id, turn) = (ev.id.clone(), ev.turn);
        let mid = message_id.map(str::to_owned);
        let i = self.push(|block_id| {
            Block::User(Box::new(UserBlock { block_id, event_id, message_id: mid, turn, text }))
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
                    b.settle(StreamStatus::Complete);
                }
            }
            _ => {
                // `assistant_message`: the whole text. Empty text (tool-call-only reply)
                // finalizes a streamed block but opens none.
                let text = str_at(p, &[&["text"]]).unwrap_or_default();
                let existing = match mid {
                    Some(m) => self.text_block_at(false, m, ev.turn),
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
                    b.settle(StreamStatus::Complete);
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
        let fields: kilo::InfoFields<'_> = ev.payload.read();
        let Some(info) = fields.info.get() else { return };
        let Some(mid) = kilo::non_empty(&info.id) else {
            return;
        };
        let i = self.text_block_for(false, Some(mid), None);
        let error = info.error.as_ref().map(|e| match e.get().and_then(|e| e.message()) {
            Some(msg) => one_line(msg),
            // An error without a message is shown whole: read from the tree (rare).
            None => one_line(&ev.payload["info"]["error"].to_string()),
        });
        let completed = info.time.get().is_some_and(|t| t.completed.is_some());
        if let Some(b) = self.text_block(i) {
            if let Some(err) = error {
                b.settle(StreamStatus::Error);
                b.error = Some(err);
            } else if completed && b.status == StreamStatus::Streaming {
                b.settle(StreamStatus::Complete);
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
        let fields: kilo::TextPart<'_> = ev.payload.read();
        let Some(part) = fields.part.get() else { return };
        let (Some(pid), Some(mid)) = (kilo::non_empty(&part.id), kilo::non_empty(&part.message_id))
        else {
            return;
        };
        let text = kilo::non_empty(&part.text).unwrap_or_default();
        if let Some(u) = self.user_block_at(mid) {
            if let Some(Block::User(b)) = self.blocks.get_mut(u)
                && b.text.is_none()
            {
                b.text = Some(bodies.preview(text, Limits::default()));
            }
            return;
        }
        let (i, part) = self.part_block(reasoning, pid, mid);
        if let Some(b) = self.text_block(i) {
            set_part(b, part, text);
        }
    }

    /// Kilo `message.part.delta`: appends to the named part's field (only `text` is shown).
    pub(crate) fn kilo_delta(&mut self, ev: &RawEvent) {
        let d: kilo::Delta<'_> = ev.payload.read();
        if kilo::non_empty(&d.field).is_some_and(|f| f != "text") {
            return;
        }
        let (Some(pid), Some(mid)) = (kilo::non_empty(&d.part_id), kilo::non_empty(&d.message_id))
        else {
            return;
        };
        if self.user_block_at(mid).is_some() {
            return;
        }
        let delta = d.delta.get().unwrap_or_default();
        let (i, part) = self.part_block(false, pid, mid);
        if let Some(b) = self.text_block(i) {
            append_part(b, part, delta);
        }
    }

    /// The block of a Kilo part and the part's number, both assigned on first sight.
    fn part_block(&mut self, reasoning: bool, pid: &str, mid: &str) -> (usize, NonZeroU64) {
        if let Some(&found) = self.idx.parts.get(pid) {
            return found;
        }
        let i = self.text_block_for(reasoning, Some(mid), None);
        let part = NonZeroU64::MIN.saturating_add(self.idx.parts_seen);
        self.idx.parts_seen += 1;
        self.idx.parts.insert(pid.into(), (i, part));
        (i, part)
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
                    t.settle(StreamStatus::Complete);
                }
            }
        }
    }
}

/// Brings the spans up to date with `text`: text written without a part id (BreadBoard
/// deltas, a whole-message replace) is only ever appended, so whatever the spans do not
/// cover is one untracked span at the end.
fn sync_spans(b: &mut TextBlock) {
    let tracked: usize = b.parts.iter().map(|(_, l)| l).sum();
    if tracked > b.text.len() {
        // Cannot happen while every write goes through here; never slice on a stale span.
        b.parts.clear();
        b.parts.push((None, b.text.len()));
    } else if tracked < b.text.len() {
        b.parts.push((None, b.text.len() - tracked));
    }
}

fn set_part(b: &mut TextBlock, part: NonZeroU64, text: &str) {
    sync_spans(b);
    let mut start = 0;
    for (id, len) in &mut b.parts {
        if *id == Some(part) {
            b.text.replace_range(start..start + *len, text);
            *len = text.len();
            return;
        }
        start += *len;
    }
    b.text.push_str(text);
    b.parts.push((Some(part), text.len()));
}

fn append_part(b: &mut TextBlock, part: NonZeroU64, delta: &str) {
    sync_spans(b);
    let mut end = 0;
    for (id, len) in &mut b.parts {
        end += *len;
        if *id == Some(part) {
            b.text.insert_str(end, delta);
            *len += delta.len();
            return;
        }
    }
    b.text.push_str(delta);
    b.parts.push((Some(part), delta.len()));
}
