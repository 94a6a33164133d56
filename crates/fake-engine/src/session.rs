//! One fake session: its event log and subscribers, its status, input queue, stop flag and
//! pending permission requests.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot, watch};

use crate::ring::{Envelope, Ring, StoredEvent, WindowExceeded};
use crate::util::{iso_utc, now_ms, uuid4, wall_now};

/// The session `status` lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Just created.
    Starting,
    /// Running, also while idle between turns.
    Running,
    /// A oneshot session finished.
    Completed,
    /// The run loop failed.
    Failed,
    /// Stopped for good.
    Stopped,
}

impl Status {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Stopped => "stopped",
        }
    }
}

/// An answer to a permission request, as the engine maps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    /// `once`, `always` or `reject`.
    pub(crate) response: &'static str,
}

/// The waiting side of a pending permission request.
#[derive(Debug)]
pub(crate) struct PermissionWaiter {
    tx: Option<oneshot::Sender<Decision>>,
}

impl PermissionWaiter {
    /// Wakes the waiting turn, if one still waits.
    pub(crate) fn resolve(self, decision: Decision) {
        if let Some(tx) = self.tx {
            // The waiting turn may be gone (abandoned on delete); nothing else to do.
            let _ = tx.send(decision);
        }
    }
}

/// What a subscriber gets: the replay and the live receiver.
#[derive(Debug)]
pub(crate) struct Subscription {
    pub(crate) replay: Vec<Arc<StoredEvent>>,
    /// `None` once the run loop has ended: replay, then stay open and silent.
    pub(crate) live: Option<mpsc::UnboundedReceiver<Arc<StoredEvent>>>,
}

#[derive(Debug)]
struct Log {
    ring: Ring,
    next_seq: u64,
    subscribers: Vec<mpsc::UnboundedSender<Arc<StoredEvent>>>,
    ended: bool,
}

#[derive(Debug)]
struct Meta {
    status: Status,
    mode: Option<String>,
    model: Option<String>,
    last_activity_ms: u64,
    completion_summary: Value,
}

/// One session of the fake engine.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) created_at: String,
    pub(crate) config_path: String,
    /// The workspace the session was created with; `None`: files routes answer 409.
    pub(crate) workspace: Option<PathBuf>,
    pub(crate) metadata: Map<String, Value>,
    pub(crate) oneshot: bool,
    log: Mutex<Log>,
    meta: Mutex<Meta>,
    inputs: Mutex<Option<mpsc::UnboundedSender<String>>>,
    pub(crate) stop: watch::Sender<bool>,
    permissions: Mutex<HashMap<String, Option<oneshot::Sender<Decision>>>>,
    pub(crate) deleting: watch::Sender<bool>,
    /// Set once the run loop has ended.
    pub(crate) finished: watch::Sender<bool>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Session {
    /// A new session and the receiving end of its input queue.
    pub(crate) fn new(
        config_path: String,
        workspace: Option<PathBuf>,
        metadata: Map<String, Value>,
        ring_capacity: usize,
    ) -> (Arc<Self>, mpsc::UnboundedReceiver<String>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let oneshot = metadata.get("cli_session_kind").and_then(Value::as_str) == Some("oneshot")
            || metadata.get("non_interactive_cli_session") == Some(&Value::Bool(true));
        let session = Self {
            id: uuid4(),
            created_at: iso_utc(wall_now()),
            config_path,
            workspace,
            metadata,
            oneshot,
            log: Mutex::new(Log {
                ring: Ring::new(ring_capacity),
                next_seq: 1,
                subscribers: Vec::new(),
                ended: false,
            }),
            meta: Mutex::new(Meta {
                status: Status::Starting,
                mode: None,
                model: None,
                last_activity_ms: now_ms(),
                completion_summary: Value::Null,
            }),
            inputs: Mutex::new(Some(tx)),
            stop: watch::channel(false).0,
            permissions: Mutex::new(HashMap::new()),
            deleting: watch::channel(false).0,
            finished: watch::channel(false).0,
        };
        (Arc::new(session), rx)
    }

    fn envelope(
        &self,
        seq: Option<u64>,
        kind: &str,
        payload: &Map<String, Value>,
        turn: Option<i64>,
    ) -> StoredEvent {
        let id = uuid4();
        let ts = now_ms();
        let json = Envelope {
            id: &id,
            seq,
            kind,
            session_id: &self.id,
            turn,
            timestamp: ts,
            timestamp_ms: ts,
            protocol_version: "1.0",
            payload,
        }
        .to_ascii_json();
        StoredEvent { seq, id, kind: kind.to_owned(), json }
    }

    /// Publishes an event: next `seq`, into the ring, to every subscriber.
    pub(crate) fn publish(&self, kind: &str, payload: Map<String, Value>, turn: Option<i64>) {
        let mut log = lock(&self.log);
        let seq = log.next_seq;
        log.next_seq += 1;
        let event = Arc::new(self.envelope(Some(seq), kind, &payload, turn));
        log.ring.push(Arc::clone(&event));
        log.subscribers.retain(|s| s.send(Arc::clone(&event)).is_ok());
        drop(log);
        let mut meta = lock(&self.meta);
        meta.last_activity_ms = now_ms();
        if kind == "completion" {
            meta.completion_summary = payload.get("summary").cloned().unwrap_or(Value::Null);
        }
    }

    /// The connect-time todo snapshot: `seq: null`, UUID id, not in the ring.
    pub(crate) fn connect_snapshot(&self) -> Arc<StoredEvent> {
        let payload = json!({
            "call_id": format!("todo:snapshot:connect:{}", crate::util::random_hex(8)),
            "todo": {"op": "snapshot", "items": [], "revision": 0, "scope_key": "main", "scope_label": "main"}
        });
        let payload = payload.as_object().cloned().unwrap_or_default();
        Arc::new(self.envelope(None, "tool_result", &payload, None))
    }

    /// Registers a subscriber, atomically with the replay selection (no event is missed or
    /// doubled between the two).
    pub(crate) fn subscribe(
        &self,
        token: Option<&str>,
        replay: bool,
        limit: Option<usize>,
    ) -> Result<Subscription, WindowExceeded> {
        let mut log = lock(&self.log);
        let replay = log.ring.select(token, replay, limit)?;
        let live = if log.ended {
            None
        } else {
            let (tx, rx) = mpsc::unbounded_channel();
            log.subscribers.push(tx);
            Some(rx)
        };
        Ok(Subscription { replay, live })
    }

    /// The run loop ended: live streams get EOF.
    pub(crate) fn end_log(&self) {
        let mut log = lock(&self.log);
        log.ended = true;
        log.subscribers.clear();
        drop(log);
        self.finished.send_replace(true);
    }

    /// Waits until the run loop has ended.
    pub(crate) async fn wait_finished(&self) {
        let mut finished = self.finished.subscribe();
        // The sender lives in `self`, so `wait_for` cannot fail while we hold `self`.
        let _ = finished.wait_for(|done| *done).await;
    }

    /// Queues an input; false once the session no longer takes input.
    pub(crate) fn push_input(&self, content: String) -> bool {
        lock(&self.inputs).as_ref().is_some_and(|tx| tx.send(content).is_ok())
    }

    /// Closes the input queue (the run loop ends after the current turn).
    pub(crate) fn close_inputs(&self) {
        lock(&self.inputs).take();
    }

    pub(crate) fn status(&self) -> Status {
        lock(&self.meta).status
    }

    pub(crate) fn set_status(&self, status: Status) {
        lock(&self.meta).status = status;
    }

    /// Whether input and commands are refused with 409 `session is closed`.
    pub(crate) fn is_closed(&self) -> bool {
        matches!(self.status(), Status::Completed | Status::Failed | Status::Stopped)
    }

    pub(crate) fn set_mode(&self, mode: String) {
        lock(&self.meta).mode = Some(mode);
    }

    pub(crate) fn set_model(&self, model: String) {
        lock(&self.meta).model = Some(model);
    }

    /// Registers a pending permission request; the receiver resolves on a decision.
    pub(crate) fn add_permission(&self, request_id: &str) -> oneshot::Receiver<Decision> {
        let (tx, rx) = oneshot::channel();
        lock(&self.permissions).insert(request_id.to_owned(), Some(tx));
        rx
    }

    /// Registers a pending request nobody waits on (the debug `run_tests` command).
    pub(crate) fn add_detached_permission(&self, request_id: &str) {
        lock(&self.permissions).insert(request_id.to_owned(), None);
    }

    /// Whether some permission request waits for an answer.
    pub(crate) fn has_pending_permission(&self) -> bool {
        !lock(&self.permissions).is_empty()
    }

    /// Takes a pending request out of the table; `None` when no such request is pending.
    /// The caller publishes the response, then resolves the waiter, so the response event
    /// precedes whatever the resumed turn publishes.
    pub(crate) fn take_permission(&self, request_id: &str) -> Option<PermissionWaiter> {
        lock(&self.permissions).remove(request_id).map(|tx| PermissionWaiter { tx })
    }

    /// The `SessionSummary` JSON.
    pub(crate) fn summary(&self) -> Value {
        let meta = lock(&self.meta);
        let mut metadata = self.metadata.clone();
        metadata.insert("config_path".into(), Value::String(self.config_path.clone()));
        let last = std::time::Duration::from_millis(meta.last_activity_ms);
        json!({
            "session_id": self.id,
            "status": meta.status.as_str(),
            "created_at": self.created_at,
            "last_activity_at": iso_utc(last),
            "model": meta.model,
            "mode": meta.mode,
            "completion_summary": meta.completion_summary,
            "reward_summary": null,
            "logging_dir": null,
            "metadata": metadata,
        })
    }

    /// Number of events in the ring (for tests and diagnostics).
    pub(crate) fn ring_len(&self) -> usize {
        lock(&self.log).ring.len()
    }

    /// The last `seq` published, 0 before any.
    pub(crate) fn last_seq(&self) -> u64 {
        lock(&self.log).next_seq - 1
    }
}
