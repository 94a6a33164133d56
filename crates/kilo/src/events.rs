//! Kilo `GET /event` payloads → host inputs: routing by session, the webview event with its
//! id untouched (`ts` and `turn` filled from the event where it carries them) and its class,
//! the state they imply (run flag, queued prompts, session list), the prompts the engine
//! raises and settles (what they let the engine do and the paths they name: the host owns
//! them), and the fail-closed rule: an event type the normalizer does not know, arriving
//! while a permission, question or tool call of its session is open, fails that turn (a
//! bridge-made [`TURN_FAILED_EVENT`] with a Retry), withdraws its prompts (the host has them
//! denied) and asks the pump to abort the turn. No IO.

use std::sync::Arc;

use crate::client::{KiloEvent, SyncEcho};
use bb_normalize::class::{EventClass, classify_kilo_fields};
use bb_protocol::v1::{EngineEvent, Payload};
use foldhash::{HashMap, HashMapExt as _};
use serde_json::{Map, Value, json};

use crate::facts::{Facts, Info, Memo, SyncFields, parse_into};
use crate::shared::{Shared, kind_of};
use crate::stamp;
use bb_host::{EngineEvents, Input, Prompt, PromptKind};

/// The bridge-made event that marks a turn failed closed (`payload: {sessionID, reason,
/// eventType, retry: {command: "retry"}}`).
pub const TURN_FAILED_EVENT: &str = "bb.turn.failed";

/// Engine calls the mapping asks for (the pump makes them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// Abort the session's turn.
    Abort(String),
}

/// An engine event with its class from the Kilo table (an event the mapping did not read
/// typed: a bridge-made one, a rebuilt snapshot).
pub(crate) fn classed(event: EngineEvent) -> (EngineEvent, EventClass) {
    let class = bb_normalize::class::classify_kilo(&event.event_type, &event.payload);
    (event, class)
}

/// What an event means, read from its body (see [`KiloEventState::apply`]).
struct Read {
    session_id: Arc<str>,
    class: EventClass,
    fail_closed: bool,
    raised: Option<Prompt>,
    settled: Option<String>,
    turn: Option<u64>,
    ts: Option<f64>,
    /// What the batcher and the reducers read of the body, read here already.
    memo: Option<Memo>,
}

/// What the event mapping remembers between events.
#[derive(Debug)]
pub(crate) struct KiloEventState {
    shared: Arc<Shared>,
    /// Every session the stream named, until it is deleted: its id as its inputs share it
    /// (the key: one allocation per session, not per event) and the last `sync` sequence
    /// number seen of it on this connection.
    sessions: HashMap<Arc<str>, Option<u64>>,
    /// Engine calls to make.
    actions: Vec<Action>,
    failures: u64,
    /// The last event's body was handed on unread and is not JSON: a `sync` echo read by
    /// comparison with it is not JSON either.
    last_malformed: bool,
}

impl Default for KiloEventState {
    fn default() -> Self {
        Self::new(Arc::new(Shared::default()))
    }
}

impl KiloEventState {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            sessions: HashMap::new(),
            actions: Vec::new(),
            failures: 0,
            last_malformed: false,
        }
    }

    /// `id` as an input's shared session id: the one its session's earlier events carried
    /// (a stream interleaves its sessions' events: each shares its session's id, however
    /// many other sessions' events came between).
    fn session_id(&mut self, id: &str) -> Arc<str> {
        if let Some((shared, _)) = self.sessions.get_key_value(id) {
            return Arc::clone(shared);
        }
        let shared: Arc<str> = Arc::from(id);
        self.sessions.insert(Arc::clone(&shared), None);
        shared
    }

    /// The engine calls asked for since the last take.
    pub(crate) fn take_actions(&mut self) -> Vec<Action> {
        std::mem::take(&mut self.actions)
    }

    /// Forgets stream-relative knowledge (sequence numbers) after a reconnect; open prompts
    /// are re-listed from REST by the caller.
    pub(crate) fn reset_stream(&mut self) {
        self.sessions.values_mut().for_each(|seq| *seq = None);
    }

    /// Maps one event to updates, in the order they apply.
    ///
    /// `sync` events repeat the preceding event under the same id: they are not forwarded
    /// (the webview would see a duplicate id); their per-session `seq` is checked instead and
    /// a jump reports a gap.
    ///
    /// An event whose body the router left unread ([`KiloEvent::is_unread`]) is validated by
    /// this one typed read of it; should the read not pass (text that is not JSON, or JSON the
    /// typed read refuses, such as duplicate keys), its data is read as the router reads
    /// other events: the same event then, or data that is not a Kilo event, counted as
    /// `events.malformed_count` exactly as the router's own.
    pub(crate) fn apply(&mut self, event: KiloEvent) -> Vec<Input> {
        let mut out = Vec::new();
        self.apply_into(event, &mut out);
        out
    }

    /// [`KiloEventState::apply`], its updates appended to `out`: the pump maps every event
    /// into one buffer it reuses, so an event costs no vector of its own.
    pub(crate) fn apply_into(&mut self, event: KiloEvent, out: &mut Vec<Input>) {
        let KiloEvent { id, event_type, body: properties, unread } = event;
        self.last_malformed = false;
        if event_type == "sync" {
            let sync: SyncFields<'_> = properties.read();
            let updates = match (sync.session(), sync.seq.0) {
                (Some(session), Some(seq)) => self.sync_seq(session, seq),
                (Some(_), None) => Vec::new(),
                (None, _) => self.unrouted(&event_type),
            };
            out.extend(updates);
            return;
        }
        let properties = if properties.is_object() { properties } else { Payload::default() };
        // Read in place and lent: a `Facts` is most of a kilobyte, each move a copy of it.
        // The update the event implies is written in place too (an `Input` is ~300 bytes).
        let mut derived = None;
        // `facts` borrows the body: it is dropped at the end of this block, in place (a
        // `drop(facts)` would first move its ~800 bytes).
        let read = {
            let mut facts = Facts::default();
            match unread {
                None => {
                    facts = properties.read();
                    self.read(&event_type, &properties, &mut facts, &mut derived)
                }
                Some(unread) => match properties.text().map(|t| parse_into(t, &mut facts)) {
                    Some(Ok(())) => self.read(&event_type, &properties, &mut facts, &mut derived),
                    _ => {
                        let data = unread.into_data();
                        match KiloEvent::parse(&data) {
                            Ok(event) => self.apply_into(event, out),
                            Err(error) => {
                                self.last_malformed = true;
                                out.extend(self.malformed(&error.to_string()));
                            }
                        }
                        return;
                    }
                },
            }
        };
        let Some(Read { session_id, class, fail_closed, raised, settled, turn, ts, memo }) = read
        else {
            out.extend(self.unrouted(&event_type));
            return;
        };
        let mut properties = properties;
        if let Some(memo) = memo {
            properties.set_memo_arc(memo);
        }
        // The session's id goes on with the input; a turn failed closed (rare) copies it.
        let failed = fail_closed.then(|| (session_id.clone(), event_type.clone()));
        let event =
            EngineEvent { id: id.unwrap_or_default(), event_type, turn, ts, payload: properties };
        let event = (event, class);
        out.push(match (raised, settled) {
            // The host shows it once (a repeat is dropped there).
            (Some(prompt), _) => {
                Input::PromptRaised { prompt: Box::new(prompt), event: Some(Box::new(event)) }
            }
            (None, Some(request_id)) => Input::PromptSettled {
                session_id: session_id.to_string(),
                request_id,
                event: Some(Box::new(event)),
            },
            _ => Input::Events { session_id, events: EngineEvents::one(event) },
        });
        if let Some(derived) = derived {
            out.push(derived);
        }
        if let Some((session_id, unknown)) = failed {
            out.extend(self.fail_turn(&session_id, &unknown));
        }
    }

    /// What an event of `event_type` whose body `properties` was read as `facts` means;
    /// `None` when it names no session. The update it implies, if any, is written into
    /// `derived`.
    fn read(
        &mut self,
        event_type: &str,
        properties: &Payload,
        facts: &mut Facts<'_>,
        derived: &mut Option<Input>,
    ) -> Option<Read> {
        let session_id = self.session_id(facts.session()?);
        let class = classify_kilo_fields(event_type, facts.kilo_fields());
        let fail_closed = class == EventClass::Unknown && self.in_flow(&session_id);
        let raised = prompt_of(event_type, &session_id, properties);
        let settled =
            matches!(event_type, "permission.replied" | "question.replied" | "question.rejected")
                .then(|| facts.request_id.get().map(str::to_owned))
                .flatten();
        // Before the memo, which takes the strings it keeps out of `facts`.
        *derived = self.derive(event_type, &session_id, properties, facts);
        let (turn, ts) = (stamp::event_turn(facts), stamp::event_ts(facts));
        let memo = facts.memo(event_type, class, properties.text());
        Some(Read { session_id, class, fail_closed, raised, settled, turn, ts, memo })
    }

    /// Data the router handed on as an event that is not one (its body, unread there, is
    /// not JSON): counted as `events.malformed_count`, as the router's own are.
    fn malformed(&self, error: &str) -> Vec<Input> {
        self.shared.malformed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tracing::warn!(%error, "engine sent an event that is not a Kilo event");
        Vec::new()
    }

    /// An event of no session (the router leaves the bodies that could name one to this
    /// reading): counted as `events.unrouted_count`, not forwarded.
    fn unrouted(&self, event_type: &str) -> Vec<Input> {
        self.shared.unrouted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tracing::trace!(%event_type, "engine event of no session");
        Vec::new()
    }

    /// A permission, question or tool call of the session is open.
    fn in_flow(&self, session_id: &str) -> bool {
        self.shared.with(session_id, |f| !f.tools.is_empty() || !f.asked.is_empty())
    }

    /// Fails the session's turn closed: the marker event, the open requests withdrawn (the
    /// host has the engine deny them), the turn aborted.
    fn fail_turn(&mut self, session_id: &str, unknown: &str) -> Vec<Input> {
        tracing::warn!(%session_id, event_type = %unknown, "unknown event during a permission or tool flow: the turn fails closed");
        self.failures += 1;
        self.actions.push(Action::Abort(session_id.to_owned()));
        self.shared.with(session_id, |f| {
            f.tools.clear();
            f.asked.clear();
        });
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
            id: format!("bb-turn-failed-{}", self.failures).into(),
            event_type: TURN_FAILED_EVENT.into(),
            turn: None,
            ts: None,
            payload: payload.into(),
        };
        vec![
            Input::Events {
                session_id: Arc::from(session_id),
                events: EngineEvents::one(classed(event)),
            },
            Input::PromptsCancelled { session_id: session_id.to_owned() },
        ]
    }

    /// A `sync` echo the router read: its sequence number is checked (one without is
    /// ignored).
    ///
    /// An echo read by comparison with an event body that was handed on unread
    /// ([`SyncEcho::repeats_unread`]) is JSON only if that body was: after one that was not,
    /// the echo is counted as `events.malformed_count` as well.
    pub(crate) fn sync_echo(&mut self, sync: &SyncEcho) -> Vec<Input> {
        if sync.repeats_unread && self.last_malformed {
            return self.malformed("a sync echo repeats an event that is not JSON");
        }
        match sync.seq {
            Some(seq) => self.sync_seq(&sync.session_id, seq),
            None => Vec::new(),
        }
    }

    /// A `sync` event's sequence number for `session`: a jump reports a gap.
    pub(crate) fn sync_seq(&mut self, session: &str, seq: u64) -> Vec<Input> {
        // Looked up first: a session's key is allocated once, not per echo.
        let previous = match self.sessions.get_mut(session) {
            Some(last) => last.replace(seq),
            None => {
                self.sessions.insert(Arc::from(session), Some(seq));
                None
            }
        };
        match previous {
            Some(prev) if seq > prev.saturating_add(1) => {
                vec![Input::Gap { session_id: Some(session.to_owned()) }]
            }
            _ => Vec::new(),
        }
    }

    /// The update an event implies, if any: `p` is its properties, `facts` what was read of
    /// them.
    fn derive(
        &mut self,
        event_type: &str,
        session_id: &str,
        p: &Payload,
        facts: &Facts<'_>,
    ) -> Option<Input> {
        let shared = self.shared.clone();
        let running = |running: bool| {
            shared.with(session_id, |f| {
                f.running = running;
                if !running {
                    f.tools.clear();
                }
            });
            Input::SessionRunning { session_id: session_id.to_owned(), running }
        };
        match event_type {
            "session.status" => match facts.status.get().and_then(|s| s.kind.get()) {
                Some("idle") => Some(running(false)),
                Some(_) => Some(running(true)),
                None => None,
            },
            "session.idle" => Some(running(false)),
            "session.queue.changed" => {
                let queued = p.get("queued").and_then(Value::as_array).map_or(0, Vec::len);
                Some(Input::QueuedPrompts {
                    session_id: session_id.to_owned(),
                    count: queued as u64,
                })
            }
            "message.part.updated" => {
                self.track_tool(session_id, facts);
                None
            }
            "session.created" | "session.updated" => facts
                .info
                .get()
                .and_then(Info::session_summary)
                .map(|s| Input::SessionUpserted(Box::new(s))),
            "session.deleted" => {
                // The host closes its prompts with it.
                self.shared.remove(session_id);
                self.sessions.remove(session_id);
                Some(Input::SessionRemoved(session_id.to_owned()))
            }
            "permission.asked" | "question.asked" => {
                let meta = p.get("metadata");
                let file = meta.and_then(|m| m.get("filepath").or_else(|| m.get("filePath")));
                let diff = meta.and_then(|m| m.get("diff"));
                let request = p.get("id").and_then(Value::as_str);
                self.shared.with(session_id, |f| {
                    if let (Some(Value::String(file)), Some(Value::String(diff))) = (file, diff) {
                        f.seen_diffs.insert(file.clone(), diff.clone());
                    }
                    if let Some(request) = request {
                        f.asked.insert(request.to_owned());
                    }
                });
                None
            }
            "permission.replied" | "question.replied" | "question.rejected" => {
                if let Some(id) = facts.request_id.get() {
                    self.shared.with(session_id, |f| f.asked.remove(id));
                }
                None
            }
            _ => None,
        }
    }

    fn track_tool(&self, session_id: &str, facts: &Facts<'_>) {
        let Some(part) = facts.part.get().filter(|part| part.kind.get() == Some("tool")) else {
            return;
        };
        let Some(call) = part.call_id.get() else { return };
        let state = part.state.get();
        let open = matches!(state.and_then(|s| s.status.get()), Some("pending" | "running"));
        let file = state.and_then(|s| s.input.get()).and_then(|i| i.file_path.get());
        let diff = state.and_then(|s| s.metadata.get()).and_then(|m| m.diff.get());
        if let (Some(file), Some(diff)) = (file, diff) {
            self.shared.with(session_id, |f| {
                f.seen_diffs.insert(file.to_owned(), diff.to_owned());
            });
        }
        self.shared.with(session_id, |f| {
            // A call reported open again (pending, then running) is not copied again.
            if open && !f.tools.contains(call) {
                f.tools.insert(call.to_owned());
            } else if !open {
                f.tools.remove(call);
            }
        });
    }
}

/// The prompt a `permission.asked` / `question.asked` raises: its id, what approving it lets
/// the engine do, and the file it names (`metadata.filepath`; for a write, its `patterns`
/// too). `None` for any other event, and for one without an id (shown as a plain event).
pub(crate) fn prompt_of(event_type: &str, session_id: &str, p: &Payload) -> Option<Prompt> {
    let kind = match event_type {
        "permission.asked" => kind_of(p.get("permission").and_then(Value::as_str).unwrap_or("")),
        "question.asked" => PromptKind::Question,
        _ => return None,
    };
    let request = p.get("id").and_then(Value::as_str)?;
    let mut prompt = Prompt::new(session_id, request, kind);
    let meta = p.get("metadata");
    let file = meta.and_then(|m| m.get("filepath").or_else(|| m.get("filePath")));
    prompt.paths.extend(file.and_then(Value::as_str).map(str::to_owned));
    if kind == PromptKind::Write && prompt.paths.is_empty() {
        let patterns = p.get("patterns").and_then(Value::as_array).into_iter().flatten();
        prompt.paths.extend(patterns.filter_map(Value::as_str).map(str::to_owned));
    }
    Some(prompt)
}
