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
/// writes each item once, when it fits a message ([`EventsWriter`]); a written list is their
/// JSON text and the few facts the bridge reads of each (id, class). So what a ring holds
/// is the bytes that go out, bounded by its byte limit, and every line of the message
/// splices the same text. Both forms serialize the same way;
/// equality compares the JSON.
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

/// Items already written: `json` is the array.
struct Written {
    json: Box<RawValue>,
    ids: Vec<String>,
    classes: Vec<String>,
}

/// Writes event items, one at a time, into the JSON text of a list (the host core's
/// message splitting: an item is written once, measured, and kept, taken back, or moved to
/// the next message).
#[derive(Debug)]
pub struct EventsWriter {
    /// `[` and the items so far, comma-separated.
    json: Vec<u8>,
    /// Where each item's JSON starts.
    starts: Vec<usize>,
    ids: Vec<String>,
    classes: Vec<String>,
}

/// An item that is not written: one with a count past `2^53 - 1` (its `turn` or
/// `truncated.totalBytes`; a message carrying it is rejected when it is sent), or, not
/// reached, one serde_json cannot write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the event item cannot be sent: a count is past 2^53 - 1")]
pub struct Unwritable;

impl Default for EventsWriter {
    fn default() -> Self {
        Self { json: vec![b'['], starts: Vec::new(), ids: Vec::new(), classes: Vec::new() }
    }
}

impl EventsWriter {
    /// Writes `item` after the others; the bytes of its JSON (without a separator).
    pub fn push(&mut self, item: &EventItem) -> Result<usize, Unwritable> {
        if item.check_counts().is_err() {
            return Err(Unwritable);
        }
        let end = self.json.len();
        if !self.starts.is_empty() {
            self.json.push(b',');
        }
        let start = self.json.len();
        // Writing to a `Vec` fails only for a map with non-string keys, which a `Map`
        // cannot hold; NaN and infinite floats are written as `null`.
        if serde_json::to_writer(&mut self.json, item).is_err() {
            self.json.truncate(end);
            return Err(Unwritable);
        }
        self.starts.push(start);
        self.ids.push(item.event.id.clone());
        self.classes.push(item.class.clone());
        Ok(self.json.len() - start)
    }

    /// Removes the last item.
    pub fn pop(&mut self) {
        let Some(start) = self.starts.pop() else { return };
        self.ids.pop();
        self.classes.pop();
        // Its separator goes with it.
        self.json.truncate(if self.starts.is_empty() { 1 } else { start - 1 });
    }

    /// Moves the last item into a new writer (the message is full; it starts the next).
    pub fn take_last(&mut self) -> EventsWriter {
        let mut next = EventsWriter::default();
        let (Some(&start), Some(id), Some(class)) =
            (self.starts.last(), self.ids.last(), self.classes.last())
        else {
            return next;
        };
        next.json.extend_from_slice(&self.json[start..]);
        next.starts.push(1);
        next.ids.push(id.clone());
        next.classes.push(class.clone());
        self.pop();
        next
    }

    /// Number of items written.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// The list.
    pub fn finish(self) -> Events {
        let Self { mut json, ids, classes, .. } = self;
        json.push(b']');
        // serde_json wrote each item, so the array is JSON and UTF-8.
        let json = String::from_utf8(json)
            .ok()
            .and_then(|text| RawValue::from_string(text).ok())
            .unwrap_or_else(|| unreachable!("written items are JSON"));
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
            Repr::Written(w) => w.json.get().len(),
        }
    }

    /// Whether the list is written (JSON text).
    pub fn is_written(&self) -> bool {
        matches!(&*self.0, Repr::Written(_))
    }

    /// The events' ids, in order.
    pub fn ids(&self) -> impl DoubleEndedIterator<Item = &str> {
        let (items, written) = self.sides(|w| &w.ids);
        items.iter().map(|i| i.event.id.as_str()).chain(written.iter().map(String::as_str))
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
                serde_json::from_str(w.json.get())
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
    fn json(&self) -> Cow<'_, str> {
        match &*self.0 {
            Repr::Items(items) => Cow::Owned(serde_json::to_string(items).unwrap_or_default()),
            Repr::Written(w) => Cow::Borrowed(w.json.get()),
        }
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
            Repr::Written(w) => f.debug_tuple("Written").field(&w.json.get()).finish(),
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
