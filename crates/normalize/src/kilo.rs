//! The few fields of Kilo payloads the classifier, the batcher and the reducers read, as
//! typed borrowed reads of the payload's text ([`Payload::read`]): the hot event types
//! never build a tree. Each read finds what the tree lookups of `crate::json` would: a
//! field of another shape is absent, and the `non_empty` accessors skip empty strings as
//! `str_at` does.

use bb_payload::{LooseI64, LooseObj, LooseStr, LooseStrOrNum, LooseStrOrObj};
use serde::Deserialize;

use crate::json::Shown;

/// `message.updated` and session events: `info.{role, id, title}` and whether the message
/// ended (`info.time.completed`) or failed (`info.error`, with its message).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct InfoFields<'a> {
    #[serde(borrow)]
    pub(crate) info: LooseObj<Info<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Info<'a> {
    #[serde(borrow)]
    pub(crate) role: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) id: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) title: LooseStr<'a>,
    /// Present and not null (`LooseObj(None)` when not an object).
    #[serde(borrow)]
    pub(crate) error: Option<LooseObj<ErrorFields<'a>>>,
    pub(crate) time: LooseObj<Completed>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Completed {
    /// Present and not null.
    pub(crate) completed: Option<serde::de::IgnoredAny>,
}

/// An error (`NamedError`: `{name, data: {message}}`, some with a `message` of their own).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ErrorFields<'a> {
    #[serde(borrow)]
    data: LooseObj<ErrorData<'a>>,
    #[serde(borrow)]
    message: LooseStr<'a>,
    #[serde(borrow)]
    name: LooseStr<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ErrorData<'a> {
    #[serde(borrow)]
    message: LooseStr<'a>,
}

impl ErrorFields<'_> {
    /// `data.message`, else `message`, else `name`: the first non-empty (`str_at`'s order).
    pub(crate) fn message(&self) -> Option<&str> {
        self.data
            .get()
            .and_then(|d| non_empty(&d.message))
            .or_else(|| non_empty(&self.message))
            .or_else(|| non_empty(&self.name))
    }

    /// Whether the error says the user aborted the turn (`MessageAbortedError`).
    pub(crate) fn aborted(&self) -> bool {
        non_empty(&self.name) == Some("MessageAbortedError")
    }
}

/// `message.part.updated`: the part's kind and tool status (what classifies it).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct PartKind<'a> {
    #[serde(borrow)]
    pub(crate) part: LooseObj<PartHead<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct PartHead<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) state: LooseObj<Status<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Status<'a> {
    #[serde(borrow)]
    pub(crate) status: LooseStr<'a>,
}

/// `message.part.updated` of a text or reasoning part: ids and full text.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct TextPart<'a> {
    #[serde(borrow)]
    pub(crate) part: LooseObj<PartText<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct PartText<'a> {
    #[serde(borrow)]
    pub(crate) id: LooseStr<'a>,
    #[serde(rename = "messageID", borrow)]
    pub(crate) message_id: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) text: LooseStr<'a>,
}

/// `message.part.updated` of a tool part: what its tool block shows.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ToolPart<'a> {
    #[serde(rename = "callID", borrow)]
    pub(crate) call_id: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) id: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) tool: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) state: LooseObj<ToolState<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ToolState<'a> {
    #[serde(borrow)]
    pub(crate) status: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) title: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) error: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) input: Shown<'a>,
    /// The output of a completed call.
    #[serde(borrow)]
    pub(crate) output: Shown<'a>,
    #[serde(borrow)]
    pub(crate) metadata: LooseObj<ToolMetadata<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ToolMetadata<'a> {
    /// The output so far of a running call.
    #[serde(borrow)]
    pub(crate) output: Shown<'a>,
    /// The unified diff of an edit.
    #[serde(borrow)]
    pub(crate) diff: LooseStr<'a>,
    /// A command's exit code.
    pub(crate) exit: LooseI64,
}

/// `message.part.delta`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Delta<'a> {
    #[serde(rename = "messageID", borrow)]
    pub(crate) message_id: LooseStr<'a>,
    #[serde(rename = "partID", borrow)]
    pub(crate) part_id: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) field: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) delta: LooseStr<'a>,
}

/// `session.status`: `status.type`, or `status` itself when it is a string.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RunStatus<'a> {
    #[serde(borrow)]
    status: LooseStrOrObj<'a, StatusType<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct StatusType<'a> {
    #[serde(rename = "type", borrow)]
    kind: LooseStr<'a>,
}

impl RunStatus<'_> {
    /// `status.type` when non-empty, else `status` when a non-empty string (`str_at`'s
    /// order).
    pub(crate) fn get(&self) -> Option<&str> {
        match &self.status {
            LooseStrOrObj::Obj(s) => non_empty(&s.kind),
            LooseStrOrObj::Str(t) => Some(t.as_ref()).filter(|t| !t.is_empty()),
            LooseStrOrObj::Absent => None,
        }
    }
}

/// The string when it is not empty (what `str_at` finds).
pub(crate) fn non_empty<'b>(s: &'b LooseStr<'_>) -> Option<&'b str> {
    s.get().filter(|s| !s.is_empty())
}

/// An id as `id_at` finds it: a non-empty string, or a number as the tree writes it.
pub(crate) fn id(s: &LooseStrOrNum<'_>) -> Option<String> {
    match s {
        LooseStrOrNum::Str(s) if !s.is_empty() => Some(s.as_ref().to_owned()),
        LooseStrOrNum::Num(n) => Some(n.to_string()),
        _ => None,
    }
}
