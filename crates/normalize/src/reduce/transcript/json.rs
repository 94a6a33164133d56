//! The transcript as the serialized view has it: its blocks, with the ids the arena holds
//! written in place, field for field as the blocks were written when they held them.

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use super::Transcript;
use crate::reduce::blocks::{
    ApprovalBlock, Block, BlockId, NoticeBlock, StreamStatus, TextBlock, ToolBlock, UserBlock,
};

/// The blocks of a transcript, serializable ([`Transcript::blocks_json`]).
#[derive(Debug, Clone, Copy)]
pub struct BlocksJson<'a>(&'a Transcript);

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum BlockJson<'a> {
    User(UserJson<'a>),
    Assistant(TextJson<'a>),
    Reasoning(TextJson<'a>),
    Tool(&'a ToolBlock),
    Approval(&'a ApprovalBlock),
    Notice(&'a NoticeBlock),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UserJson<'a> {
    block_id: BlockId,
    event_id: Option<&'a str>,
    message_id: Option<&'a str>,
    turn: Option<i64>,
    text: Option<PreviewJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_id: Option<&'a str>,
}

/// A user message's text, as [`Preview`](crate::truncate::Preview) writes it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PreviewJson<'a> {
    text: &'a str,
    truncated: bool,
    total_bytes: usize,
    total_lines: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    body_ref: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TextJson<'a> {
    block_id: BlockId,
    message_id: Option<&'a str>,
    turn: Option<i64>,
    text: &'a str,
    status: StreamStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_id: Option<&'a str>,
}

impl Transcript {
    /// The blocks, serializable as a list (what the serialized view's `blocks` holds).
    pub fn blocks_json(&self) -> BlocksJson<'_> {
        BlocksJson(self)
    }

    fn user_json<'a>(&'a self, b: &'a UserBlock) -> UserJson<'a> {
        UserJson {
            block_id: b.block_id,
            event_id: self.text_at(b.event_id),
            message_id: self.text_at(b.message_id),
            turn: b.turn,
            text: b.text.as_ref().map(|p| PreviewJson {
                text: self.text_at(Some(p.text)).unwrap_or_default(),
                truncated: p.truncated,
                total_bytes: p.total_bytes,
                total_lines: p.total_lines,
                body_ref: p.body_ref.as_deref(),
            }),
            prompt_id: self.text_at(b.prompt_id),
        }
    }

    fn text_json<'a>(&'a self, b: &'a TextBlock) -> TextJson<'a> {
        TextJson {
            block_id: b.block_id,
            message_id: self.text_at(b.message_id),
            turn: b.turn,
            text: &b.text,
            status: b.status,
            error: b.error.as_deref(),
            prompt_id: self.text_at(b.prompt_id),
        }
    }

    fn block_json<'a>(&'a self, block: &'a Block) -> BlockJson<'a> {
        match block {
            Block::User(b) => BlockJson::User(self.user_json(b)),
            Block::Assistant(b) => BlockJson::Assistant(self.text_json(b)),
            Block::Reasoning(b) => BlockJson::Reasoning(self.text_json(b)),
            Block::Tool(b) => BlockJson::Tool(b),
            Block::Approval(b) => BlockJson::Approval(b),
            Block::Notice(b) => BlockJson::Notice(b),
        }
    }
}

impl Serialize for BlocksJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let t = self.0;
        serializer.collect_seq(t.blocks.iter().map(|b| t.block_json(b)))
    }
}

/// `{"blocks": [...]}`, as the derived form wrote it.
impl Serialize for Transcript {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Transcript", 1)?;
        s.serialize_field("blocks", &self.blocks_json())?;
        s.end()
    }
}
