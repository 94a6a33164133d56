//! The per-session event log: stored envelopes, the bounded replay ring and the resume rules
//! of the engine (token = `seq` or envelope UUID, 409 when not in the ring, `limit`).

use std::collections::VecDeque;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

/// One published event, serialized once.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// `seq`, `None` only for the connect-time snapshot.
    pub seq: Option<u64>,
    /// The envelope UUID.
    pub id: String,
    /// The event type.
    pub kind: String,
    /// Compact ASCII JSON of the whole envelope.
    pub json: String,
}

impl StoredEvent {
    /// The SSE `id:` value: the `seq`, or the UUID for an un-sequenced event.
    pub fn sse_id(&self) -> String {
        match self.seq {
            Some(seq) => seq.to_string(),
            None => self.id.clone(),
        }
    }
}

/// The envelope fields in the engine's order.
#[derive(Debug, Serialize)]
pub(crate) struct Envelope<'a> {
    pub(crate) id: &'a str,
    pub(crate) seq: Option<u64>,
    #[serde(rename = "type")]
    pub(crate) kind: &'a str,
    pub(crate) session_id: &'a str,
    pub(crate) turn: Option<i64>,
    pub(crate) timestamp: u64,
    pub(crate) timestamp_ms: u64,
    pub(crate) protocol_version: &'a str,
    pub(crate) payload: &'a Map<String, Value>,
}

impl Envelope<'_> {
    /// Serializes to compact JSON with every non-ASCII character `\u`-escaped, as the engine
    /// writes it (so one `data:` line per event).
    pub(crate) fn to_ascii_json(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"));
        ascii_escape(&json)
    }
}

/// Replaces every non-ASCII character of a JSON text by its `\uXXXX` escape (surrogate
/// pairs above the BMP). Valid because non-ASCII only occurs inside JSON strings.
pub fn ascii_escape(json: &str) -> String {
    if json.is_ascii() {
        return json.to_owned();
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// The resume token did not name an event still in the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowExceeded;

/// The bounded ring of the last `capacity` sequenced events.
#[derive(Debug)]
pub struct Ring {
    capacity: usize,
    events: VecDeque<Arc<StoredEvent>>,
}

impl Ring {
    /// An empty ring holding at most `capacity` events (at least one).
    pub fn new(capacity: usize) -> Self {
        Self { capacity: capacity.max(1), events: VecDeque::new() }
    }

    /// Appends an event, evicting the oldest when full.
    pub fn push(&mut self, event: Arc<StoredEvent>) {
        if self.events.len() == self.capacity {
            self.events.pop_front();
        }
        self.events.push_back(event);
    }

    /// Number of events held.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether the ring is empty.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// What a new subscriber gets before live events, following the engine's rules:
    /// a token (seq or UUID) must name an event in the ring and yields everything after it;
    /// no token with `replay` yields the whole ring; no token without `replay` yields nothing.
    /// `limit` keeps only the last N of whatever would be replayed.
    pub fn select(
        &self,
        token: Option<&str>,
        replay: bool,
        limit: Option<usize>,
    ) -> Result<Vec<Arc<StoredEvent>>, WindowExceeded> {
        let start = match token {
            Some(token) => {
                let numeric = token.trim().parse::<u64>().ok();
                let position = self.events.iter().position(|e| match numeric {
                    Some(n) => e.seq == Some(n),
                    None => e.id == token,
                });
                position.ok_or(WindowExceeded)? + 1
            }
            None if replay => 0,
            None => self.events.len(),
        };
        let mut selected: Vec<_> = self.events.iter().skip(start).cloned().collect();
        if let Some(limit) = limit {
            let excess = selected.len().saturating_sub(limit);
            selected.drain(..excess);
        }
        Ok(selected)
    }
}
