//! The event list of one `bb/events` message: its items, or, once the host core has written
//! it, their JSON text.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use super::topics::EventItem;
use bb_payload::EventId;

/// The events of one `bb/events` message, in engine order. Cheap to clone: every tab
/// showing the session, its replay ring and the host's early store share one list.
///
/// A list is built from items (`Vec<EventItem>`, or decoded from a line). The host core
/// writes each item once, as it adds it to a message ([`EventsWriter`]); a written list is
/// their JSON texts and the few facts the bridge reads of each (id, class). So what a ring
/// holds is the bytes that go out, bounded by its byte limit, and every line of the message
/// splices the same texts. Both forms serialize the same way; equality compares the JSON.
#[derive(Clone, Default)]
pub struct Events(Arc<Repr>);

enum Repr {
    Items(Vec<EventItem>),
    Written(Written),
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Items(Vec::new())
    }
}

/// Items already written, in order (their JSON written as one array).
struct Written {
    items: Vec<WrittenItem>,
}

/// One item written: its JSON and the facts the bridge reads of it.
struct WrittenItem {
    json: Box<RawValue>,
    /// Empty for an event of another session than the message's.
    id: EventId,
    class: Cow<'static, str>,
}

impl Written {
    /// Bytes of the array: the items, the commas between them and the brackets.
    fn len(&self) -> usize {
        let items: usize = self.items.iter().map(|i| i.json.get().len()).sum();
        items + self.items.len().saturating_sub(1) + 2
    }

    /// The items' JSON, in order.
    fn json(&self) -> impl ExactSizeIterator<Item = &RawValue> {
        self.items.iter().map(|i| &*i.json)
    }
}

/// Most room a caller's scratch buffer keeps between items ([`EventsWriter::push_with`]):
/// a larger one, left by a large item, is given back.
const SCRATCH_KEPT: usize = 64 * 1024;

/// Gathers the event items of one message, writing each as it comes (the host core's
/// message splitting: an item is written, and kept, refused for its length, or moved to
/// the next message). An item is serialized once; the list's text is its items' texts,
/// and needs no second check (serde_json wrote it).
#[derive(Default)]
pub struct EventsWriter {
    items: Vec<WrittenItem>,
}

impl fmt::Debug for EventsWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.items.iter().map(|i| i.json.get())).finish()
    }
}

/// An item [`EventsWriter::push`] did not add, handed back.
#[derive(Debug, Clone, PartialEq)]
pub enum Refused {
    /// Its JSON is longer than the room it was given (fit it, then push it again).
    TooLong(Box<EventItem>),
    /// It cannot be written: a count is past `2^53 - 1` (its `turn` or
    /// `truncated.totalBytes`; a message carrying it is rejected when it is sent), or, not
    /// reached, serde_json cannot write it.
    Unwritable(Box<EventItem>),
}

impl Refused {
    /// The item handed back.
    pub fn into_item(self) -> EventItem {
        match self {
            Refused::TooLong(item) | Refused::Unwritable(item) => *item,
        }
    }
}

impl EventsWriter {
    /// Writes `item` after the others if its JSON takes at most `room` bytes; the bytes of
    /// its JSON (without a separator). An item that is longer, or cannot be written, is
    /// handed back and leaves nothing behind.
    pub fn push(&mut self, item: EventItem, room: usize) -> Result<usize, Refused> {
        self.push_with(item, room, &mut Vec::with_capacity(128))
    }

    /// [`EventsWriter::push`], writing the item's JSON in `scratch` first (a buffer the
    /// caller keeps across items): the item's text is then allocated once, at its length,
    /// rather than grown as it is written.
    pub fn push_with(
        &mut self,
        item: EventItem,
        room: usize,
        scratch: &mut Vec<u8>,
    ) -> Result<usize, Refused> {
        if item.check_counts().is_err() {
            return Err(Refused::Unwritable(Box::new(item)));
        }
        scratch.clear();
        // The derive's bytes, written directly. Fails only for a map with non-string keys,
        // which a `Map` cannot hold; NaN and infinite floats are written as `null`.
        let written = super::events_line::write_item(scratch, &item);
        // Its text, or whether it was too long (else unwritable).
        let text = match (written, std::str::from_utf8(scratch)) {
            (Ok(()), Ok(text)) if text.len() <= room => Ok(text.to_owned()),
            (Ok(()), Ok(_)) => Err(true),
            _ => Err(false),
        };
        if scratch.capacity() > SCRATCH_KEPT {
            *scratch = Vec::new();
        }
        let json = match text {
            // serde_json wrote it: valid JSON.
            Ok(text) => bb_payload::raw_unchecked(text),
            Err(true) => return Err(Refused::TooLong(Box::new(item))),
            Err(false) => return Err(Refused::Unwritable(Box::new(item))),
        };
        let size = json.get().len();
        let EventItem { event, class, session_id, .. } = item;
        // An event of another session (a sub-agent's prompt shown on an ancestor's tab) is
        // no position of the message's session: its id is not reported.
        let id = if session_id.is_some() { EventId::new() } else { event.id };
        self.items.push(WrittenItem { json, id, class });
        Ok(size)
    }

    /// Moves the last item into a new writer (the message is full; it starts the next).
    pub fn take_last(&mut self) -> EventsWriter {
        EventsWriter { items: self.items.pop().into_iter().collect() }
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The list, written.
    pub fn finish(self) -> Events {
        Events(Arc::new(Repr::Written(Written { items: self.items })))
    }
}

impl Events {
    /// Number of events.
    pub fn len(&self) -> usize {
        match &*self.0 {
            Repr::Items(items) => items.len(),
            Repr::Written(w) => w.items.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of the JSON text of a written list (0 for items).
    pub fn written_len(&self) -> usize {
        match &*self.0 {
            Repr::Items(_) => 0,
            Repr::Written(w) => w.len(),
        }
    }

    /// The items' JSON texts, in order, when the list is written (a line splices them).
    pub(crate) fn written_json(&self) -> Option<impl Iterator<Item = &RawValue>> {
        match &*self.0 {
            Repr::Items(_) => None,
            Repr::Written(w) => Some(w.json()),
        }
    }

    /// Whether the list is written (JSON text).
    pub fn is_written(&self) -> bool {
        matches!(&*self.0, Repr::Written(_))
    }

    /// The events' ids, in order; empty for an event of another session than the
    /// message's (a written list keeps no id for those).
    pub fn ids(&self) -> impl DoubleEndedIterator<Item = &str> {
        let (items, written) = self.sides();
        fn own(i: &EventItem) -> &str {
            if i.session_id.is_some() { "" } else { i.event.id.as_str() }
        }
        items.iter().map(own).chain(written.iter().map(|w| w.id.as_str()))
    }

    /// The events' classes, in order.
    pub fn classes(&self) -> impl DoubleEndedIterator<Item = &str> {
        let (items, written) = self.sides();
        items.iter().map(|i| &*i.class).chain(written.iter().map(|w| &*w.class))
    }

    /// The items; a written list is decoded (for readers off the delivery path: tests and
    /// tools).
    pub fn items(&self) -> Cow<'_, [EventItem]> {
        match &*self.0 {
            Repr::Items(items) => Cow::Borrowed(items),
            Repr::Written(w) => Cow::Owned(
                w.json()
                    .map(|j| serde_json::from_str(j.get()))
                    .collect::<Result<_, _>>()
                    .unwrap_or_else(|e| unreachable!("a written list decodes: {e}")),
            ),
        }
    }

    /// The items not written yet (none of a written list: its counts were checked when
    /// each item was written).
    pub(crate) fn unwritten(&self) -> &[EventItem] {
        self.sides().0
    }

    /// The unwritten items, or the written ones (one side is empty).
    fn sides(&self) -> (&[EventItem], &[WrittenItem]) {
        match &*self.0 {
            Repr::Items(items) => (items, &[]),
            Repr::Written(w) => (&[], &w.items),
        }
    }

    /// The JSON text of the list.
    fn json(&self) -> String {
        let written = match &*self.0 {
            Repr::Items(items) => serde_json::to_string(items),
            Repr::Written(w) => serde_json::to_string(&Json(w)),
        };
        written.unwrap_or_default()
    }
}

impl From<Vec<EventItem>> for Events {
    fn from(items: Vec<EventItem>) -> Self {
        Events(Arc::new(Repr::Items(items)))
    }
}

impl PartialEq for Events {
    fn eq(&self, other: &Self) -> bool {
        match (&*self.0, &*other.0) {
            (Repr::Items(a), Repr::Items(b)) => a == b,
            _ => self.json() == other.json(),
        }
    }
}

impl fmt::Debug for Events {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.0 {
            Repr::Items(items) => f.debug_list().entries(items).finish(),
            Repr::Written(_) => f.debug_tuple("Written").field(&self.json()).finish(),
        }
    }
}

impl Serialize for Events {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &*self.0 {
            Repr::Items(items) => items.serialize(serializer),
            Repr::Written(w) => Json(w).serialize(serializer),
        }
    }
}

/// A written list as its JSON array.
struct Json<'a>(&'a Written);

impl Serialize for Json<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.json())
    }
}

impl<'de> Deserialize<'de> for Events {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<EventItem>::deserialize(deserializer).map(Events::from)
    }
}
