//! The event list of one `bb/events` message: its items, or, once the host core has written
//! it, their JSON text.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use super::topics::EventItem;

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

/// Items already written: each one's JSON, in order (written as one array).
struct Written {
    json: Vec<Box<RawValue>>,
    ids: Vec<String>,
    classes: Vec<String>,
}

impl Written {
    /// Bytes of the array: the items, the commas between them and the brackets.
    fn len(&self) -> usize {
        let items: usize = self.json.iter().map(|j| j.get().len()).sum();
        items + self.json.len().saturating_sub(1) + 2
    }
}

/// Gathers the event items of one message, writing each as it comes (the host core's
/// message splitting: an item is written, and kept, refused for its length, or moved to
/// the next message). An item is serialized once; the list's text is its items' texts,
/// and needs no second check (serde_json wrote it).
#[derive(Debug, Default)]
pub struct EventsWriter {
    json: Vec<Box<RawValue>>,
    ids: Vec<String>,
    classes: Vec<String>,
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
        if item.check_counts().is_err() {
            return Err(Refused::Unwritable(Box::new(item)));
        }
        // Fails only for a map with non-string keys, which a `Map` cannot hold; NaN and
        // infinite floats are written as `null`.
        let Ok(json) = serde_json::value::to_raw_value(&item) else {
            return Err(Refused::Unwritable(Box::new(item)));
        };
        let size = json.get().len();
        if size > room {
            return Err(Refused::TooLong(Box::new(item)));
        }
        let EventItem { event, class, session_id, .. } = item;
        self.json.push(json);
        // An event of another session (a sub-agent's prompt shown on an ancestor's tab) is
        // no position of the message's session: its id is not reported.
        self.ids.push(if session_id.is_some() { String::new() } else { event.id });
        self.classes.push(class);
        Ok(size)
    }

    /// Moves the last item into a new writer (the message is full; it starts the next).
    pub fn take_last(&mut self) -> EventsWriter {
        let mut next = EventsWriter::default();
        if let (Some(json), Some(id), Some(class)) =
            (self.json.pop(), self.ids.pop(), self.classes.pop())
        {
            next.json.push(json);
            next.ids.push(id);
            next.classes.push(class);
        }
        next
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.json.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.json.is_empty()
    }

    /// The list, written.
    pub fn finish(self) -> Events {
        let Self { json, ids, classes } = self;
        Events(Arc::new(Repr::Written(Written { json, ids, classes })))
    }
}

impl Events {
    /// Number of events.
    pub fn len(&self) -> usize {
        match &*self.0 {
            Repr::Items(items) => items.len(),
            Repr::Written(w) => w.ids.len(),
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

    /// Whether the list is written (JSON text).
    pub fn is_written(&self) -> bool {
        matches!(&*self.0, Repr::Written(_))
    }

    /// The events' ids, in order; empty for an event of another session than the
    /// message's (a written list keeps no id for those).
    pub fn ids(&self) -> impl DoubleEndedIterator<Item = &str> {
        let (items, written) = self.sides(|w| &w.ids);
        fn own(i: &EventItem) -> &str {
            if i.session_id.is_some() { "" } else { i.event.id.as_str() }
        }
        items.iter().map(own).chain(written.iter().map(String::as_str))
    }

    /// The events' classes, in order.
    pub fn classes(&self) -> impl DoubleEndedIterator<Item = &str> {
        let (items, written) = self.sides(|w| &w.classes);
        items.iter().map(|i| i.class.as_str()).chain(written.iter().map(String::as_str))
    }

    /// The items; a written list is decoded (for readers off the delivery path: tests and
    /// tools).
    pub fn items(&self) -> Cow<'_, [EventItem]> {
        match &*self.0 {
            Repr::Items(items) => Cow::Borrowed(items),
            Repr::Written(w) => Cow::Owned(
                w.json
                    .iter()
                    .map(|j| serde_json::from_str(j.get()))
                    .collect::<Result<_, _>>()
                    .unwrap_or_else(|e| unreachable!("a written list decodes: {e}")),
            ),
        }
    }

    /// The items not written yet (none of a written list: its counts were checked when
    /// each item was written).
    pub(crate) fn unwritten(&self) -> &[EventItem] {
        self.sides(|w| &w.ids).0
    }

    /// The unwritten items, or what `field` keeps of the written ones (one side is empty).
    fn sides<'a>(
        &'a self,
        field: impl Fn(&'a Written) -> &'a Vec<String>,
    ) -> (&'a [EventItem], &'a [String]) {
        match &*self.0 {
            Repr::Items(items) => (items, &[]),
            Repr::Written(w) => (&[], field(w)),
        }
    }

    /// The JSON text of the list.
    fn json(&self) -> String {
        let written = match &*self.0 {
            Repr::Items(items) => serde_json::to_string(items),
            Repr::Written(w) => serde_json::to_string(&w.json),
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
            Repr::Written(w) => w.json.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Events {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<EventItem>::deserialize(deserializer).map(Events::from)
    }
}
