//! Approval cards (permissions and questions) and notice cards.

use bb_payload::{LooseBool, LooseObj, LooseStr, LooseStrOrNum, LooseStrOrObj, LooseU64, LooseVec};
use bb_protocol::v1::{AnsweredBy, AskInput, AskOption, AskQuestion};
use serde::Deserialize;
use serde_json::Value;

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
        let question = matches!(&*ev.kind, "question.asked" | "elicitation");
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
        let question_text = || {
            let first = f.questions.get().and_then(<[_]>::first).and_then(LooseObj::get)?;
            kilo::non_empty(&first.question).or_else(|| kilo::non_empty(&first.header))
        };
        let summary = kilo::non_empty(&f.summary)
            .or_else(|| metadata.and_then(|m| kilo::non_empty(&m.command)))
            .or_else(|| metadata.and_then(|m| kilo::non_empty(&m.filepath)))
            .or_else(|| kilo::non_empty(&f.title))
            .or_else(|| tool_call.and_then(|t| kilo::non_empty(&t.title)))
            .or_else(question_text)
            .map(one_line);
        // In words: the action (the engine's category or permission) and what it acts on.
        let action = kilo::non_empty(&f.category)
            .or_else(|| kilo::non_empty(&f.permission))
            .or_else(|| tool_call.and_then(|t| kilo::non_empty(&t.kind)))
            .or_else(|| kilo::non_empty(&f.kind))
            .or(tool.as_deref());
        let target = metadata
            .and_then(|m| {
                kilo::non_empty(&m.command)
                    .or_else(|| kilo::non_empty(&m.filepath))
                    .or_else(|| kilo::non_empty(&m.path))
            })
            .or_else(|| f.patterns.get().and_then(<[_]>::first).and_then(LooseStr::get))
            .or_else(|| tool_call.and_then(|t| kilo::non_empty(&t.title)));
        let prompt = if question {
            question_text()
                .or_else(|| kilo::non_empty(&f.title))
                .map_or_else(|| "A question for you".to_owned(), one_line)
        } else {
            ask_in_words(action, target, summary.as_deref(), tool.as_deref())
        };
        let patterns = f
            .patterns
            .get()
            .map(|a| a.iter().filter_map(LooseStr::get).map(one_line).collect())
            .unwrap_or_default();
        let call_id = tool_obj
            .and_then(|t| kilo::non_empty(&t.call_id))
            .or_else(|| kilo::non_empty(&f.call_id))
            .map(str::to_owned);
        let key = request_id.clone().map(|r| self.approval_key(r));
        if let Some(&i) = key.as_ref().and_then(|k| self.idx.approvals.get(k))
            && let Some(Block::Approval(b)) = self.blocks.get(i)
            && b.state == ApprovalState::Pending
        {
            return; // a repeated request for a pending card changes nothing
        }
        let questions = if !question {
            Vec::new()
        } else if ev.kind == "elicitation" {
            ev.payload.get("requestedSchema").map(form_questions).unwrap_or_default()
        } else {
            questions(&f)
        };
        let prompt_id = self.idx.prompt.clone();
        let session_id = self.idx.owner.clone();
        let i = self.push(|block_id| {
            Block::Approval(Box::new(ApprovalBlock {
                block_id,
                request_id,
                event_id: ev.id.as_deref().map(str::to_owned),
                session_id,
                approval: if question { ApprovalKind::Question } else { ApprovalKind::Permission },
                tool,
                summary,
                prompt,
                patterns,
                call_id,
                questions,
                state: ApprovalState::Pending,
                answered_by: None,
                prompt_id,
            }))
        });
        if let Some(k) = key {
            self.idx.approvals.insert(k, i);
        }
    }

    /// `permission.response`: resolves the matching card (or records a resolved one).
    pub(crate) fn permission_response(&mut self, ev: &RawEvent) {
        let f: ReplyFields<'_> = ev.payload.read();
        let request_id = kilo::id(&f.request_id)
            .or_else(|| kilo::id(&f.request_id_upper))
            .or_else(|| kilo::id(&f.id))
            .or_else(|| kilo::id(&f.request_id_camel));
        let decision = match &*ev.kind {
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
        let answered_by = f.answered_by.get().and_then(|by| {
            Some(AnsweredBy {
                connection: by.connection.0?,
                tab_id: by.tab_id.get().map(str::to_owned),
            })
        });
        let key = request_id.clone().map(|r| self.approval_key(r));
        if let Some(&i) = key.as_ref().and_then(|k| self.idx.approvals.get(k))
            && let Some(Block::Approval(b)) = self.block_mut(i)
        {
            // The bridge said who answered: the engine's own report of that answer keeps it.
            if b.answered_by.is_some() && answered_by.is_none() {
                return;
            }
            b.state = state;
            b.answered_by = answered_by;
            return;
        }
        let question = ev.kind.starts_with("question.") || ev.kind.starts_with("elicitation");
        let prompt_id = self.idx.prompt.clone();
        let session_id = self.idx.owner.clone();
        let i = self.push(|block_id| {
            Block::Approval(Box::new(ApprovalBlock {
                block_id,
                request_id,
                event_id: None,
                session_id,
                approval: if question { ApprovalKind::Question } else { ApprovalKind::Permission },
                tool: None,
                summary: None,
                prompt: if question { "A question for you" } else { "A permission" }.to_owned(),
                patterns: Vec::new(),
                call_id: None,
                questions: Vec::new(),
                state,
                answered_by,
                prompt_id,
            }))
        });
        if let Some(k) = key {
            self.idx.approvals.insert(k, i);
        }
    }

    /// The run ended: approval cards of the session's own still pending can no longer be
    /// answered (a sub-agent's shown here close with their own session's events).
    pub(crate) fn withdraw_pending(&mut self) {
        let pending: Vec<usize> = self.idx.approvals.values().copied().collect();
        for i in pending {
            if matches!(self.blocks.get(i), Some(Block::Approval(b)) if b.state == ApprovalState::Pending && b.session_id.is_none())
                && let Some(Block::Approval(b)) = self.block_mut(i)
            {
                b.state = ApprovalState::Resolved { decision: WITHDRAWN.to_owned() };
            }
        }
    }

    /// Appends the card of an error, warning or gap: its message, else `fallback`.
    pub(crate) fn error_notice(&mut self, ev: &RawEvent, level: NoticeLevel, fallback: &str) {
        let f: NoticeFields<'_> = ev.payload.read();
        self.notice(ev, level, f.message().unwrap_or(fallback));
    }

    /// Appends a notice card.
    pub(crate) fn notice(&mut self, ev: &RawEvent, level: NoticeLevel, message: &str) {
        let event_id = ev.id.as_deref().map(str::to_owned);
        let message = one_line(message);
        let prompt_id = self.idx.prompt.clone();
        self.push(|block_id| {
            Block::Notice(Box::new(NoticeBlock { block_id, event_id, level, message, prompt_id }))
        });
    }
}

/// A permission request in words: `Run echo hi`, `Edit Makefile`, else the engine's summary.
fn ask_in_words(
    action: Option<&str>,
    target: Option<&str>,
    summary: Option<&str>,
    tool: Option<&str>,
) -> String {
    let verb = action.map(|a| match a.to_ascii_lowercase().as_str() {
        "bash" | "shell" | "exec" | "execute" | "run" | "command" => "Run".to_owned(),
        "edit" | "write" | "patch" | "multiedit" => "Edit".to_owned(),
        "read" => "Read".to_owned(),
        "delete" => "Delete".to_owned(),
        "webfetch" | "fetch" => "Fetch".to_owned(),
        "external_directory" => "Use a folder outside the workspace:".to_owned(),
        other => {
            let mut c = other.chars();
            c.next().map_or_else(String::new, |f| f.to_uppercase().chain(c).collect())
        }
    });
    match (verb, target) {
        (Some(v), Some(t)) => one_line(&format!("{v} {t}")),
        (Some(v), None) => match tool.filter(|t| !v.eq_ignore_ascii_case(t)) {
            Some(t) => one_line(&format!("{v} with {t}")),
            None => one_line(summary.unwrap_or(&v)),
        },
        (None, Some(t)) => one_line(t),
        (None, None) => one_line(summary.or(tool).unwrap_or("A permission")),
    }
}

/// The decision of an approval card the run ended without an answer to.
pub(crate) const WITHDRAWN: &str = "withdrawn";

/// A Kilo question's questions, with the answers it offers.
fn questions(f: &AskFields<'_>) -> Vec<AskQuestion<'static>> {
    let Some(list) = f.questions.get() else { return Vec::new() };
    list.iter()
        .filter_map(LooseObj::get)
        .map(|q| AskQuestion {
            question: one_line(kilo::non_empty(&q.question).unwrap_or_default()).into(),
            header: kilo::non_empty(&q.header).map(|h| one_line(h).into()),
            options: q
                .options
                .get()
                .map(|o| {
                    o.iter()
                        .filter_map(LooseObj::get)
                        .filter_map(|o| {
                            let label = kilo::non_empty(&o.label)?.to_owned();
                            Some(AskOption {
                                value: label.clone().into(),
                                label: label.into(),
                                description: kilo::non_empty(&o.description)
                                    .map(|d| one_line(d).into()),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default(),
            multiple: q.multiple.0.unwrap_or(false),
            field: None,
            input: None,
            required: false,
            default: None,
        })
        .collect()
}

/// An agent's form (ACP elicitation `requestedSchema`: an object's properties) as one
/// question per field, in the schema's order: a string with `enum` / `oneOf`, or an array of
/// `enum` / `anyOf` items, offers its options (the array: several); other strings, numbers,
/// integers and booleans are typed in. Each names its `field`, so the answer is one object.
fn form_questions(schema: &Value) -> Vec<AskQuestion<'static>> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let text = |v: &Value, key: &str| {
        v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(one_line)
    };
    properties
        .iter()
        .map(|(field, p)| {
            let kind = p.get("type").and_then(Value::as_str).unwrap_or("string");
            let items = p.get("items").unwrap_or(&Value::Null);
            let (list, titled) = if kind == "array" {
                (items.get("enum"), items.get("anyOf"))
            } else {
                (p.get("enum"), p.get("oneOf"))
            };
            let mut options: Vec<AskOption<'static>> = list
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|v| AskOption {
                    label: v.to_owned().into(),
                    value: v.to_owned().into(),
                    description: None,
                })
                .collect();
            options.extend(titled.and_then(Value::as_array).into_iter().flatten().filter_map(
                |o| {
                    let value = o.get("const").and_then(Value::as_str)?.to_owned();
                    Some(AskOption {
                        label: text(o, "title").unwrap_or_else(|| value.clone()).into(),
                        value: value.into(),
                        description: text(o, "description").map(Into::into),
                    })
                },
            ));
            let input = options.is_empty().then_some(match kind {
                "number" => AskInput::Number,
                "integer" => AskInput::Integer,
                "boolean" => AskInput::Boolean,
                _ => AskInput::Text,
            });
            let title = text(p, "title");
            let description = text(p, "description");
            let default = match p.get("default") {
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Array(a)) => a.first().and_then(Value::as_str).map(str::to_owned),
                Some(v @ (Value::Bool(_) | Value::Number(_))) => Some(v.to_string()),
                _ => None,
            };
            AskQuestion {
                question: description
                    .clone()
                    .or_else(|| title.clone())
                    .unwrap_or_else(|| field.clone())
                    .into(),
                header: description.and(title).map(Into::into),
                options,
                multiple: kind == "array",
                field: Some(field.clone().into()),
                input,
                required: required.contains(&field.as_str()),
                default: default.map(Into::into),
            }
        })
        .collect()
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
    #[serde(borrow)]
    kind: LooseStr<'a>,
    #[serde(rename = "toolCall", borrow)]
    tool_call: LooseObj<AskToolCall<'a>>,
    #[serde(borrow)]
    summary: LooseStr<'a>,
    #[serde(borrow)]
    metadata: LooseObj<AskMetadata<'a>>,
    #[serde(borrow)]
    title: LooseStr<'a>,
    #[serde(borrow)]
    questions: LooseVec<LooseObj<AskedQuestion<'a>>>,
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
    #[serde(borrow)]
    path: LooseStr<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AskedQuestion<'a> {
    #[serde(borrow)]
    question: LooseStr<'a>,
    #[serde(borrow)]
    header: LooseStr<'a>,
    #[serde(borrow)]
    options: LooseVec<LooseObj<AskedOption<'a>>>,
    multiple: LooseBool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AskedOption<'a> {
    #[serde(borrow)]
    label: LooseStr<'a>,
    #[serde(borrow)]
    description: LooseStr<'a>,
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
    /// The bridge's `bb.prompt.closed`: which webview's answer the engine took.
    #[serde(rename = "answeredBy", borrow)]
    answered_by: LooseObj<AnsweredByFields<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AnsweredByFields<'a> {
    connection: LooseU64,
    #[serde(rename = "tabId", borrow)]
    tab_id: LooseStr<'a>,
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
