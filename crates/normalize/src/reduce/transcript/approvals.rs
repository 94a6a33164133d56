//! Approval cards (permissions and questions) and notice cards.

use bb_payload::{LooseObj, LooseStr, LooseStrOrNum, LooseStrOrObj, LooseVec};
use serde::Deserialize;

use super::super::blocks::{
    ApprovalBlock, ApprovalKind, ApprovalState, Block, NoticeBlock, NoticeLevel,
};
use super::{Transcript, one_line};
use crate::event::RawEvent;
use crate::kilo;

impl Transcript {
    /// `permission.request`: appends an actionable approval card.
    pub(crate) fn permission_request(&mut self, ev: &RawEvent) {
        let f: AskFields<'_> = ev.payload.read();
        let question = matches!(ev.kind.as_str(), "question.asked" | "elicitation");
        let request_id = kilo::id(&f.request_id)
            .or_else(|| kilo::id(&f.id))
            .or_else(|| kilo::id(&f.request_id_upper))
            .or_else(|| kilo::id(&f.request_id_camel));
        let (tool_name, tool_obj) = match &f.tool {
            LooseStrOrObj::Str(s) => (Some(s.as_ref()).filter(|s| !s.is_empty()), None),
            LooseStrOrObj::Obj(t) => (None, Some(t)),
            LooseStrOrObj::Absent => (None, None),
        };
        let tool_call = f.tool_call.get();
        let tool = kilo::non_empty(&f.permission)
            .or(tool_name)
            .or_else(|| tool_obj.and_then(|t| kilo::non_empty(&t.name)))
            .or_else(|| kilo::non_empty(&f.category))
            .or_else(|| tool_call.and_then(|t| kilo::non_empty(&t.kind)))
            .map(str::to_owned);
        let metadata = f.metadata.get();
        let summary = kilo::non_empty(&f.summary)
            .or_else(|| metadata.and_then(|m| kilo::non_empty(&m.command)))
            .or_else(|| metadata.and_then(|m| kilo::non_empty(&m.filepath)))
            .or_else(|| kilo::non_empty(&f.title))
            .or_else(|| tool_call.and_then(|t| kilo::non_empty(&t.title)))
            .or_else(|| {
                let first = f.questions.get().and_then(<[_]>::first).and_then(LooseObj::get)?;
                kilo::non_empty(&first.question).or_else(|| kilo::non_empty(&first.header))
            })
            .map(one_line);
        let patterns = f
            .patterns
            .get()
            .map(|a| a.iter().filter_map(LooseStr::get).map(one_line).collect())
            .unwrap_or_default();
        let call_id = tool_obj
            .and_then(|t| kilo::non_empty(&t.call_id))
            .or_else(|| kilo::non_empty(&f.call_id))
            .map(str::to_owned);
        if let Some(&i) = request_id.as_ref().and_then(|r| self.idx.approvals.get(r))
            && let Some(Block::Approval(b)) = self.blocks.get(i)
            && b.state == ApprovalState::Pending
        {
            return; // a repeated request for a pending card changes nothing
        }
        let rid = request_id.clone();
        let i = self.push(|block_id| {
            Block::Approval(Box::new(ApprovalBlock {
                block_id,
                request_id: rid,
                approval: if question { ApprovalKind::Question } else { ApprovalKind::Permission },
                tool,
                summary,
                patterns,
                call_id,
                state: ApprovalState::Pending,
            }))
        });
        if let Some(r) = request_id {
            self.idx.approvals.insert(r, i);
        }
    }

    /// `permission.response`: resolves the matching card (or records a resolved one).
    pub(crate) fn permission_response(&mut self, ev: &RawEvent) {
        let f: ReplyFields<'_> = ev.payload.read();
        let request_id = kilo::id(&f.request_id)
            .or_else(|| kilo::id(&f.request_id_upper))
            .or_else(|| kilo::id(&f.id))
            .or_else(|| kilo::id(&f.request_id_camel));
        let decision = match ev.kind.as_str() {
            "question.replied" => "answered".to_owned(),
            "question.rejected" => "rejected".to_owned(),
            _ => {
                let outcome = f.outcome.get();
                kilo::non_empty(&f.decision)
                    .or_else(|| kilo::non_empty(&f.reply))
                    .or_else(|| kilo::non_empty(&f.response))
                    .or_else(|| outcome.and_then(|o| kilo::non_empty(&o.option_id)))
                    .or_else(|| outcome.and_then(|o| kilo::non_empty(&o.outcome)))
                    .map_or_else(|| "unknown".to_owned(), one_line)
            }
        };
        let state = ApprovalState::Resolved { decision };
        if let Some(&i) = request_id.as_ref().and_then(|r| self.idx.approvals.get(r))
            && let Some(Block::Approval(b)) = self.blocks.get_mut(i)
        {
            b.state = state;
            return;
        }
        let question = ev.kind.starts_with("question.") || ev.kind.starts_with("elicitation");
        let rid = request_id.clone();
        let i = self.push(|block_id| {
            Block::Approval(Box::new(ApprovalBlock {
                block_id,
                request_id: rid,
                approval: if question { ApprovalKind::Question } else { ApprovalKind::Permission },
                tool: None,
                summary: None,
                patterns: Vec::new(),
                call_id: None,
                state,
            }))
        });
        if let Some(r) = request_id {
            self.idx.approvals.insert(r, i);
        }
    }

    /// Appends the card of an error, warning or gap: its message, else `fallback`.
    pub(crate) fn error_notice(&mut self, ev: &RawEvent, level: NoticeLevel, fallback: &str) {
        let f: NoticeFields<'_> = ev.payload.read();
        self.notice(ev, level, f.message().unwrap_or(fallback));
    }

    /// Appends a notice card.
    pub(crate) fn notice(&mut self, ev: &RawEvent, level: NoticeLevel, message: &str) {
        let event_id = ev.id.clone();
        let message = one_line(message);
        self.push(|block_id| {
            Block::Notice(Box::new(NoticeBlock { block_id, event_id, level, message }))
        });
    }
}

/// What a permission or question request says (Kilo `permission.asked` / `question.asked`,
/// BreadBoard and ACP requests), each field of another shape absent.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AskFields<'a> {
    #[serde(borrow)]
    request_id: LooseStrOrNum<'a>,
    #[serde(borrow)]
    id: LooseStrOrNum<'a>,
    #[serde(rename = "requestID", borrow)]
    request_id_upper: LooseStrOrNum<'a>,
    #[serde(rename = "requestId", borrow)]
    request_id_camel: LooseStrOrNum<'a>,
    #[serde(borrow)]
    permission: LooseStr<'a>,
    /// A tool's name, or the tool: `{name, callID}`.
    #[serde(borrow)]
    tool: LooseStrOrObj<'a, AskTool<'a>>,
    #[serde(borrow)]
    category: LooseStr<'a>,
    #[serde(rename = "toolCall", borrow)]
    tool_call: LooseObj<AskToolCall<'a>>,
    #[serde(borrow)]
    summary: LooseStr<'a>,
    #[serde(borrow)]
    metadata: LooseObj<AskMetadata<'a>>,
    #[serde(borrow)]
    title: LooseStr<'a>,
    #[serde(borrow)]
    questions: LooseVec<LooseObj<AskQuestion<'a>>>,
    #[serde(borrow)]
    patterns: LooseVec<LooseStr<'a>>,
    #[serde(borrow)]
    call_id: LooseStr<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AskTool<'a> {
    #[serde(borrow)]
    name: LooseStr<'a>,
    #[serde(rename = "callID", borrow)]
    call_id: LooseStr<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AskToolCall<'a> {
    #[serde(borrow)]
    kind: LooseStr<'a>,
    #[serde(borrow)]
    title: LooseStr<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AskMetadata<'a> {
    #[serde(borrow)]
    command: LooseStr<'a>,
    #[serde(borrow)]
    filepath: LooseStr<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AskQuestion<'a> {
    #[serde(borrow)]
    question: LooseStr<'a>,
    #[serde(borrow)]
    header: LooseStr<'a>,
}

/// What a permission or question reply says, each field of another shape absent.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ReplyFields<'a> {
    #[serde(borrow)]
    request_id: LooseStrOrNum<'a>,
    #[serde(rename = "requestID", borrow)]
    request_id_upper: LooseStrOrNum<'a>,
    #[serde(borrow)]
    id: LooseStrOrNum<'a>,
    #[serde(rename = "requestId", borrow)]
    request_id_camel: LooseStrOrNum<'a>,
    #[serde(borrow)]
    decision: LooseStr<'a>,
    #[serde(borrow)]
    reply: LooseStr<'a>,
    #[serde(borrow)]
    response: LooseStr<'a>,
    #[serde(borrow)]
    outcome: LooseObj<ReplyOutcome<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ReplyOutcome<'a> {
    #[serde(rename = "optionId", borrow)]
    option_id: LooseStr<'a>,
    #[serde(borrow)]
    outcome: LooseStr<'a>,
}

/// What an error, warning or gap event says: `message`, `reason`, or its `error` (a string,
/// or an object with a message), each field of another shape absent.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct NoticeFields<'a> {
    #[serde(borrow)]
    message: LooseStr<'a>,
    #[serde(borrow)]
    reason: LooseStr<'a>,
    #[serde(borrow)]
    error: LooseStrOrObj<'a, kilo::ErrorFields<'a>>,
}

impl NoticeFields<'_> {
    /// The first non-empty of `message`, `reason`, the error's message, the error as a
    /// string (`str_at`'s order).
    fn message(&self) -> Option<&str> {
        let error = match &self.error {
            LooseStrOrObj::Obj(e) => e.message(),
            LooseStrOrObj::Str(s) => Some(s.as_ref()).filter(|s| !s.is_empty()),
            LooseStrOrObj::Absent => None,
        };
        kilo::non_empty(&self.message).or_else(|| kilo::non_empty(&self.reason)).or(error)
    }
}
