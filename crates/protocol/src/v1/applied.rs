//! What a webview holds after applying `WebviewUpdate`s: the reference for how updates are
//! applied (upserts by key, text deltas by offset), for Rust webviews and for tests that hold
//! a bridge's updates to its own view. The sidebar page applies them the same way.

use std::collections::BTreeMap;

use super::updates::{
    AssistantMessage, FileChanged, PermissionRequest, Run, Status, Task, Todos, ToolState,
    UnknownEvent, UserMessage, WebviewUpdate,
};

/// Unknown events a webview keeps (the bridge's debug lane keeps as many).
pub const UNKNOWN_KEPT: usize = 256;

/// One block of the chat, as the updates made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppliedBlock {
    /// A user message.
    User(UserMessage<'static>),
    /// An assistant or reasoning message: its state (`text: None`) and its text.
    Text(AssistantMessage<'static>, String),
    /// A tool call.
    Tool(ToolState<'static>),
    /// An approval card.
    Ask(PermissionRequest<'static>),
    /// A status card.
    Status(Status<'static>),
}

/// A session's view as a webview holds it after applying updates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpdatedView {
    /// The chat's blocks in the order their keys first appeared.
    pub blocks: Vec<(String, AppliedBlock)>,
    index: BTreeMap<String, usize>,
    /// The run.
    pub run: Option<Run<'static>>,
    /// The task tree by task id.
    pub tasks: BTreeMap<String, Task<'static>>,
    /// The todo list.
    pub todos: Option<Todos<'static>>,
    /// Changed files by path.
    pub files: BTreeMap<String, FileChanged<'static>>,
    /// The last [`UNKNOWN_KEPT`] unknown events by number.
    pub unknown: BTreeMap<u64, UnknownEvent<'static>>,
    /// Deltas that started past the end of their text (something was missed): a webview
    /// asks for a resync then. Zero when updates arrive as the bridge sends them.
    pub missed: u64,
}

/// Length in UTF-16 code units.
fn utf16_len(s: &str) -> u64 {
    s.chars().map(|c| c.len_utf16() as u64).sum()
}

/// The byte offset of UTF-16 offset `at` in `s` (the end if `s` is shorter).
fn byte_at(s: &str, at: u64) -> usize {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        if units >= at {
            return i;
        }
        units += c.len_utf16() as u64;
    }
    s.len()
}

impl UpdatedView {
    /// An empty view (what a resync starts from).
    pub fn new() -> Self {
        Self::default()
    }

    fn upsert(&mut self, key: &str, block: AppliedBlock) {
        match self.index.get(key) {
            Some(&i) => self.blocks[i].1 = block,
            None => {
                self.index.insert(key.to_owned(), self.blocks.len());
                self.blocks.push((key.to_owned(), block));
            }
        }
    }

    /// The block under `key`.
    pub fn block(&self, key: &str) -> Option<&AppliedBlock> {
        self.index.get(key).map(|&i| &self.blocks[i].1)
    }

    /// Applies one update.
    pub fn apply(&mut self, update: &WebviewUpdate<'_>) {
        match update {
            WebviewUpdate::UserMessage(u) => {
                let owned = UserMessage {
                    key: u.key.to_string().into(),
                    message_id: u.message_id.as_ref().map(|m| m.to_string().into()),
                    text: own_preview(&u.text),
                };
                self.upsert(&u.key, AppliedBlock::User(owned));
            }
            WebviewUpdate::AssistantMessage(m) => {
                let text = match (&m.text, self.block(&m.key)) {
                    (Some(t), _) => t.to_string(),
                    (None, Some(AppliedBlock::Text(_, t))) => t.clone(),
                    (None, _) => String::new(),
                };
                let state = AssistantMessage {
                    key: m.key.to_string().into(),
                    message_id: m.message_id.as_ref().map(|x| x.to_string().into()),
                    reasoning: m.reasoning,
                    status: m.status,
                    error: m.error.as_ref().map(|x| x.to_string().into()),
                    text: None,
                };
                self.upsert(&m.key, AppliedBlock::Text(state, text));
            }
            WebviewUpdate::AssistantDelta(d) => {
                let Some(&i) = self.index.get(d.key.as_ref()) else {
                    self.missed += 1;
                    return;
                };
                let AppliedBlock::Text(_, text) = &mut self.blocks[i].1 else {
                    self.missed += 1;
                    return;
                };
                let have = utf16_len(text);
                if d.at > have {
                    self.missed += 1;
                    return;
                }
                // What of the delta the text already holds is skipped.
                let skip = byte_at(&d.delta, have - d.at);
                text.push_str(&d.delta[skip..]);
            }
            WebviewUpdate::ToolState(t) => {
                let owned: ToolState<'static> = reown(t);
                self.upsert(&t.key, AppliedBlock::Tool(owned));
            }
            WebviewUpdate::PermissionRequest(p) => {
                let owned: PermissionRequest<'static> = reown(p);
                self.upsert(&p.key, AppliedBlock::Ask(owned));
            }
            WebviewUpdate::Status(s) => {
                let owned: Status<'static> = reown(s);
                self.upsert(&s.key, AppliedBlock::Status(owned));
            }
            WebviewUpdate::Task(t) => {
                self.tasks.insert(t.task_id.to_string(), reown(t));
            }
            WebviewUpdate::Todos(t) => self.todos = Some(reown(t)),
            WebviewUpdate::Run(r) => self.run = Some(reown(r)),
            WebviewUpdate::Diff(f) => {
                self.files.insert(f.path.to_string(), reown(f));
            }
            WebviewUpdate::UnknownEvent(u) => {
                self.unknown.insert(u.n, reown(u));
                while self.unknown.len() > UNKNOWN_KEPT {
                    self.unknown.pop_first();
                }
            }
            // Fetched by the webview and applied as the update it holds.
            WebviewUpdate::Oversized(_) => {}
        }
    }

    /// Applies a page of older history (`bb.history`): its blocks go before the ones held,
    /// in their order. A block the view holds already (a pending card a paged resync sent
    /// ahead of its turn) moves to its place in the page and keeps the state held (newer).
    pub fn prepend<'a, 'u: 'a>(&mut self, older: impl IntoIterator<Item = &'a WebviewUpdate<'u>>) {
        let mut page = UpdatedView::new();
        page.apply_all(older);
        let mut newer = BTreeMap::new();
        let mut rest = Vec::new();
        for (key, block) in std::mem::take(&mut self.blocks) {
            if page.index.contains_key(&key) {
                newer.insert(key, block);
            } else {
                rest.push((key, block));
            }
        }
        let mut blocks: Vec<(String, AppliedBlock)> = page
            .blocks
            .into_iter()
            .map(|(key, block)| {
                let block = newer.remove(&key).unwrap_or(block);
                (key, block)
            })
            .collect();
        blocks.extend(rest);
        self.index = blocks.iter().enumerate().map(|(i, (k, _))| (k.clone(), i)).collect();
        self.blocks = blocks;
        self.missed += page.missed;
    }

    /// Applies every update of a list, in order.
    pub fn apply_all<'a, 'u: 'a>(
        &mut self,
        updates: impl IntoIterator<Item = &'a WebviewUpdate<'u>>,
    ) {
        for u in updates {
            self.apply(u);
        }
    }
}

fn own_preview(p: &super::updates::TextPreview<'_>) -> super::updates::TextPreview<'static> {
    reown(p)
}

/// A borrowed update part as an owned one (through its JSON: the types are plain data).
fn reown<T, U>(value: &T) -> U
where
    T: serde::Serialize,
    U: serde::de::DeserializeOwned,
{
    serde_json::to_value(value)
        .and_then(serde_json::from_value)
        .unwrap_or_else(|e| unreachable!("an update round-trips through its JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1::updates::{AssistantDelta, MessageStatus};

    fn msg(key: &str, text: Option<&str>) -> WebviewUpdate<'static> {
        WebviewUpdate::AssistantMessage(AssistantMessage {
            key: key.to_owned().into(),
            message_id: None,
            reasoning: false,
            status: MessageStatus::Streaming,
            error: None,
            text: text.map(|t| t.to_owned().into()),
        })
    }

    fn delta(key: &str, at: u64, d: &str) -> WebviewUpdate<'static> {
        WebviewUpdate::AssistantDelta(AssistantDelta {
            key: key.to_owned().into(),
            at,
            delta: d.to_owned().into(),
        })
    }

    fn text(v: &UpdatedView, key: &str) -> String {
        match v.block(key) {
            Some(AppliedBlock::Text(_, t)) => t.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn deltas_append_once_whatever_is_repeated() {
        let mut v = UpdatedView::new();
        let all =
            [msg("b1", None), delta("b1", 0, "Hé"), delta("b1", 2, "llo 😀"), delta("b1", 8, "!")];
        for u in &all {
            v.apply(u);
            v.apply(u);
        }
        assert_eq!(text(&v, "b1"), "Héllo 😀!");
        // A delta overlapping what is held adds only its new part.
        v.apply(&delta("b1", 6, "😀!?"));
        assert_eq!(text(&v, "b1"), "Héllo 😀!?");
        assert_eq!(v.missed, 0);
        // One starting past the end is a miss, and changes nothing.
        v.apply(&delta("b1", 99, "x"));
        assert_eq!((text(&v, "b1").as_str(), v.missed), ("Héllo 😀!?", 1));
    }

    #[test]
    fn a_whole_text_replaces_and_a_state_keeps_the_text() {
        let mut v = UpdatedView::new();
        v.apply_all(&[msg("b1", None), delta("b1", 0, "draft"), msg("b1", Some("final"))]);
        assert_eq!(text(&v, "b1"), "final");
        v.apply(&msg("b1", None));
        assert_eq!(text(&v, "b1"), "final");
    }
}
