//! Approval cards (permissions and questions) and notice cards.

use serde_json::Value;

use super::super::blocks::{
    ApprovalBlock, ApprovalKind, ApprovalState, Block, NoticeBlock, NoticeLevel,
};
use super::{Transcript, one_line};
use crate::event::RawEvent;
use crate::json::{id_at, str_at, string_at};

impl Transcript {
    /// `permission.request`: appends an actionable approval card.
    pub(crate) fn permission_request(&mut self, ev: &RawEvent) {
        let p = &ev.payload;
        let question = ev.kind == "question.asked";
        let request_id = id_at(p, &[&["request_id"], &["id"], &["requestID"], &["requestId"]]);
        let tool = string_at(
            p,
            &[&["permission"], &["tool"], &["tool", "name"], &["category"], &["toolCall", "kind"]],
        );
        let summary = str_at(
            p,
            &[
                &["summary"],
                &["metadata", "command"],
                &["metadata", "filepath"],
                &["title"],
                &["toolCall", "title"],
            ],
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
        let p = &ev.payload;
        let request_id = id_at(p, &[&["request_id"], &["requestID"], &["id"], &["requestId"]]);
        let decision = match ev.kind.as_str() {
            "question.replied" => "answered".to_owned(),
            "question.rejected" => "rejected".to_owned(),
            _ => str_at(
                p,
                &[
                    &["decision"],
                    &["reply"],
                    &["response"],
                    &["outcome", "optionId"],
                    &["outcome", "outcome"],
                ],
            )
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

    /// Appends a notice card.
    pub(crate) fn notice(&mut self, ev: &RawEvent, level: NoticeLevel, message: &str) {
        let event_id = ev.id.clone();
        let message = one_line(message);
        self.push(|block_id| {
            Block::Notice(Box::new(NoticeBlock { block_id, event_id, level, message }))
        });
    }
}
