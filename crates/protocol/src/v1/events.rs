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
/// writes each item once, when its message is full ([`EventsWriter`]); a written list is their
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

/// Gathers the event items of one message, measuring each as it comes (the host core's
/// message splitting: an item is measured, and kept, taken back, or moved to the next
/// message), and writes them once, as one JSON text, when the message is full.
///
/// Measuring writes nothing: a payload kept as the engine's text counts as its length.
/// So an item is serialized once, and the list's text needs no second check (serde_json
/// wrote it).
#[derive(Debug, Default)]
pub struct EventsWriter {
    items: Vec<EventItem>,
    /// Bytes of each item's JSON.
    sizes: Vec<usize>,
}

/// An item that is not written: one with a count past `2^53 - 1` (its `turn` or
/// `truncated.totalBytes`; a message carrying it is rejected when it is sent), or, not
/// reached, one serde_json cannot write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the event item cannot be sent: a count is past 2^53 - 1")]
pub struct Unwritable;

/// A writer that only counts.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The bytes of `item`'s JSON (without a separator).
fn measure(item: &EventItem) -> Result<usize, Unwritable> {
    item.check_counts().map_err(|_| Unwritable)?;
    let mut counter = Counter(0);
    // Fails only for a map with non-string keys, which a `Map` cannot hold; NaN and
    // infinite floats are written as `null`.
    serde_json::to_writer(&mut counter, item).map_err(|_| Unwritable)?;
    Ok(counter.0)
}

impl EventsWriter {
    /// Adds `item` after the others; the bytes of its JSON (without a separator). An item
    /// that cannot be written is handed back.
    pub fn push(&mut self, item: EventItem) -> Result<usize, Box<EventItem>> {
        let size = match measure(&item) {
            Ok(size) => size,
            Err(Unwritable) => return Err(Box::new(item)),
        };
        self.items.push(item);
        self.sizes.push(size);
        Ok(size)
    }

    /// Takes back the last item.
    pub fn pop(&mut self) -> Option<EventItem> {
        self.sizes.pop();
        self.items.pop()
    }

    /// Moves the last item into a new writer (the message is full; it starts the next).
    pub fn take_last(&mut self) -> EventsWriter {
        let mut next = EventsWriter::default();
        if let (Some(item), Some(size)) = (self.items.pop(), self.sizes.pop()) {
            next.items.push(item);
            next.sizes.push(size);
        }
        next
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
        let Self { items, .. } = self;
        let ids = items.iter().map(|i| i.event.id.clone()).collect();
        let classes = items.iter().map(|i| i.class.clone()).collect();
        // Every item was measured, so each can be written.
        let json = serde_json::value::to_raw_value(&items)
            .unwrap_or_else(|e| unreachable!("measured items are written: {e}"));
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
