//! The fields of BreadBoard assistant and reasoning payloads the batcher and the reducers
//! read (`BbText`), and the memo a reader that found them already keeps on the payload
//! ([`TextMemo`]): the BreadBoard client finds them in the scan that checks the payload's
//! text ([`bb_payload::canonical_fields`]), so the batcher's key of each delta (read for the
//! delta and again for the one after it) and the reducers read no text.

use std::borrow::Cow;
use std::ops::Range;

use bb_payload::{Field, LooseStr, Payload};
use serde::Deserialize;

use crate::class::{EventClass, classify_breadboard};
use crate::kilo;
use crate::splice::Places;

/// The top-level fields `BbText` reads, in the order [`TextMemo::new`] takes them.
pub const TEXT_FIELDS: [&str; 4] = ["item_id", "message_id", "delta", "text"];

/// Whether the batcher or the reducers read a BreadBoard event of type `kind` as `BbText`
/// (the assistant and reasoning streams): the events worth a [`TextMemo`].
pub fn reads_text(kind: &str) -> bool {
    matches!(classify_breadboard(kind), EventClass::AssistantStream | EventClass::ReasoningStream)
}

/// A BreadBoard assistant or reasoning event's fields, read from its payload's text: its
/// message id (the first non-empty of `item_id`, on the agent path, and `message_id`, in
/// replays) and its text (`delta`, `text`). Shared by the batcher and the reducers, so
/// coalescing uses the reducers' key.
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct BbText<'a> {
    #[serde(borrow)]
    pub(crate) item_id: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) message_id: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) delta: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) text: LooseStr<'a>,
}

impl<'a> BbText<'a> {
    /// `payload` read as [`BbText`]: from its memo ([`TextMemo`]) when it has one, else
    /// read now.
    pub(crate) fn of(payload: &'a Payload) -> Self {
        match payload.memo::<TextMemo>() {
            Some(memo) => memo.fields(payload),
            None => payload.read(),
        }
    }

    /// The message id.
    pub(crate) fn message_id(&self) -> Option<&str> {
        kilo::non_empty(&self.item_id).or_else(|| kilo::non_empty(&self.message_id))
    }

    /// The message id (empty when none) and the text of `field` (`delta` or `text`), moved
    /// out.
    pub(crate) fn into_key(self, field: &str) -> (Cow<'a, str>, Option<Cow<'a, str>>) {
        let id = [self.item_id.0, self.message_id.0].into_iter().flatten().find(|s| !s.is_empty());
        let text = if field == "text" { self.text.0 } else { self.delta.0 };
        (id.unwrap_or_default(), text)
    }
}

/// What a reader keeps of a BreadBoard payload's [`TEXT_FIELDS`] ([`Payload::set_memo`]):
/// where each is in the payload's text (between its quotes), or that it is absent or not a
/// string. Only for fields that need no unescaping, whose text is their value.
#[derive(Debug, Clone, PartialEq)]
pub struct TextMemo {
    fields: [Option<Range<usize>>; 4],
}

impl TextMemo {
    /// The memo of the [`TEXT_FIELDS`] as found in the payload's text (in that order), to be
    /// kept on that payload; `None` when one is a string with an escape (a read unescapes it:
    /// the payload is read instead).
    pub fn new(found: [Field; 4]) -> Option<Self> {
        let mut fields = [None, None, None, None];
        for (held, found) in fields.iter_mut().zip(found) {
            *held = match found {
                Field::Absent => None,
                Field::At(at) => Some(at),
                Field::Escaped => return None,
            };
        }
        Some(Self { fields })
    }

    /// The [`TEXT_FIELDS`] of `payload` (the one this memo is kept on), in that order: each
    /// string's value, or `None` when the field is absent or not a string (what
    /// `payload.get(field).and_then(Value::as_str)` finds).
    pub fn found<'a>(&self, payload: &'a Payload) -> [Option<&'a str>; 4] {
        let text = payload.text().unwrap_or_default();
        self.fields.each_ref().map(|at| at.as_ref().and_then(|at| text.get(at.clone())))
    }

    /// Where the string of `field` (`delta` or `text`) is in the payload's text (between its
    /// quotes), when it is one.
    pub(crate) fn span(&self, field: &str) -> Option<Range<usize>> {
        self.fields[if field == "text" { 3 } else { 2 }].clone()
    }

    /// The fields, as a read of `payload` (the one this memo is kept on) finds them.
    pub(crate) fn fields<'a>(&self, payload: &'a Payload) -> BbText<'a> {
        let [item_id, message_id, delta, text] =
            self.found(payload).map(|s| LooseStr(s.map(Cow::Borrowed)));
        BbText { item_id, message_id, delta, text }
    }
}

impl Places for TextMemo {
    fn place(&self, field: &str) -> Option<Range<usize>> {
        self.span(field)
    }

    fn places_mut(&mut self) -> impl Iterator<Item = &mut Range<usize>> {
        self.fields.iter_mut().flatten()
    }
}
