//! Nothing is dropped for its size: batches are split by bytes under the message limit; an
//! item that alone exceeds it has its long strings replaced by `bb_normalize` head + tail
//! previews (8 KiB / 200 lines) and carries a `truncated.ref` whose full payload the bridge
//! keeps in a bounded store (`body.get`); a resync view is fitted the same way.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use bb_normalize::truncate::{Limits, truncate};
use bb_normalize::{SessionView, UpdateList};
use bb_protocol::v1::{
    EventItem, Events, EventsPayload, EventsWriter, Oversized, Receive, Refused, Truncation,
    Updates, WebviewUpdate,
};
use serde_json::{Map, Value};

/// Bytes of full bodies the store keeps; the oldest are forgotten first.
pub const BODY_STORE_BYTES: usize = 64 * 1024 * 1024;

/// Turns of the transcript a resync sent as updates carries by default
/// (`HostConfig::recent_turns`; the older ones come from `bb.history`).
pub const RECENT_TURNS: usize = 50;

/// Most bytes of updates a resync's transcript or one `bb.history` page carries (at least
/// one block goes out whatever its size).
pub const HISTORY_PAGE_BYTES: usize = 512 * 1024;

/// An [`bb_normalize::Earlier`] as the wire says it.
pub(crate) fn wire_earlier(e: bb_normalize::Earlier) -> bb_protocol::v1::Earlier {
    bb_protocol::v1::Earlier { before: e.before as u64, turns: e.turns as u64 }
}

/// Room left in a message for `tabId`, `seq` and the envelope around the payload.
pub(crate) const PAYLOAD_SLACK: usize = 256;

/// Serialized size of a `bb/events` payload.
pub(crate) fn payload_bytes(payload: &EventsPayload) -> usize {
    value_bytes(payload)
}

/// Serialized size of a `bb/events` payload of `session` with no events (what
/// [`payload_bytes`] counts of one), without building one.
pub(crate) fn empty_bytes(session: &str) -> usize {
    /// An `EventsPayload` with its session and an empty list, borrowed.
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Empty<'a> {
        session_id: &'a str,
        events: [(); 0],
    }
    value_bytes(&Empty { session_id: session, events: [] })
}

/// Serialized size of `v`, counted as it is written (nothing is allocated for the text).
fn value_bytes<T: serde::Serialize>(v: &T) -> usize {
    let mut counter = ByteCounter(0);
    match serde_json::to_writer(&mut counter, v) {
        Ok(()) => counter.0,
        Err(_) => usize::MAX,
    }
}

/// An `io::Write` that only counts.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0 += buf.len();
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Splits batches and fits oversized items; keeps the full bodies.
#[derive(Debug)]
pub(crate) struct Fitter {
    max_bytes: usize,
    /// Turns a resync sent as updates carries.
    recent_turns: usize,
    bodies: HashMap<String, String>,
    order: VecDeque<String>,
    held: usize,
    next: u64,
    /// Where each item is written before its text is allocated (kept across batches).
    scratch: Vec<u8>,
}

impl Fitter {
    pub(crate) fn new(max_bytes: usize, recent_turns: usize) -> Self {
        Fitter {
            max_bytes,
            recent_turns,
            bodies: HashMap::new(),
            order: VecDeque::new(),
            held: 0,
            next: 0,
            scratch: Vec::new(),
        }
    }

    /// The full JSON body behind a reference, while held.
    pub(crate) fn body(&self, reference: &str) -> Option<&str> {
        self.bodies.get(reference).map(String::as_str)
    }

    fn keep(&mut self, body: String) -> String {
        self.next += 1;
        let reference = format!("body-{}", self.next);
        self.held += body.len();
        self.order.push_back(reference.clone());
        self.bodies.insert(reference.clone(), body);
        while self.held > BODY_STORE_BYTES && self.order.len() > 1 {
            if let Some(old) = self.order.pop_front()
                && let Some(b) = self.bodies.remove(&old)
            {
                self.held -= b.len();
            }
        }
        reference
    }

    pub(crate) fn budget(&self) -> usize {
        self.max_bytes.saturating_sub(PAYLOAD_SLACK)
    }

    /// A batch as messages, appended to `out`: at most `max_items` items and `max_bytes`
    /// each, in order, with their serialized sizes. Each item is written (serialized) here,
    /// once: the messages hold its JSON, and the item's tree is dropped.
    pub(crate) fn split(
        &mut self,
        session: &Arc<str>,
        items: Vec<EventItem>,
        max_items: usize,
        out: &mut Vec<(EventsPayload, usize)>,
    ) {
        let message = |events: Events| EventsPayload::new(Arc::clone(session), events);
        let base = empty_bytes(session);
        let budget = self.budget();
        // Room for one item's JSON in a message of its own.
        let room = budget.saturating_sub(base);
        let mut current = EventsWriter::default();
        let mut bytes = base;
        for item in items {
            let size = match current.push_with(item, room, &mut self.scratch) {
                Err(Refused::TooLong(item)) => {
                    let item = self.fit_item(*item, room);
                    current.push_with(item, usize::MAX, &mut self.scratch)
                }
                pushed => pushed,
            };
            let size = match size {
                Ok(size) => size,
                Err(refused) => {
                    let item = refused.into_item();
                    // Not writable (a count out of range): sent alone, as an item, so the
                    // rejection it meets takes no other event with it.
                    if !current.is_empty() {
                        out.push((message(std::mem::take(&mut current).finish()), bytes));
                        bytes = base;
                    }
                    let alone = message(Events::from(vec![item]));
                    let size = payload_bytes(&alone);
                    out.push((alone, size));
                    continue;
                }
            };
            let full = current.len() > max_items.max(1);
            if current.len() > 1 && (full || bytes + size + 1 > budget) {
                let next = current.take_last();
                out.push((message(std::mem::replace(&mut current, next).finish()), bytes));
                bytes = base;
            }
            bytes += size + usize::from(current.len() > 1);
        }
        if !current.is_empty() {
            out.push((message(current.finish()), bytes));
        }
    }

    /// Replaces the item's long strings by previews (and, if that is not enough, its whole
    /// payload by one preview of it), keeping the full payload under a reference.
    fn fit_item(&mut self, mut item: EventItem, budget: usize) -> EventItem {
        let full = serde_json::to_string(&item.event.payload).unwrap_or_default();
        let total_bytes = full.len() as u64;
        let reference = self.keep(full.clone());
        let mut fields = Vec::new();
        shorten(item.event.payload.value_mut(), "", &reference, &mut fields);
        item.truncated =
            Some(Truncation { body_ref: reference.clone(), fields: fields.clone(), total_bytes });
        if value_bytes(&item) > budget {
            let preview = truncate(&full, Limits::default(), Some(&reference));
            let mut map = Map::new();
            map.insert("preview".into(), Value::String(preview.text));
            item.event.payload = map.into();
            item.truncated =
                Some(Truncation { body_ref: reference, fields: vec![String::new()], total_bytes });
        }
        item
    }

    /// The updates of a message as it goes out: one too large for any message on its own
    /// is kept aside and replaced by an `oversized` update naming it (`body.get`).
    pub(crate) fn updates(&mut self, mut list: UpdateList) -> Updates {
        let most = self.budget() / 2;
        for u in &mut list {
            if u.get().len() > most {
                let total_bytes = u.get().len() as u64;
                let reference = self.keep(u.get().to_owned());
                let oversized =
                    WebviewUpdate::Oversized(Oversized { body_ref: reference.into(), total_bytes });
                if let Ok(json) = serde_json::value::to_raw_value(&oversized) {
                    *u = json;
                }
            }
        }
        Updates::from_written(list)
    }

    /// A declared resync of `session`, as a webview receiving `receive` rebuilds it: the
    /// view model (events), the updates that rebuild it (updates), or both. Its size is
    /// given without the updates (see `shape`).
    pub(crate) fn resync(
        &mut self,
        session: &str,
        view: &SessionView,
        receive: Receive,
    ) -> (EventsPayload, usize) {
        let mut earlier = None;
        let updates = receive.updates().then(|| {
            let mut list = UpdateList::new();
            earlier =
                view.snapshot_recent_updates(&mut list, self.recent_turns, HISTORY_PAGE_BYTES);
            self.updates(list)
        });
        let (mut payload, bytes) = if receive.events() {
            self.resync_view(session, view)
        } else {
            let payload = EventsPayload {
                resync: Some(true),
                ..EventsPayload::new(session, Events::default())
            };
            let bytes = payload_bytes(&payload);
            (payload, bytes)
        };
        payload.updates = updates;
        payload.earlier = earlier.map(wire_earlier);
        (payload, bytes)
    }

    /// A declared resync of `session` from its view model, fitted under the limit: long
    /// strings become previews naming a reference whose full text `body.get` returns.
    fn resync_view(&mut self, session: &str, view: &SessionView) -> (EventsPayload, usize) {
        let mut value = serde_json::to_value(view).unwrap_or(Value::Object(Map::new()));
        let payload = |v: Map<String, Value>| EventsPayload {
            resync: Some(true),
            view: Some(v),
            ..EventsPayload::new(session, Events::default())
        };
        let probe = payload(value.as_object().cloned().unwrap_or_default());
        let bytes = payload_bytes(&probe);
        if bytes <= self.budget() {
            return (probe, bytes);
        }
        let mut fields = Vec::new();
        shorten_each(&mut value, "", self, &mut fields);
        let fitted = payload(value.as_object().cloned().unwrap_or_default());
        let bytes = payload_bytes(&fitted);
        if bytes <= self.budget() {
            return (fitted, bytes);
        }
        // Still too large: the view is replaced by a note saying so and where it is.
        let reference = self.keep(serde_json::to_string(&value).unwrap_or_default());
        let mut note = Map::new();
        note.insert("omitted".into(), Value::Bool(true));
        note.insert("ref".into(), Value::String(reference));
        let fitted = payload(note);
        let bytes = payload_bytes(&fitted);
        (fitted, bytes)
    }
}

fn too_long(s: &str) -> bool {
    let limits = Limits::default();
    s.len() > limits.max_bytes || s.lines().count() > limits.max_lines
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Shortens every long string of `v` in place to its preview naming `reference`.
fn shorten(v: &mut Value, path: &str, reference: &str, fields: &mut Vec<String>) {
    match v {
        Value::String(s) if too_long(s) => {
            *s = truncate(s, Limits::default(), Some(reference)).text;
            fields.push(path.to_owned());
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                shorten(item, &format!("{path}/{i}"), reference, fields);
            }
        }
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                shorten(item, &format!("{path}/{}", escape(k)), reference, fields);
            }
        }
        _ => {}
    }
}

/// Like [`shorten`], each long string kept under its own reference.
fn shorten_each(v: &mut Value, path: &str, fitter: &mut Fitter, fields: &mut Vec<String>) {
    match v {
        Value::String(s) if too_long(s) => {
            let reference = fitter.keep(serde_json::to_string(&*s).unwrap_or_default());
            *s = truncate(s, Limits::default(), Some(&reference)).text;
            fields.push(path.to_owned());
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                shorten_each(item, &format!("{path}/{i}"), fitter, fields);
            }
        }
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                shorten_each(item, &format!("{path}/{}", escape(k)), fitter, fields);
            }
        }
        _ => {}
    }
}
