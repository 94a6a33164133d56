//! Kilo `GET /event` payloads → engine updates: routing by session, the webview event with its
//! id untouched (`ts` and `turn` filled from the event where it carries them), and the state
//! they imply (run flag, pending permissions, session list).
//! Pure: no IO, no clock.

use std::collections::{HashMap, HashSet};

use bb_protocol::v1::{EngineEvent, SessionSummary};
use serde_json::{Map, Value};

use super::stamp;
use crate::engine::EngineUpdate;

/// What the event mapping remembers between events.
#[derive(Debug, Default)]
pub(crate) struct KiloEventState {
    /// Pending permission request ids per session.
    pending: HashMap<String, HashSet<String>>,
    /// Last `sync` sequence number seen per session.
    seq: HashMap<String, u64>,
}

impl KiloEventState {
    /// Forgets stream-relative knowledge (sequence numbers) after a reconnect; pending
    /// permissions are rebuilt from REST by the caller.
    pub(crate) fn reset_stream(&mut self) {
        self.seq.clear();
    }

    /// Maps one event (the parsed `data:` JSON) to updates, in the order they apply.
    ///
    /// `sync` events repeat the preceding event under the same id: they are not forwarded
    /// (the webview would see a duplicate id); their per-session `seq` is checked instead and
    /// a jump reports a gap.
    pub(crate) fn apply(&mut self, raw: Value) -> Vec<EngineUpdate> {
        let Value::Object(mut obj) = raw else {
            return Vec::new();
        };
        let event_type = obj.get("type").and_then(Value::as_str).unwrap_or("unknown").to_owned();
        if event_type == "sync" {
            return self.check_seq(&obj);
        }
        let properties = match obj.remove("properties") {
            Some(Value::Object(p)) => p,
            _ => Map::new(),
        };
        let Some(session_id) =
            properties.get("sessionID").and_then(Value::as_str).map(str::to_owned)
        else {
            return Vec::new();
        };
        let id = match obj.get("id") {
            Some(Value::String(id)) => id.clone(),
            _ => String::new(),
        };
        let derived = self.derive(&event_type, &session_id, &properties);
        let event = EngineEvent {
            id,
            event_type,
            turn: stamp::event_turn(&properties),
            ts: stamp::event_ts(&properties),
            payload: properties,
        };
        let mut updates = Vec::with_capacity(1 + derived.len());
        updates.push(EngineUpdate::Events { session_id, events: vec![event] });
        updates.extend(derived);
        updates
    }

    fn check_seq(&mut self, obj: &Map<String, Value>) -> Vec<EngineUpdate> {
        let Some(sync) = obj.get("syncEvent").and_then(Value::as_object) else { return Vec::new() };
        let (Some(session), Some(seq)) = (
            sync.get("aggregateID").and_then(Value::as_str),
            sync.get("seq").and_then(Value::as_u64),
        ) else {
            return Vec::new();
        };
        self.sync_seq(session, seq)
    }

    /// A `sync` event's sequence number for `session`: a jump reports a gap.
    pub(crate) fn sync_seq(&mut self, session: &str, seq: u64) -> Vec<EngineUpdate> {
        let previous = self.seq.insert(session.to_owned(), seq);
        match previous {
            Some(prev) if seq > prev.saturating_add(1) => {
                vec![EngineUpdate::GapDetected { session_id: Some(session.to_owned()) }]
            }
            _ => Vec::new(),
        }
    }

    fn derive(
        &mut self,
        event_type: &str,
        session_id: &str,
        p: &Map<String, Value>,
    ) -> Vec<EngineUpdate> {
        let running =
            |running| EngineUpdate::SessionRunning { session_id: session_id.to_owned(), running };
        match event_type {
            "session.status" => {
                match p.get("status").and_then(|s| s.get("type")).and_then(Value::as_str) {
                    Some("idle") => vec![running(false)],
                    Some(_) => vec![running(true)],
                    None => Vec::new(),
                }
            }
            "session.idle" => vec![running(false)],
            "session.created" | "session.updated" => p
                .get("info")
                .and_then(session_summary)
                .map(EngineUpdate::SessionUpserted)
                .into_iter()
                .collect(),
            "session.deleted" => {
                self.pending.remove(session_id);
                vec![EngineUpdate::SessionRemoved(session_id.to_owned())]
            }
            "permission.asked" => {
                let Some(id) = p.get("id").and_then(Value::as_str) else { return Vec::new() };
                let set = self.pending.entry(session_id.to_owned()).or_default();
                set.insert(id.to_owned());
                vec![self.pending_count(session_id)]
            }
            "permission.replied" => {
                let Some(id) = p.get("requestID").and_then(Value::as_str) else {
                    return Vec::new();
                };
                if let Some(set) = self.pending.get_mut(session_id) {
                    set.remove(id);
                }
                vec![self.pending_count(session_id)]
            }
            _ => Vec::new(),
        }
    }

    /// Replaces a session's pending permissions (after a REST refresh).
    pub(crate) fn set_pending(&mut self, session_id: &str, ids: HashSet<String>) -> EngineUpdate {
        self.pending.insert(session_id.to_owned(), ids);
        self.pending_count(session_id)
    }

    fn pending_count(&self, session_id: &str) -> EngineUpdate {
        let count = self.pending.get(session_id).map_or(0, HashSet::len);
        EngineUpdate::PendingPermissions {
            session_id: session_id.to_owned(),
            count: u64::try_from(count).unwrap_or(u64::MAX),
        }
    }
}

/// A Kilo `Session` object as a summary (`id`, `title`, `time.updated`).
pub(crate) fn session_summary(info: &Value) -> Option<SessionSummary> {
    let session_id = info.get("id")?.as_str()?.to_owned();
    Some(SessionSummary {
        session_id,
        title: info.get("title").and_then(Value::as_str).map(str::to_owned),
        status: None,
        updated_at: info.get("time").and_then(|t| t.get("updated")).and_then(Value::as_f64),
    })
}
