//! The host state machine: inputs in, `bb/*` topics out, flush deadlines reported.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use bb_normalize::{Engine, Priority};
use bb_protocol::v1::{
    ConnectionPayload, EngineEvent, EventItem, EventsPayload, SessionSummary, StatePayload, V1Topic,
};

use crate::lane::Lane;

/// Tunables of the host core. The flush cadence is `bb_normalize`'s (by priority).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostConfig {
    /// A session whose pending items (a coalesced delta counts as one) reach this is flushed
    /// at once, cadence or not; no `bb/events` message carries more.
    pub max_batch: usize,
    /// Events held while the webview is hidden; beyond it the oldest batches are dropped.
    pub max_buffered_events: usize,
}

impl Default for HostConfig {
    /// 1024-item batches, 50 000 events held while hidden.
    fn default() -> Self {
        Self { max_batch: 1024, max_buffered_events: 50_000 }
    }
}

/// Everything the host core reacts to.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// The webview completed `bb.init`: it is ready to receive.
    WebviewReady,
    /// The webview was hidden (`false`) or shown (`true`).
    Visibility(bool),
    /// The engine's full session list (replaces what is known, keeps run state).
    SessionsListed(Vec<SessionSummary>),
    /// A session was created or changed.
    SessionUpserted(SessionSummary),
    /// A session was deleted.
    SessionRemoved(String),
    /// The webview selected a session.
    SessionSelected(String),
    /// A session started or finished running.
    SessionRunning {
        /// The session.
        session_id: String,
        /// Whether a turn is in progress.
        running: bool,
    },
    /// A session's pending permission requests.
    PendingPermissions {
        /// The session.
        session_id: String,
        /// How many wait for an answer.
        count: u64,
    },
    /// Engine events of one session, in engine order.
    EngineEvents {
        /// The session.
        session_id: String,
        /// The events.
        events: Vec<EngineEvent>,
    },
    /// The engine connection changed.
    Connection(ConnectionPayload),
}

#[derive(Debug, Clone, Default)]
struct SessionState {
    summary: Option<SessionSummary>,
    running: bool,
    pending_permissions: u64,
}

/// The host core. Feed it with [`Host::handle`] and [`Host::handle_timeout`]; drain
/// [`Host::poll_output`]; sleep until [`Host::poll_timeout`].
#[derive(Debug)]
pub struct Host {
    config: HostConfig,
    engine: Engine,
    /// Session ids in display order; `sessions` holds their state.
    order: Vec<String>,
    sessions: HashMap<String, SessionState>,
    active: Option<String>,
    /// Event lanes per session, and the order sessions got their first pending event.
    lanes: HashMap<String, Lane>,
    batch_order: VecDeque<String>,
    ready: bool,
    visible: bool,
    /// Topics ready to leave (or held while hidden).
    out: VecDeque<V1Topic>,
    held_events: usize,
    gap: bool,
    last_state: Option<StatePayload>,
    state_dirty: bool,
    connection: Option<ConnectionPayload>,
}

impl Host {
    /// A host for the events of `engine` (it decides which events are deltas that coalesce),
    /// with nothing known; output is held until [`Input::WebviewReady`].
    pub fn new(engine: Engine, config: HostConfig) -> Self {
        Self {
            config,
            engine,
            order: Vec::new(),
            sessions: HashMap::new(),
            active: None,
            lanes: HashMap::new(),
            batch_order: VecDeque::new(),
            ready: false,
            visible: true,
            out: VecDeque::new(),
            held_events: 0,
            gap: false,
            last_state: None,
            state_dirty: false,
            connection: None,
        }
    }

    /// The active session, if any.
    pub fn active_session(&self) -> Option<&str> {
        self.active.as_deref()
    }

    /// Deltas merged into an earlier one so far, over all sessions still known.
    pub fn coalesced_deltas(&self) -> u64 {
        self.lanes.values().map(Lane::coalesced).sum()
    }

    /// Whether the engine knows `session_id` (as far as the host has seen).
    pub fn knows_session(&self, session_id: &str) -> bool {
        self.sessions.contains_key(session_id)
    }

    /// The current `bb/state` projection.
    pub fn state(&self) -> StatePayload {
        let sessions = self
            .order
            .iter()
            .filter_map(|id| {
                let s = self.sessions.get(id)?;
                let mut summary = s.summary.clone().unwrap_or_else(|| SessionSummary {
                    session_id: id.clone(),
                    title: None,
                    status: None,
                    updated_at: None,
                });
                summary.status = Some(if s.running { "running" } else { "idle" }.to_owned());
                Some(summary)
            })
            .collect();
        let running =
            self.active.as_ref().and_then(|id| self.sessions.get(id)).is_some_and(|s| s.running);
        let pending: u64 = self.sessions.values().map(|s| s.pending_permissions).sum();
        StatePayload {
            sessions,
            active_session_id: self.active.clone(),
            running: Some(running),
            pending_permission_count: Some(pending),
        }
    }

    /// Applies one input at `now`.
    pub fn handle(&mut self, input: Input, now: Instant) {
        match input {
            Input::WebviewReady => {
                self.ready = true;
                self.refresh_priorities();
                // A (re)initialised webview gets the full picture again.
                self.last_state = None;
                let queued = self.out.iter().any(|t| matches!(t, V1Topic::Connection(_)));
                if let Some(conn) = self.connection.clone().filter(|_| !queued) {
                    self.emit(V1Topic::Connection(conn));
                }
                self.show();
            }
            Input::Visibility(visible) => {
                self.visible = visible;
                self.refresh_priorities();
                if visible {
                    self.show();
                }
            }
            Input::SessionsListed(list) => {
                let mut order = Vec::with_capacity(list.len());
                let mut sessions = HashMap::with_capacity(list.len());
                for summary in list {
                    let id = summary.session_id.clone();
                    let mut state = self.sessions.remove(&id).unwrap_or_default();
                    state.summary = Some(summary);
                    if sessions.insert(id.clone(), state).is_none() {
                        order.push(id);
                    }
                }
                // Sessions with a run in progress stay even if the listing raced their creation.
                for (id, state) in self.sessions.drain() {
                    if state.running && !sessions.contains_key(&id) {
                        order.push(id.clone());
                        sessions.insert(id, state);
                    }
                }
                self.order = order;
                self.sessions = sessions;
                self.drop_idle_lanes();
                if self.active.as_ref().is_some_and(|a| !self.sessions.contains_key(a)) {
                    self.active = None;
                }
                self.refresh_priorities();
                self.state_dirty = true;
            }
            Input::SessionUpserted(summary) => {
                let id = summary.session_id.clone();
                self.entry(&id).summary = Some(summary);
                self.state_dirty = true;
            }
            Input::SessionRemoved(id) => {
                // What the session streamed before it went still leaves, in order.
                self.flush_session(&id, now);
                self.lanes.remove(&id);
                if self.sessions.remove(&id).is_some() {
                    self.order.retain(|s| *s != id);
                }
                if self.active.as_deref() == Some(id.as_str()) {
                    self.active = None;
                }
                self.state_dirty = true;
            }
            Input::SessionSelected(id) => {
                self.entry(&id);
                self.active = Some(id);
                self.refresh_priorities();
                self.state_dirty = true;
            }
            Input::SessionRunning { session_id, running } => {
                let s = self.entry(&session_id);
                if s.running != running {
                    s.running = running;
                    self.state_dirty = true;
                }
            }
            Input::PendingPermissions { session_id, count } => {
                let s = self.entry(&session_id);
                if s.pending_permissions != count {
                    s.pending_permissions = count;
                    self.state_dirty = true;
                }
            }
            Input::EngineEvents { session_id, events } => {
                if events.is_empty() {
                    return;
                }
                if !self.sessions.contains_key(&session_id) {
                    self.entry(&session_id);
                    self.state_dirty = true;
                }
                self.push_events(session_id, events, now);
            }
            Input::Connection(payload) => {
                if self.connection.as_ref() == Some(&payload) {
                    return;
                }
                self.flush_all(now);
                self.connection = Some(payload.clone());
                self.emit(V1Topic::Connection(payload));
            }
        }
        if self.state_dirty {
            self.emit_state_if_changed(now);
        }
    }

    /// Publishes every session's batch that is due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        let due: Vec<String> = self
            .batch_order
            .iter()
            .filter(|id| self.lanes.get(*id).and_then(Lane::poll_timeout).is_some_and(|d| d <= now))
            .cloned()
            .collect();
        for id in due {
            if let Some(events) = self.lanes.get_mut(&id).and_then(|l| l.poll_flush(now)) {
                self.batch_order.retain(|s| *s != id);
                self.publish(&id, events);
            }
        }
    }

    /// The earliest time a pending batch is due, if one is pending.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.lanes.values().filter_map(Lane::poll_timeout).min()
    }

    /// The next topic to send, if the webview may receive now.
    pub fn poll_output(&mut self) -> Option<V1Topic> {
        if !self.deliverable() {
            return None;
        }
        let topic = self.out.pop_front()?;
        if let V1Topic::Events(batch) = &topic {
            self.held_events = self.held_events.saturating_sub(batch.events.len());
        }
        Some(topic)
    }

    fn deliverable(&self) -> bool {
        self.ready && self.visible
    }

    fn entry(&mut self, id: &str) -> &mut SessionState {
        if !self.sessions.contains_key(id) {
            self.order.insert(0, id.to_owned());
        }
        self.sessions.entry(id.to_owned()).or_default()
    }

    /// The cadence class of a session: the one the user is looking at is active, the others
    /// (and all while the webview cannot receive) background.
    fn priority_of(&self, id: &str) -> Priority {
        if self.deliverable() && self.active.as_deref() == Some(id) {
            Priority::Active
        } else {
            Priority::Background
        }
    }

    fn refresh_priorities(&mut self) {
        let ids: Vec<String> = self.lanes.keys().cloned().collect();
        for id in ids {
            let priority = self.priority_of(&id);
            if let Some(lane) = self.lanes.get_mut(&id) {
                lane.set_priority(priority);
            }
        }
    }

    /// Forgets the lanes of sessions no longer known that hold nothing.
    fn drop_idle_lanes(&mut self) {
        let sessions = &self.sessions;
        self.lanes.retain(|id, lane| sessions.contains_key(id) || lane.pending_len() > 0);
    }

    fn push_events(&mut self, session_id: String, events: Vec<EngineEvent>, now: Instant) {
        let priority = self.priority_of(&session_id);
        let engine = self.engine;
        let lane =
            self.lanes.entry(session_id.clone()).or_insert_with(|| Lane::new(engine, priority));
        if lane.pending_len() == 0 {
            self.batch_order.push_back(session_id.clone());
        }
        for event in events {
            lane.push(now, event);
        }
        // Full, or due already (first event after a quiet spell, an immediate-flush class).
        let flushed = if lane.pending_len() >= self.config.max_batch {
            lane.flush_now(now)
        } else {
            lane.poll_flush(now)
        };
        if let Some(events) = flushed {
            self.batch_order.retain(|s| *s != session_id);
            self.publish(&session_id, events);
        }
    }

    fn flush_session(&mut self, id: &str, now: Instant) {
        let Some(events) = self.lanes.get_mut(id).and_then(|l| l.flush_now(now)) else { return };
        self.batch_order.retain(|s| s != id);
        self.publish(id, events);
    }

    fn publish(&mut self, id: &str, events: Vec<EventItem>) {
        if events.is_empty() {
            return;
        }
        let max = self.config.max_batch.max(1);
        let mut rest = events.into_iter().peekable();
        while rest.peek().is_some() {
            let chunk: Vec<EventItem> = rest.by_ref().take(max).collect();
            self.held_events += chunk.len();
            self.out.push_back(V1Topic::Events(EventsPayload {
                session_id: id.to_owned(),
                events: chunk,
                tab_id: None,
                seq: None,
                resync: None,
                view: None,
            }));
        }
        self.enforce_hold_limit();
    }

    fn flush_all(&mut self, now: Instant) {
        while let Some(id) = self.batch_order.pop_front() {
            self.flush_session(&id, now);
        }
    }

    /// Pushes a state or connection update after the pending events; while held, replaces an
    /// older update of the same topic instead of queueing another.
    fn emit(&mut self, topic: V1Topic) {
        if !self.deliverable() {
            let same = |t: &V1Topic| std::mem::discriminant(t) == std::mem::discriminant(&topic);
            if !matches!(topic, V1Topic::Events(_)) {
                self.out.retain(|t| !same(t));
            }
        }
        self.out.push_back(topic);
    }

    fn emit_state_if_changed(&mut self, now: Instant) {
        self.state_dirty = false;
        let state = self.state();
        if self.last_state.as_ref() == Some(&state) {
            return;
        }
        self.flush_all(now);
        self.last_state = Some(state.clone());
        self.emit(V1Topic::State(state));
    }

    fn enforce_hold_limit(&mut self) {
        if self.deliverable() {
            return;
        }
        while self.held_events > self.config.max_buffered_events {
            let Some(pos) = self.out.iter().position(|t| matches!(t, V1Topic::Events(_))) else {
                break;
            };
            if let Some(V1Topic::Events(batch)) = self.out.remove(pos) {
                self.held_events = self.held_events.saturating_sub(batch.events.len());
                self.gap = true;
            }
        }
    }

    /// The webview became able to receive: announce a gap if events were dropped, then the
    /// held output drains through `poll_output`, followed by the current state.
    fn show(&mut self) {
        if !self.deliverable() {
            return;
        }
        if std::mem::take(&mut self.gap) {
            let mut payload = self.connection.clone().unwrap_or(ConnectionPayload {
                status: bb_protocol::v1::ConnectionStatus::Connected,
                session_id: None,
                retry_count: None,
                last_error: None,
                gap_detected: None,
                attempt: None,
                restarting: None,
                diagnostics: None,
            });
            payload.gap_detected = Some(true);
            self.out.push_front(V1Topic::Connection(payload));
        }
        self.state_dirty = true;
    }
}
