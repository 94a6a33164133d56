//! The transcript lane: user, assistant and reasoning blocks keyed by message id + turn
//! (tool, approval and notice blocks in the submodules).

use std::collections::HashMap;
use std::num::NonZeroU64;

use bb_payload::{LooseObj, LooseStr};
use serde::Deserialize;

mod acp;
mod approvals;
mod json;
mod keyed;
mod tools;
mod view;

pub(crate) use approvals::WITHDRAWN;
pub use json::BlocksJson;

use keyed::KeyIndex;

use super::arena::{Arena, TextRef};
use super::blocks::{Block, BlockId, SentText, StreamStatus, TextBlock, UserBlock, UserText};
use crate::breadboard::BbText;
use crate::event::RawEvent;
use crate::kilo;
use crate::redact::redact_log_line;
use crate::truncate::{BodyStore, Limits, Preview};

/// Longest notice or summary line kept in a card, in bytes.
const LINE_CAP: usize = 2048;

/// The transcript lane. It serializes as `{"blocks": [...]}` (`json.rs`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transcript {
    /// The blocks, in event order.
    pub blocks: Vec<Block>,
    idx: Index,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Index {
    next_block: u64,
    /// The ids user and text blocks carry, and the Kilo part ids.
    arena: Arena,
    /// Assistant and reasoning blocks by message id + turn, user blocks by message id.
    assistant: KeyIndex,
    reasoning: KeyIndex,
    user: KeyIndex,
    /// Kilo part ids (in the arena) with their block, in order of first sight: a part's
    /// number (what its spans carry) is its position + 1.
    parts: Vec<(TextRef, usize)>,
    /// `parts` by part id.
    part_index: KeyIndex,
    tools: HashMap<String, usize>,
    open_tools: Vec<usize>,
    approvals: HashMap<String, usize>,
    /// ACP context compactions by id: their notice card and state.
    compactions: HashMap<String, acp::Compaction>,
    active_assistant: Option<usize>,
    active_reasoning: Option<usize>,
    streaming: Vec<usize>,
    /// The exchange (a prompt and its reply) events belong to now: it moves on at each user
    /// message and each run end. Scopes the keys of engines whose message ids repeat.
    exchange: u64,
    /// The webview's `messageId` of the prompt the events being reduced answer.
    prompt: Option<String>,
    /// The same id in the arena, once a block carried it (its blocks share the bytes).
    prompt_ref: Option<TextRef>,
    /// The session whose prompt event is being reduced, when not the view's own (a
    /// sub-agent's, shown on this session's tab).
    owner: Option<String>,
    /// The first user block (the session's first prompt).
    first_user: Option<usize>,
    /// Per block, whether it changed since the last updates were taken; the changed ones.
    changed: Vec<bool>,
    changed_list: Vec<usize>,
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
        let i = self.blocks.len() - 1;
        self.idx.changed.push(false);
        self.mark(i);
        i
    }

    /// Gives back the spare room of the block list and its per-block lists.
    pub(crate) fn release_spare(&mut self) {
        self.blocks.shrink_to_fit();
        self.idx.changed.shrink_to_fit();
        self.idx.parts.shrink_to_fit();
        if self.idx.changed_list.is_empty() {
            self.idx.changed_list = Vec::new();
        }
    }

    /// Notes that block `i` changed (its update is due).
    fn mark(&mut self, i: usize) {
        if let Some(flag) = self.idx.changed.get_mut(i)
            && !*flag
        {
            *flag = true;
            self.idx.changed_list.push(i);
        }
    }

    /// Block `i`, to change it.
    fn block_mut(&mut self, i: usize) -> Option<&mut Block> {
        self.mark(i);
        self.blocks.get_mut(i)
    }

    /// The blocks changed since the last call, in order, marked unchanged again.
    pub(crate) fn take_changed(&mut self) -> Vec<usize> {
        let mut list = std::mem::take(&mut self.idx.changed_list);
        for &i in &list {
            if let Some(flag) = self.idx.changed.get_mut(i) {
                *flag = false;
            }
        }
        list.sort_unstable();
        list
    }

    /// The webview's `messageId` of the prompt the next events answer.
    pub(crate) fn set_prompt(&mut self, prompt: Option<&str>) {
        if self.idx.prompt.as_deref() != prompt {
            self.idx.prompt = prompt.map(str::to_owned);
            self.idx.prompt_ref = None;
        }
    }

    /// The session whose prompt events are reduced next, when not the view's own.
    pub(crate) fn set_owner(&mut self, owner: Option<&str>) {
        if self.idx.owner.as_deref() != owner {
            self.idx.owner = owner.map(str::to_owned);
        }
    }

    /// The key of request `id` among the approval cards: a sub-agent's is scoped by its
    /// session (its ids may repeat the view's own).
    fn approval_key(&self, id: String) -> String {
        match &self.idx.owner {
            Some(owner) => format!("{owner}\u{1f}{id}"),
            None => id,
        }
    }

    /// The string an arena reference names: a block's message, event or prompt id, or a
    /// user message's preview text.
    pub fn text_at(&self, r: Option<TextRef>) -> Option<&str> {
        r.map(|r| self.idx.arena.get(r))
    }

    /// Keeps `s` in the arena.
    fn keep(&mut self, s: Option<&str>) -> Option<TextRef> {
        s.map(|s| self.idx.arena.push(s))
    }

    /// Keeps a user message's preview, its text in the arena.
    fn keep_preview(&mut self, p: Preview) -> UserText {
        UserText {
            text: self.idx.arena.push(&p.text),
            truncated: p.truncated,
            total_bytes: p.total_bytes,
            total_lines: p.total_lines,
            body_ref: p.body_ref.map(String::into_boxed_str),
        }
    }

    /// Gives user block `i` its first text (a known user message's text is never rewritten
    /// by a repeated event).
    fn fill_user_text(&mut self, i: usize, text: &str, bodies: &mut BodyStore) {
        if matches!(self.blocks.get(i), Some(Block::User(b)) if b.text.is_none()) {
            let kept = self.keep_preview(bodies.preview(text, Limits::default()));
            if let Some(Block::User(b)) = self.block_mut(i) {
                b.text = Some(kept);
            }
        }
    }

    /// Replaces user block `i`'s text; the old text's bytes become garbage, and the arena is
    /// compacted once more than half of it is.
    fn set_user_text(&mut self, i: usize, p: Preview) {
        let kept = self.keep_preview(p);
        let old = match self.block_mut(i) {
            Some(Block::User(b)) => b.text.replace(kept),
            _ => None,
        };
        if let Some(old) = old
            && self.idx.arena.release(old.text)
        {
            self.compact();
        }
    }

    /// Moves every string still referred to into a new arena (in block order), dropping the
    /// garbage.
    fn compact(&mut self) {
        let mut refs: Vec<&mut TextRef> = Vec::new();
        for block in &mut self.blocks {
            match block {
                Block::User(b) => {
                    let UserBlock { event_id, message_id, text, prompt_id, .. } = &mut **b;
                    refs.extend([event_id, message_id, prompt_id].into_iter().flatten());
                    refs.extend(text.as_mut().map(|t| &mut t.text));
                }
                Block::Assistant(b) | Block::Reasoning(b) => {
                    let TextBlock { message_id, prompt_id, .. } = &mut **b;
                    refs.extend([message_id, prompt_id].into_iter().flatten());
                }
                Block::Tool(_) | Block::Approval(_) | Block::Notice(_) => {}
            }
        }
        refs.extend(self.idx.parts.iter_mut().map(|(id, _)| id));
        self.idx.arena = self.idx.arena.compact(refs.into_iter());
        self.idx.prompt_ref = None;
    }

    /// The prompt the events being reduced answer, as a block carries it.
    fn prompt_ref(&mut self) -> Option<TextRef> {
        if self.idx.prompt_ref.is_none()
            && let Some(p) = &self.idx.prompt
        {
            self.idx.prompt_ref = Some(self.idx.arena.push(p));
        }
        self.idx.prompt_ref
    }

    /// The text of the session's first prompt.
    pub fn first_prompt(&self) -> Option<&str> {
        match self.blocks.get(self.idx.first_user?) {
            Some(Block::User(b)) => self.text_at(b.text.as_ref().map(|t| t.text)),
            _ => None,
        }
    }

    fn text_block(&mut self, i: usize) -> Option<&mut TextBlock> {
        match self.block_mut(i) {
            Some(Block::Assistant(b) | Block::Reasoning(b)) => Some(&mut **b),
            _ => None,
        }
    }

    /// The key scope of an engine's message ids: BreadBoard and ACP reuse them across
    /// replies (the demo replays the same ids every turn), so their keys hold the exchange.
    fn scope(&self, ev: &RawEvent) -> u64 {
        if ev.engine == crate::event::Engine::Kilo { 0 } else { self.idx.exchange }
    }

    /// The assistant (or reasoning) block indexed for a message id + turn.
    fn text_block_at(
        &self,
        reasoning: bool,
        mid: &str,
        turn: Option<i64>,
        scope: u64,
    ) -> Option<usize> {
        let map = if reasoning { &self.idx.reasoning } else { &self.idx.assistant };
        map.get((mid, turn, scope), |i| match self.blocks.get(i) {
            Some(Block::Assistant(b)) if !reasoning => {
                self.text_at(b.message_id) == Some(mid) && b.turn == turn && b.scope == scope
            }
            Some(Block::Reasoning(b)) if reasoning => {
                self.text_at(b.message_id) == Some(mid) && b.turn == turn && b.scope == scope
            }
            _ => false,
        })
    }

    /// The user block indexed for a message id.
    fn user_block_at(&self, mid: &str) -> Option<usize> {
        self.idx.user.get(mid, |i| {
            matches!(self.blocks.get(i), Some(Block::User(b)) if self.text_at(b.message_id) == Some(mid))
        })
    }

    /// The assistant (or reasoning) block for a message id + turn, created when missing.
    /// Without a message id, the active streaming block of the same turn is used.
    fn text_block_for(
        &mut self,
        reasoning: bool,
        message_id: Option<&str>,
        turn: Option<i64>,
        scope: u64,
    ) -> usize {
        if let Some(i) = message_id.and_then(|m| self.text_block_at(reasoning, m, turn, scope)) {
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
        let prompt_id = self.prompt_ref();
        let mid = self.keep(message_id);
        let block = |block_id| TextBlock {
            block_id,
            message_id: mid,
            turn,
            text: String::new(),
            status: StreamStatus::Streaming,
            error: None,
            prompt_id,
            parts: Vec::new(),
            scope,
            sent: SentText::default(),
        };
        let i = if reasoning {
            self.push(|id| Block::Reasoning(Box::new(block(id))))
        } else {
            self.push(|id| Block::Assistant(Box::new(block(id))))
        };
        if let Some(m) = message_id {
            let map = if reasoning { &mut self.idx.reasoning } else { &mut self.idx.assistant };
            map.insert((m, turn, scope), i);
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
    /// Returns whether it is a new message (Kilo repeats a message's `message.updated`).
    pub(crate) fn user_message(&mut self, ev: &RawEvent, bodies: &mut BodyStore) -> bool {
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
            if let Some(t) = text {
                self.fill_user_text(i, t, bodies);
            }
            return false;
        }
        let text = text.map(|t| bodies.preview(t, Limits::default()));
        self.push_user(ev, message_id, text);
        true
    }

    /// Appends a user block: a new exchange begins.
    pub(crate) fn push_user(
        &mut self,
        ev: &RawEvent,
        message_id: Option<&str>,
        text: Option<Preview>,
    ) -> usize {
        let text = text.map(|p| self.keep_preview(p));
        self.idx.exchange += 1;
        let turn = ev.turn;
        let event_id = self.keep(ev.id.as_deref());
        let prompt_id = self.prompt_ref();
        let key = message_id;
        let message_id = self.keep(message_id);
        let i = self.push(|block_id| {
            Block::User(Box::new(UserBlock {
                block_id,
                event_id,
                message_id,
                turn,
                text,
                prompt_id,
            }))
        });
        if let Some(m) = key {
            self.idx.user.insert(m, i);
        }
        if self.idx.first_user.is_none() {
            self.idx.first_user = Some(i);
        }
        i
    }

    // ---- assistant / reasoning --------------------------------------------------------

    /// BreadBoard assistant stream: `assistant_message`, `assistant_delta`,
    /// `assistant.message.start|delta|end`.
    pub(crate) fn breadboard_assistant(&mut self, ev: &RawEvent) {
        let f = BbText::of(&ev.payload);
        let mid = f.message_id();
        let scope = self.scope(ev);
        match &*ev.kind {
            "assistant.message.start" => {
                self.text_block_for(false, mid, ev.turn, scope);
            }
            "assistant.message.delta" | "assistant_delta" => {
                let delta = if ev.kind == "assistant_delta" { &f.text } else { &f.delta };
                let delta = delta.get().unwrap_or_default();
                let i = self.text_block_for(false, mid, ev.turn, scope);
                if let Some(b) = self.text_block(i) {
                    b.text.push_str(delta);
                }
            }
            "assistant.message.end" => {
                let i = self.text_block_for(false, mid, ev.turn, scope);
                if let Some(b) = self.text_block(i) {
                    b.settle(StreamStatus::Complete);
                }
            }
            _ => {
                // `assistant_message`: the whole text. Empty text (tool-call-only reply)
                // finalizes a streamed block but opens none.
                let text = kilo::non_empty(&f.text).unwrap_or_default();
                let existing = match mid {
                    Some(m) => self.text_block_at(false, m, ev.turn, scope),
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
                    None => self.text_block_for(false, mid, ev.turn, scope),
                };
                if let Some(b) = self.text_block(i) {
                    if !text.is_empty() {
                        b.rewrite(text);
                    }
                    b.settle(StreamStatus::Complete);
                }
            }
        }
    }

    /// BreadBoard reasoning deltas.
    pub(crate) fn breadboard_reasoning(&mut self, ev: &RawEvent) {
        let f = BbText::of(&ev.payload);
        let mid = f.message_id();
        let delta = f.delta.get().or_else(|| f.text.get()).unwrap_or_default();
        let scope = self.scope(ev);
        let i = self.text_block_for(true, mid, ev.turn, scope);
        if let Some(b) = self.text_block(i) {
            b.text.push_str(delta);
        }
    }

    /// Kilo `message.updated` of an assistant message: its state (streaming, complete, error).
    pub(crate) fn kilo_message(&mut self, ev: &RawEvent) {
        let fields = kilo::kept::<kilo::InfoFields<'_>>(&ev.payload);
        let Some(info) = fields.info.get() else { return };
        let Some(mid) = kilo::non_empty(&info.id) else {
            return;
        };
        let i = self.text_block_for(false, Some(mid), None, 0);
        let aborted = info.error.as_ref().and_then(|e| e.get()).is_some_and(|e| e.aborted());
        let error = info.error.as_ref().filter(|_| !aborted).map(|e| {
            match e.get().and_then(|e| e.message()) {
                Some(msg) => one_line(msg),
                // An error without a message is shown whole: read from the tree (rare).
                None => one_line(&ev.payload["info"]["error"].to_string()),
            }
        });
        let completed = info.time.get().is_some_and(|t| t.completed.is_some());
        if let Some(b) = self.text_block(i) {
            if aborted {
                b.settle(StreamStatus::Stopped);
            } else if let Some(err) = error {
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
        let fields = kilo::kept::<kilo::TextPart<'_>>(&ev.payload);
        let Some(part) = fields.part.get() else { return };
        let (Some(pid), Some(mid)) = (kilo::non_empty(&part.id), kilo::non_empty(&part.message_id))
        else {
            return;
        };
        let text = kilo::non_empty(&part.text).unwrap_or_default();
        if let Some(u) = self.user_block_at(mid) {
            self.fill_user_text(u, text, bodies);
            return;
        }
        let (i, part) = self.part_block(reasoning, pid, mid);
        if let Some(b) = self.text_block(i) {
            set_part(b, part, text);
        }
    }

    /// Kilo `message.part.delta`: appends to the named part's field (only `text` is shown).
    pub(crate) fn kilo_delta(&mut self, ev: &RawEvent) {
        let d = kilo::kept::<kilo::Delta<'_>>(&ev.payload);
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
        let (arena, parts) = (&self.idx.arena, &self.idx.parts);
        let found = self
            .idx
            .part_index
            .get(pid, |n| parts.get(n).is_some_and(|&(id, _)| arena.get(id) == pid));
        if let Some(n) = found
            && let Some(&(_, i)) = self.idx.parts.get(n)
        {
            return (i, part_number(n));
        }
        let i = self.text_block_for(reasoning, Some(mid), None, 0);
        let n = self.idx.parts.len();
        let id = self.idx.arena.push(pid);
        self.idx.parts.push((id, i));
        self.idx.part_index.insert(pid, n);
        (i, part_number(n))
    }

    /// A turn boundary: later id-less deltas start new blocks. With `end`, the run is
    /// over: blocks still streaming are settled with that status (complete, or stopped),
    /// and later replies are a new exchange.
    pub(crate) fn turn_boundary(&mut self, end: Option<StreamStatus>) {
        self.idx.active_assistant = None;
        self.idx.active_reasoning = None;
        if let Some(status) = end {
            self.idx.exchange += 1;
            for i in std::mem::take(&mut self.idx.streaming) {
                if matches!(self.blocks.get(i), Some(Block::Assistant(t) | Block::Reasoning(t)) if t.status == StreamStatus::Streaming)
                    && let Some(Block::Assistant(t) | Block::Reasoning(t)) = self.block_mut(i)
                {
                    t.settle(status);
                }
            }
        }
    }
}

/// The number the spans of the `n`th part seen carry.
fn part_number(n: usize) -> NonZeroU64 {
    NonZeroU64::MIN.saturating_add(n as u64)
}

/// Brings the spans up to date with `text`: text written without a part id (BreadBoard
/// deltas, a whole-message replace) is only ever appended, so whatever the spans do not
/// cover is one untracked span at the end.
fn sync_spans(b: &mut TextBlock) {
    let tracked: usize = b.parts.iter().map(|(_, l)| l).sum();
    if tracked > b.text.len() {
        // Cannot happen while every write goes through here; never slice on a stale span.
        b.parts.clear();
        push_span(&mut b.parts, (None, b.text.len()));
    } else if tracked < b.text.len() {
        push_span(&mut b.parts, (None, b.text.len() - tracked));
    }
}

/// Adds a span to a block's list. The first gets room for itself alone: most messages have
/// one part, and `Vec`'s first growth makes room for four (48 bytes a block left unused while
/// it streams, for as long as it never ends).
fn push_span(parts: &mut Vec<(Option<NonZeroU64>, usize)>, span: (Option<NonZeroU64>, usize)) {
    if parts.capacity() == 0 {
        parts.reserve_exact(1);
    }
    parts.push(span);
}

fn set_part(b: &mut TextBlock, part: NonZeroU64, text: &str) {
    sync_spans(b);
    let mut start = 0;
    let spans = b.parts.len();
    for (n, (id, len)) in b.parts.iter_mut().enumerate() {
        if *id == Some(part) {
            let old = &b.text[start..start + *len];
            if old == text {
                return;
            }
            // Only the last span growing at its end is an append; anything else rewrites.
            if !(n + 1 == spans && text.starts_with(old)) {
                b.sent.rewritten = true;
            }
            b.text.replace_range(start..start + *len, text);
            *len = text.len();
            return;
        }
        start += *len;
    }
    b.text.push_str(text);
    push_span(&mut b.parts, (Some(part), text.len()));
}

fn append_part(b: &mut TextBlock, part: NonZeroU64, delta: &str) {
    sync_spans(b);
    let mut end = 0;
    let spans = b.parts.len();
    for (n, (id, len)) in b.parts.iter_mut().enumerate() {
        end += *len;
        if *id == Some(part) {
            if n + 1 != spans && !delta.is_empty() {
                // Text inserted before another part's: not an append.
                b.sent.rewritten = true;
            }
            b.text.insert_str(end, delta);
            *len += delta.len();
            return;
        }
    }
    b.text.push_str(delta);
    push_span(&mut b.parts, (Some(part), delta.len()));
}
