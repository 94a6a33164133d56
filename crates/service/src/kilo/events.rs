//! Kilo `GET /event` payloads → engine updates: routing by session, the webview event with its
//! id untouched (`ts` and `turn` filled from the event where it carries them), and the state
//! they imply (run flag, pending permissions and questions through the shared permission
//! table, session list), and the fail-closed rule: an event type the normalizer does not
//! know, arriving while a permission, question or tool call of its session is open, fails
//! that turn (a bridge-made [`TURN_FAILED_EVENT`] with a Retry) and asks the pump to reject
//! what is open and abort the turn. No IO.

use std::collections::HashMap;
use std::sync::Arc;

use bb_normalize::class::{EventClass, classify_kilo};
use bb_protocol::v1::{EngineEvent, SessionSummary};
use serde_json::{Map, Value, json};

use super::shared::{Shared, kind_of};
use super::stamp;
use crate::engine::EngineUpdate;
use bb_host::permissions::RequestKind;

/// The bridge-made event that marks a turn failed closed (`payload: {sessionID, reason,
/// eventType, retry: {command: "retry"}}`).
pub const TURN_FAILED_EVENT: &str = "bb.turn.failed";

/// Engine calls the mapping asks for (the pump makes them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// Reject a permission request.
    RejectPermission(String),
    /// Reject a question.
    RejectQuestion(String),
    /// Abort the session's turn.
    Abort(String),
}

/// What the event mapping remembers between events.
#[derive(Debug)]
pub(crate) struct KiloEventState {
    shared: Arc<Shared>,
    /// Last `sync` sequence number seen per session.
    seq: HashMap<String, u64>,
    /// Engine calls to make.
    actions: Vec<Action>,
    failures: u64,
}

impl Default for KiloEventState {
    fn default() -> Self {
        Self::new(Arc::new(Shared::detached()))
    }
}

impl KiloEventState {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared, seq: HashMap::new(), actions: Vec::new(), failures: 0 }
    }

    /// The engine calls asked for since the last take.
    pub(crate) fn take_actions(&mut self) -> Vec<Action> {
        std::mem::take(&mut self.actions)
    }

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
        if !self.shows(&event_type, &session_id, &properties) {
            tracing::debug!(%event_type, %session_id, "request already shown; not repeated");
            return Vec::new();
        }
        // The flow check first: classifying reads the payload as a `Value` (moved in and
        // out, not copied).
        let (fail_closed, properties) = if self.in_flow(&session_id) {
            let payload = Value::Object(properties);
            let unknown = classify_kilo(&event_type, &payload) == EventClass::Unknown;
            let Value::Object(properties) = payload else { return Vec::new() };
            (unknown, properties)
        } else {
            (false, properties)
        };
        let derived = self.derive(&event_type, &session_id, &properties);
        let failed_type = fail_closed.then(|| event_type.clone());
        let event = EngineEvent {
            id,
            event_type,
            turn: stamp::event_turn(&properties),
            ts: stamp::event_ts(&properties),
            payload: properties,
        };
        let mut updates = Vec::with_capacity(1 + derived.len());
        updates.push(EngineUpdate::Events { session_id: session_id.clone(), events: vec![event] });
        updates.extend(derived);
        if let Some(unknown) = failed_type {
            updates.extend(self.fail_turn(&session_id, &unknown));
        }
        updates
    }

    /// Whether a permission or question event is new (a repeat is not shown again).
    fn shows(&mut self, event_type: &str, session_id: &str, p: &Map<String, Value>) -> bool {
        let kind = match event_type {
            "permission.asked" => {
                kind_of(p.get("permission").and_then(Value::as_str).unwrap_or_default())
            }
            "question.asked" => RequestKind::Question,
            _ => return true,
        };
        match p.get("id").and_then(Value::as_str) {
            Some(id) => self.shared.permits.raised(session_id, id, kind),
            None => true,
        }
    }

    /// A permission, question or tool call of the session is open.
    fn in_flow(&self, session_id: &str) -> bool {
        self.shared.permits.has_open(session_id)
            || self.shared.with(session_id, |f| !f.tools.is_empty())
    }

    /// Fails the session's turn closed: the marker event, the open requests rejected, the
    /// turn aborted.
    fn fail_turn(&mut self, session_id: &str, unknown: &str) -> Vec<EngineUpdate> {
        tracing::warn!(%session_id, event_type = %unknown, "unknown event during a permission or tool flow: the turn fails closed");
        self.failures += 1;
        for id in self.shared.permits.cancel_session(session_id) {
            self.actions.push(if id.starts_with("que") {
                Action::RejectQuestion(id)
            } else {
                Action::RejectPermission(id)
            });
        }
        self.actions.push(Action::Abort(session_id.to_owned()));
        self.shared.with(session_id, |f| f.tools.clear());
        let mut payload = Map::new();
        payload.insert("sessionID".into(), json!(session_id));
        payload.insert("reason".into(), json!("unknown_event"));
        payload.insert("eventType".into(), json!(unknown));
        payload.insert(
            "message".into(),
            json!(format!(
                "the engine sent an event the bridge does not know ({unknown}) during a \
                 permission or tool flow; the turn was stopped. Retry with bb.command retry."
            )),
        );
        payload.insert("retry".into(), json!({"command": "retry"}));
        let event = EngineEvent {
            id: format!("bb-turn-failed-{}", self.failures),
            event_type: TURN_FAILED_EVENT.into(),
            turn: None,
            ts: None,
            payload,
        };
        vec![
            EngineUpdate::Events { session_id: session_id.to_owned(), events: vec![event] },
            self.shared.permits.count_update(session_id),
        ]
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
        let shared = self.shared.clone();
        let running = |running: bool| {
            shared.with(session_id, |f| {
                f.running = running;
                if !running {
                    f.tools.clear();
                }
            });
            EngineUpdate::SessionRunning { session_id: session_id.to_owned(), running }
        };
        match event_type {
            "session.status" => {
                match p.get("status").and_then(|s| s.get("type")).and_then(Value::as_str) {
                    Some("idle") => vec![running(false)],
                    Some(_) => vec![running(true)],
                    None => Vec::new(),
                }
            }
            "session.idle" => vec![running(false)],
            "session.queue.changed" => {
                let queued = p.get("queued").and_then(Value::as_array).map_or(0, Vec::len);
                self.shared.with(session_id, |f| f.queued = queued);
                vec![EngineUpdate::QueuedPrompts {
                    session_id: session_id.to_owned(),
                    count: queued as u64,
                }]
            }
            "message.part.updated" => {
                self.track_tool(session_id, p);
                Vec::new()
            }
            "session.created" | "session.updated" => p
                .get("info")
                .and_then(session_summary)
                .map(EngineUpdate::SessionUpserted)
                .into_iter()
                .collect(),
            "session.deleted" => {
                self.shared.permits.cancel_session(session_id);
                self.shared.remove(session_id);
                vec![
                    EngineUpdate::SessionRemoved(session_id.to_owned()),
                    self.shared.permits.count_update(session_id),
                ]
            }
            "permission.asked" | "question.asked" => {
                let meta = p.get("metadata");
                let file = meta.and_then(|m| m.get("filepath").or_else(|| m.get("filePath")));
                let diff = meta.and_then(|m| m.get("diff"));
                if let (Some(Value::String(file)), Some(Value::String(diff))) = (file, diff) {
                    self.shared.with(session_id, |f| {
                        f.seen_diffs.insert(file.clone(), diff.clone());
                    });
                }
                vec![self.shared.permits.count_update(session_id)]
            }
            "permission.replied" | "question.replied" | "question.rejected" => {
                let Some(id) = p.get("requestID").and_then(Value::as_str) else {
                    return Vec::new();
                };
                self.shared.permits.replied(session_id, id);
                vec![self.shared.permits.count_update(session_id)]
            }
            _ => Vec::new(),
        }
    }

    fn track_tool(&self, session_id: &str, p: &Map<String, Value>) {
        let Some(part) = p.get("part").filter(|part| part["type"] == "tool") else { return };
        let Some(call) = part.get("callID").and_then(Value::as_str) else { return };
        let open = matches!(
            part.pointer("/state/status").and_then(Value::as_str),
            Some("pending" | "running")
        );
        let file = part.pointer("/state/input/filePath").and_then(Value::as_str);
        let diff = part.pointer("/state/metadata/diff").and_then(Value::as_str);
        if let (Some(file), Some(diff)) = (file, diff) {
            self.shared.with(session_id, |f| {
                f.seen_diffs.insert(file.to_owned(), diff.to_owned());
            });
        }
        self.shared.with(session_id, |f| {
            if open {
                f.tools.insert(call.to_owned());
            } else {
                f.tools.remove(call);
            }
        });
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
        queued_prompts: None,
    })
}
