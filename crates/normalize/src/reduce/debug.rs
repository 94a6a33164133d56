//! The debug lane: unknown events kept as redacted `unknown_event` nodes and counted, plus
//! counters of connection-level and context-tree events and the resume position.

use std::collections::{BTreeMap, VecDeque};

use bb_protocol::v1::EventId;
use serde::Serialize;

use crate::event::RawEvent;
use crate::redact::log_line_json;

/// Unknown events kept (the oldest beyond this are evicted, and counted).
pub const UNKNOWN_KEPT: usize = 256;
/// Cap of an unknown event's redacted payload line.
pub const UNKNOWN_PAYLOAD_CAP: usize = 2 * 1024;

/// An unknown event, as kept for the debug lane and logged.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnknownNode {
    /// The event id.
    pub event_id: Option<String>,
    /// The engine type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Size of the serialized payload in bytes.
    pub payload_size: usize,
    /// The payload, redacted, on one line, capped.
    pub payload: String,
    /// Its number among the session's unknown events (from 1).
    #[serde(skip)]
    pub n: u64,
}

impl UnknownNode {
    /// The redacted node of an event (what is logged for it).
    pub fn of(ev: &RawEvent) -> Self {
        let payload_size = serde_json::to_string(&ev.payload).map_or(0, |s| s.len());
        Self {
            event_id: ev.id.as_deref().map(str::to_owned),
            kind: ev.kind.to_string(),
            payload_size,
            payload: log_line_json(&ev.payload, UNKNOWN_PAYLOAD_CAP),
            n: 0,
        }
    }
}

/// The debug lane.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DebugLane {
    /// Events reduced (coalesced deltas count one each).
    pub events: u64,
    /// Id of the last event reduced that had one (set at every event: kept as the event
    /// holds it, no copy on the heap).
    pub last_event_id: Option<EventId>,
    /// Highest `seq` reduced: BreadBoard's envelope seq (its resumable SSE id; the
    /// connect-time snapshot has none) or Kilo's `sync` seq (a gap means missed events).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_seq: Option<u64>,
    /// Unknown events seen.
    pub unknown_count: u64,
    /// Unknown events seen, by type.
    pub unknown_by_type: BTreeMap<String, u64>,
    /// The last [`UNKNOWN_KEPT`] unknown events.
    pub unknown: VecDeque<UnknownNode>,
    /// Unknown nodes evicted from `unknown`.
    pub unknown_evicted: u64,
    /// Connection-level events seen (connected, heartbeat, sync, instance noise).
    pub connection_events: u64,
    /// Context-tree node events seen.
    pub ctree_nodes: u64,
}

impl DebugLane {
    /// Records that `count` events were reduced, the last one being `ev`.
    pub(crate) fn seen(&mut self, ev: &RawEvent, count: u64) {
        self.events += count;
        if ev.id.is_some() {
            self.last_event_id.clone_from(&ev.id);
        }
        if let Some(seq) = ev.seq {
            self.last_seq = Some(self.last_seq.map_or(seq, |s| s.max(seq)));
        }
    }

    /// Keeps an unknown event; returns the node (for logging).
    pub(crate) fn unknown(&mut self, ev: &RawEvent) -> &UnknownNode {
        self.unknown_count += 1;
        *self.unknown_by_type.entry(ev.kind.to_string()).or_default() += 1;
        if self.unknown.len() == UNKNOWN_KEPT {
            self.unknown.pop_front();
            self.unknown_evicted += 1;
        }
        self.unknown.push_back(UnknownNode { n: self.unknown_count, ..UnknownNode::of(ev) });
        let last = self.unknown.len() - 1;
        &self.unknown[last]
    }
}
