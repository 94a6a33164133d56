//! The few fields of Kilo payloads the classifier, the batcher and the reducers read, as
//! typed borrowed reads of the payload's text ([`Payload::read`]): the hot event types
//! never build a tree. Each read finds what the tree lookups of `crate::json` would: a
//! field of another shape is absent, and the `non_empty` accessors skip empty strings as
//! `str_at` does.
//!
//! What the reducers read of an event's `info` ([`InfoFields`]) the Kilo mapping has read
//! already in its own one pass over the body: it hands it over on the payload
//! ([`InfoFields::memo`], [`Payload::set_memo`]), and the reducers take it from there
//! (`kept`) instead of reading the body again; so it does with a text part's `id`,
//! `messageID` and `text` ([`TextPart`]) and a delta's fields ([`Delta`]), which the batcher
//! and the reducers read. A delta's memo ([`DeltaMemo`]) also says where its string is in
//! the payload's text when it needed no unescaping: the batcher merges two such deltas by
//! writing the merged text there (`crate::splice`), without a tree.

use std::borrow::Cow;
use std::ops::Range;

use bb_payload::{LooseI64, LooseObj, LooseStr, LooseStrOrNum, LooseStrOrObj, Payload};
use serde::Deserialize;

use crate::json::Shown;
use crate::splice::Places;

/// `message.updated` and session events: `info.{role, id, title}` and whether the message
/// ended (`info.time.completed`) or failed (`info.error`, with its message).
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct InfoFields<'a> {
    #[serde(borrow)]
    pub(crate) info: LooseObj<Info<'a>>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
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

#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Completed {
    /// Present and not null.
    pub(crate) completed: Option<serde::de::IgnoredAny>,
}

/// The parts of an `info` object [`InfoFields`] holds, as a reader that has read them
/// hands them over ([`InfoFields::memo`]); each field as [`InfoFields`] reads it.
#[derive(Debug, Default)]
pub struct InfoParts<'a> {
    /// `info.id`.
    pub id: LooseStr<'a>,
    /// `info.role`.
    pub role: LooseStr<'a>,
    /// `info.title`.
    pub title: LooseStr<'a>,
    /// `info.error` when present and not null (`LooseObj(None)` when not an object).
    pub error: Option<LooseObj<ErrorFields<'a>>>,
    /// `info.time`: `None` when it is not an object, else whether `time.completed` is
    /// present and not null.
    pub completed: Option<bool>,
}

impl InfoFields<'static> {
    /// What reading a body as [`InfoFields`] finds, from a reader that read the same
    /// fields already: `info` is `None` when the body's `info` is not an object. Owned, to
    /// be kept on the payload ([`Payload::set_memo`]) for the reducers.
    pub fn memo(info: Option<InfoParts<'_>>) -> Self {
        let info = info.map(|p| Info {
            role: owned(p.role),
            id: owned(p.id),
            title: owned(p.title),
            error: p.error.map(|e| LooseObj(e.0.map(ErrorFields::into_owned))),
            time: LooseObj(
                p.completed.map(|c| Completed { completed: c.then_some(serde::de::IgnoredAny) }),
            ),
        });
        Self { info: LooseObj(info) }
    }
}

/// A typed read of a payload: the memo a reader kept on it, or read now.
pub(crate) enum Kept<'a, T> {
    Memo(&'a T),
    Read(T),
}

impl<T> std::ops::Deref for Kept<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        match self {
            Kept::Memo(t) => t,
            Kept::Read(t) => t,
        }
    }
}

fn owned(s: LooseStr<'_>) -> LooseStr<'static> {
    LooseStr(s.0.map(|s| Cow::Owned(s.into_owned())))
}

/// An error (`NamedError`: `{name, data: {message}}`, some with a `message` of their own).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ErrorFields<'a> {
    #[serde(borrow)]
    data: LooseObj<ErrorData<'a>>,
    #[serde(borrow)]
    message: LooseStr<'a>,
    #[serde(borrow)]
    name: LooseStr<'a>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
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

    fn into_owned(self) -> ErrorFields<'static> {
        ErrorFields {
            data: LooseObj(self.data.0.map(|d| ErrorData { message: owned(d.message) })),
            message: owned(self.message),
            name: owned(self.name),
        }
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
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct TextPart<'a> {
    #[serde(borrow)]
    pub(crate) part: LooseObj<PartText<'a>>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
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
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Delta<'a> {
    #[serde(rename = "messageID", borrow)]
    pub(crate) message_id: LooseStr<'a>,
    #[serde(rename = "partID", borrow)]
    pub(crate) part_id: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) field: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) delta: LooseStr<'a>,
}

impl TextPart<'_> {
    /// What reading a body as [`TextPart`] finds, from a reader that read the same fields
    /// already from `text`, the payload's text: `part` is `None` when the body's `part` is
    /// not an object, else its `id`, `messageID` and `text`. To be kept on the payload
    /// ([`Payload::set_memo`]): a string borrowed from `text` as where it is there (no
    /// copy), one it unescaped taken over.
    pub fn memo(part: Option<[LooseStr<'_>; 3]>, text: Option<&str>) -> TextPartMemo {
        TextPartMemo { part: part.map(|p| p.map(|s| Held::new(s, text))) }
    }
}

/// What a reader keeps of a text part on its payload ([`TextPart::memo`]): whether `part`
/// is an object, and its `id`, `messageID` and `text`, each where it is in the payload's
/// text when it needed no unescaping.
#[derive(Debug, Clone, PartialEq)]
pub struct TextPartMemo {
    part: Option<[Held; 3]>,
}

impl TextPartMemo {
    /// The fields, as a read of `payload` (the one this memo is kept on) finds them.
    pub fn fields<'a>(&'a self, payload: &'a Payload) -> TextPart<'a> {
        let body = payload.text().unwrap_or_default();
        let part = self.part.as_ref().map(|p| {
            let [id, message_id, text] = p.each_ref().map(|h| h.get(body));
            PartText { id, message_id, text }
        });
        TextPart { part: LooseObj(part) }
    }
}

impl Delta<'_> {
    /// What reading a body as [`Delta`] finds, from a reader that read its `messageID`,
    /// `partID`, `field` and `delta` already from `text`, the payload's text (by a typed
    /// read: a string it borrowed from the text is one that needed no unescaping), to be
    /// kept on the payload ([`Payload::set_memo`]): a string borrowed from `text` as where
    /// it is there (no copy), one it unescaped taken over.
    pub fn memo(fields: [LooseStr<'_>; 4], text: Option<&str>) -> DeltaMemo {
        // The usual delta: every string borrowed from the text, so each one's place is kept.
        if let Some(text) = text
            && let [Some(a), Some(b), Some(c), Some(d)] = fields.each_ref().map(|s| match &s.0 {
                Some(Cow::Borrowed(s)) => span_in(text, s),
                _ => None,
            })
        {
            return DeltaMemo(Fields::At([a, b, c, d]));
        }
        DeltaMemo(Fields::Held(Box::new(fields.map(|s| Held::new(s, text)))))
    }
}

/// A string a memo holds: where it is in the payload's text when it is there as it is
/// (it needed no unescaping), else its value. The text cannot change while the memo is
/// on the payload (a change drops the memo), so a place stays valid.
#[derive(Debug, Clone, PartialEq)]
enum Held {
    /// The field was absent or not a string.
    Absent,
    /// Its text, between its quotes, in the payload's text.
    At(Range<usize>),
    /// Its value, unescaped.
    Value(String),
}

impl Held {
    /// `s`, as a place in `text` when borrowed from it, else its value.
    fn new(s: LooseStr<'_>, text: Option<&str>) -> Self {
        match (s.0, text) {
            (None, _) => Held::Absent,
            (Some(Cow::Borrowed(b)), Some(text)) => match span_in(text, b) {
                Some(at) => Held::At(at),
                None => Held::Value(b.to_owned()),
            },
            (Some(s), _) => Held::Value(s.into_owned()),
        }
    }

    /// The string, as a read of the payload whose text is `text` finds it.
    fn get<'a>(&'a self, text: &'a str) -> LooseStr<'a> {
        LooseStr(match self {
            Held::Absent => None,
            Held::At(at) => text.get(at.clone()).map(Cow::Borrowed),
            Held::Value(v) => Some(Cow::Borrowed(v)),
        })
    }
}

/// What a reader keeps of a delta on its payload ([`Delta::memo`]): its `messageID`,
/// `partID`, `field` and `delta`, each where it is in the payload's text when it needed no
/// unescaping (its text is then its value). Two adjacent deltas whose `delta` strings are
/// both placed so merge without a tree (`crate::splice`).
#[derive(Debug, Clone, PartialEq)]
pub struct DeltaMemo(Fields);

/// A delta's four strings: as a stream's deltas have them, all placed (no allocation, and
/// read back without a case per field), else each as it was found.
#[derive(Debug, Clone, PartialEq)]
enum Fields {
    /// Each string, between its quotes, in the payload's text.
    At([Range<usize>; 4]),
    /// Any other: one absent, not a string, or unescaped.
    Held(Box<[Held; 4]>),
}

impl DeltaMemo {
    /// The fields, as a read of `payload` (the one this memo is kept on) finds them.
    pub fn fields<'a>(&'a self, payload: &'a Payload) -> Delta<'a> {
        let text = payload.text().unwrap_or_default();
        let [message_id, part_id, field, delta] = match &self.0 {
            Fields::At(at) => {
                at.each_ref().map(|at| LooseStr(text.get(at.clone()).map(Cow::Borrowed)))
            }
            Fields::Held(held) => held.each_ref().map(|h| h.get(text)),
        };
        Delta { message_id, part_id, field, delta }
    }

    /// Where the `delta` string is in the payload's text (between its quotes), when known.
    pub fn span(&self) -> Option<Range<usize>> {
        match &self.0 {
            Fields::At(at) => Some(at[3].clone()),
            Fields::Held(held) => match &held[3] {
                Held::At(at) => Some(at.clone()),
                _ => None,
            },
        }
    }
}

/// Where `s`, when borrowed from `text`, is in it.
fn span_in(text: &str, s: &str) -> Option<Range<usize>> {
    let start = s.as_ptr().addr().checked_sub(text.as_ptr().addr())?;
    (start + s.len() <= text.len()).then_some(start..start + s.len())
}

impl Places for DeltaMemo {
    /// A Kilo delta's only merged string is its `delta`.
    fn place(&self, _field: &str) -> Option<Range<usize>> {
        self.span()
    }

    fn places_mut(&mut self) -> impl Iterator<Item = &mut Range<usize>> {
        let (at, held): (&mut [Range<usize>], &mut [Held]) = match &mut self.0 {
            Fields::At(at) => (at, &mut []),
            Fields::Held(held) => (&mut [], &mut held[..]),
        };
        at.iter_mut().chain(held.iter_mut().filter_map(|held| match held {
            Held::At(at) => Some(at),
            _ => None,
        }))
    }
}

/// `payload` read as `T`: the memo a reader kept of that read, else read now.
pub(crate) fn kept<'a, T>(payload: &'a Payload) -> Kept<'a, T>
where
    T: Deserialize<'a> + Default + Memo<'a>,
{
    match payload.memo::<T::Kept>() {
        Some(memo) => T::from_memo(memo, payload),
        None => Kept::Read(payload.read()),
    }
}

/// `payload` read as [`Delta`]: from its memo ([`DeltaMemo`]) when it has one (its strings
/// borrowed from the memo or the payload's text), else read now.
pub(crate) fn delta(payload: &Payload) -> Delta<'_> {
    match payload.memo::<DeltaMemo>() {
        Some(memo) => memo.fields(payload),
        None => payload.read(),
    }
}

/// A typed read of which a reader may keep a memo on the payload.
pub(crate) trait Memo<'a>: Sized {
    /// What is kept.
    type Kept: std::any::Any;
    /// The read, from what `payload` keeps.
    fn from_memo(memo: &'a Self::Kept, payload: &'a Payload) -> Kept<'a, Self>;
}

macro_rules! memo {
    ($($t:ident),*) => {$(
        impl<'a> Memo<'a> for $t<'a> {
            type Kept = $t<'static>;
            fn from_memo(memo: &'a $t<'static>, _: &'a Payload) -> Kept<'a, $t<'a>> {
                Kept::Memo(memo)
            }
        }
    )*};
}
memo!(InfoFields);

impl<'a> Memo<'a> for TextPart<'a> {
    type Kept = TextPartMemo;
    fn from_memo(memo: &'a TextPartMemo, payload: &'a Payload) -> Kept<'a, TextPart<'a>> {
        Kept::Read(memo.fields(payload))
    }
}

impl<'a> Memo<'a> for Delta<'a> {
    type Kept = DeltaMemo;
    fn from_memo(memo: &'a DeltaMemo, payload: &'a Payload) -> Kept<'a, Delta<'a>> {
        Kept::Read(memo.fields(payload))
    }
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
