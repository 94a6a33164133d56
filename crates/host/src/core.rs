//! The host state machine: inputs in, `bb/*` topics out per webview connection, flush
//! deadlines reported.

use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bb_normalize::{Engine, EventClass, Priority, UpdateList};
use bb_protocol::v1::{
    ConnectionPayload, EngineEvent, EventItem, EventsPayload, HistoryResult, SessionSummary,
    StatePayload, V1Topic,
};
use foldhash::{HashSet, HashSetExt as _};

use crate::claims::Claims;
use crate::conn::Conn;
use crate::fit::{Fitter, HISTORY_PAGE_BYTES, PAYLOAD_SLACK, RECENT_TURNS};
use crate::floor::Floors;
use crate::input::Input;
use crate::lane::{Lane, LaneTimes, earliest};
use crate::prompting::{PromptCounters, Withdraw};
use crate::prompts::{PromptConfig, Prompts};
use crate::slot::{Keyed, Slot, Slots};
use crate::tabs::{ConnId, RingLimits, Tabs, implicit_tab};

/// Tunables of the host core. The flush cadence is `bb_normalize`'s (by priority).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostConfig {
    /// A session whose pending items (a coalesced delta counts as one) reach this is flushed
    /// at once, cadence or not; no `bb/events` message carries more.
    pub max_batch: usize,
    /// Messages each tab's ring keeps (for replay and for a hidden or slow webview).
    pub max_buffered_events: usize,
    /// Bytes each tab's ring keeps; past either bound, a lagging tab gets a declared resync.
    pub max_buffered_bytes: usize,
    /// Of the messages a tab's connection was already handed, the bytes its ring keeps (a
    /// reattaching webview may have lost what was in flight: a pipe's 64 KiB, a socket's
    /// send buffer): the view holds the session already, so older ones come back as a
    /// declared resync rather than a second copy.
    pub max_handed_bytes: usize,
    /// Largest serialized `bb/events` payload; batches are split under it and an item that
    /// alone exceeds it has its large fields replaced by previews.
    pub max_message_bytes: usize,
    /// Tabs of closed connections kept for a reattach.
    pub max_detached_tabs: usize,
    /// The workspace is trusted from the start (`--trusted`): approving a write or a
    /// command needs no `bb.init {workspaceTrusted: true}`, and a webview cannot take it back.
    pub trusted: bool,
    /// Prompts a session may have queued behind its running turn; one more is `queue_full`.
    pub max_queued_prompts: u64,
    /// A prompt nobody answers within this expires and the engine is told to deny it
    /// (`--permission-timeout`); `None`: it waits for the user (or a stop).
    pub prompt_ttl: Option<Duration>,
    /// Every this long, each ready webview connection is sent the connection state again
    /// (`bb/connection` with `heartbeat`), so a webview can tell a silent bridge from a dead
    /// one; `None`: no heartbeat (the runtime turns it on with [`HEARTBEAT_INTERVAL`]).
    pub heartbeat: Option<Duration>,
    /// Turns of the transcript a resync sent as updates carries (the most recent; the rest
    /// through [`Host::history`]).
    pub recent_turns: usize,
    /// Turns of a [`Host::history`] page when the webview names no limit.
    pub history_turns: usize,
    /// Reduced views of sessions no window shows kept at most (the least recently active
    /// beyond it are dropped; see `unshown.rs`).
    pub max_unshown_views: usize,
}

/// Reduced views of sessions no window shows a host keeps by default.
pub const MAX_UNSHOWN_VIEWS: usize = 16;

/// The heartbeat interval toward the webview the bridges use: a `bb/connection` at least
/// every 5 s, so a webview shows "not responding" within 10 s of the bridge going silent.
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(5);

/// Most turns one `bb.history` page returns.
pub const HISTORY_MAX_TURNS: usize = 500;

/// Turns of a `bb.history` page when the webview names no limit.
pub const HISTORY_DEFAULT_TURNS: usize = 50;

impl Default for HostConfig {
    /// 1024-item batches; rings of 4096 messages / 8 MiB per tab, of which 256 KiB of
    /// messages already handed to the connection; messages under 1 MiB less
    /// 4 KiB of envelope room; 32 detached tabs; untrusted; 8 prompts queued behind a turn
    /// at most; permission prompts without a deadline; no heartbeat (tests drive the clock
    /// through every deadline; the runtime's default turns it on); the views of 16 sessions
    /// no window shows.
    fn default() -> Self {
        Self {
            max_batch: 1024,
            max_buffered_events: 4096,
            max_buffered_bytes: 8 * 1024 * 1024,
            max_handed_bytes: 256 * 1024,
            max_message_bytes: bb_protocol::DEFAULT_MAX_BYTES - 4096,
            max_detached_tabs: 32,
            trusted: false,
            max_queued_prompts: 8,
            prompt_ttl: None,
            heartbeat: None,
            recent_turns: RECENT_TURNS,
            history_turns: HISTORY_DEFAULT_TURNS,
            max_unshown_views: MAX_UNSHOWN_VIEWS,
        }
    }
}

/// Buffers reused from one call to the next; none holds anything between calls.
#[derive(Debug, Default)]
struct Scratch {
    open: Vec<ConnId>,
    targets: Vec<String>,
    moved: Vec<String>,
    name: String,
    /// Sessions whose pending batch is flushed, in the order their batches began.
    due: Vec<(u64, Arc<str>)>,
    /// A batch's messages as [`crate::fit::Fitter::split`] cuts them.
    messages: Vec<(EventsPayload, usize)>,
    /// One tab's messages as recorded for it, on their way to its connection.
    recorded: Vec<EventsPayload>,
}

/// The priority of session `id`'s lane: active while a receiving connection shows it.
fn priority_in(conns: &BTreeMap<ConnId, Conn>, id: &str) -> Priority {
    let watched = conns.values().any(|c| c.deliverable() && c.active.as_deref() == Some(id));
    if watched { Priority::Active } else { Priority::Background }
}

/// The open connections, written into `open`.
fn open_conns<'a>(open: &'a mut Vec<ConnId>, conns: &BTreeMap<ConnId, Conn>) -> &'a [ConnId] {
    open.clear();
    open.extend(conns.keys().copied());
    open
}

#[derive(Debug, Clone, Default)]
pub(crate) struct SessionState {
    pub(crate) summary: Option<SessionSummary>,
    /// The session that started this one, when the engine said so.
    pub(crate) parent: Option<String>,
    pub(crate) running: bool,
    /// Turns started so far (the run flag went up).
    turns: u64,
    /// Prompts queued behind the running turn: each send while a turn runs adds one; the
    /// engine's count replaces it when it gives one, else one fewer per turn started.
    pub(crate) queued_prompts: u64,
    /// The engine counts its queue itself (`Input::QueuedPrompts`).
    engine_counts_queue: bool,
    /// The `messageId` of the reply in progress.
    message_id: Option<String>,
    /// The engine no longer holds it (a select found it gone): shown read-only, said once.
    lost: bool,
    /// When it last had an event (the host's activity count): the least recent unshown
    /// views go first.
    pub(crate) active_at: u64,
    /// Its view was dropped while no window showed it: the next tab binding it is told.
    pub(crate) view_dropped: bool,
}

/// The `bb/state` status of a session the engine no longer holds.
pub const LOST_STATUS: &str = "ended";

/// The notice a session the engine no longer holds gets in its transcript, once.
pub const LOST_NOTICE: &str = "The engine no longer holds this session (it restarted without \
     it, or it was deleted elsewhere). What is shown is what the bridge kept, read-only: start \
     a new session to go on.";

/// The host core. Feed it with [`Host::handle`] and [`Host::handle_timeout`]; drain
/// [`Host::poll_output`]; sleep until [`Host::poll_timeout`].
#[derive(Debug)]
pub struct Host {
    pub(crate) config: HostConfig,
    engine: Engine,
    /// Session ids in display order; `slots` holds their state.
    pub(crate) order: Vec<String>,
    /// Per session, in one entry: its state, its event lane and its reduced view model.
    pub(crate) slots: Slots,
    /// The lanes' earliest due time and beat, while no lane changed them.
    pub(crate) lane_times: LaneTimes,
    /// Batches begun so far (a session's pending batch is numbered when it begins:
    /// batches are published in the order they began).
    batches_begun: u64,
    fitter: Fitter,
    pub(crate) conns: BTreeMap<ConnId, Conn>,
    pub(crate) tabs: Tabs,
    /// How far every tab showing each session was written (resume positions).
    floors: Floors,
    pub(crate) claims: Claims,
    state_dirty: bool,
    scratch: Scratch,
    /// Sessions whose `bb/state` entry changed since their lane last flushed: their pending
    /// events leave before the state that shows the change. `None`: every session (a
    /// listing replaced them all).
    changed: Option<HashSet<String>>,
    /// The time of the latest input (a state change is sent at the next poll).
    now: Option<Instant>,
    /// The time of the first queued event: the origin of the background lanes' flush grid
    /// (`bb_normalize::batch::BACKGROUND_GRID`), which every lane shares.
    grid: Option<Instant>,
    pub(crate) connection: Option<ConnectionPayload>,
    /// Every permission request and question (the one table, all engines).
    pub(crate) prompts: Prompts,
    /// Pending prompts the engine must be told to deny (expired, cancelled).
    pub(crate) withdraws: VecDeque<Withdraw>,
    /// The webview's word on trust (`bb.init {workspaceTrusted}`).
    pub(crate) webview_trusted: bool,
    pub(crate) prompt_counters: PromptCounters,
    /// Events the host made to close prompts the engine will not report, so far.
    pub(crate) closings: u64,
    /// Some tab's webview receives updates: the views' updates are taken at each publish
    /// (otherwise what changed waits, marked, until one does).
    pub(crate) updates_wanted: bool,
    /// When the next heartbeat is due (armed by the first input, then every interval).
    next_heartbeat: Option<Instant>,
    /// The event that showed each prompt still open (what a restart shows again).
    pub(crate) shown_events: BTreeMap<(String, String), (EngineEvent, EventClass)>,
    /// The call carrying each answer on its way (saved with it, sent again after a restart).
    pub(crate) answer_calls: BTreeMap<(String, String), serde_json::Value>,
    /// The prompt table's change count when the open prompts were last taken to be saved.
    pub(crate) saved_at: Option<u64>,
    /// Counts the event batches pushed (each session records the last: its activity).
    pub(crate) activity: u64,
    /// Views of sessions no window showed dropped so far.
    pub(crate) views_dropped: u64,
}

impl Host {
    /// A host for the events of `engine` (it decides which events are deltas that coalesce),
    /// with nothing known and no connection.
    pub fn new(engine: Engine, config: HostConfig) -> Self {
        let limits = RingLimits {
            messages: config.max_buffered_events,
            bytes: config.max_buffered_bytes,
            handed_bytes: config.max_handed_bytes,
            detached_tabs: config.max_detached_tabs,
            message_bytes: config.max_message_bytes.saturating_sub(PAYLOAD_SLACK),
        };
        Self {
            config,
            engine,
            order: Vec::new(),
            slots: Slots::default(),
            lane_times: LaneTimes::default(),
            batches_begun: 0,
            fitter: Fitter::new(config.max_message_bytes, config.recent_turns),
            conns: BTreeMap::new(),
            tabs: Tabs::new(limits),
            floors: Floors::new(config.max_buffered_events),
            claims: Claims::default(),
            state_dirty: false,
            scratch: Scratch::default(),
            changed: Some(HashSet::new()),
            now: None,
            grid: None,
            connection: None,
            prompts: Prompts::new(PromptConfig {
                pending_ttl: config.prompt_ttl,
                ..PromptConfig::default()
            }),
            withdraws: VecDeque::new(),
            webview_trusted: false,
            prompt_counters: PromptCounters::default(),
            closings: 0,
            updates_wanted: false,
            next_heartbeat: None,
            shown_events: BTreeMap::new(),
            answer_calls: BTreeMap::new(),
            activity: 0,
            views_dropped: 0,
            saved_at: None,
        }
    }

    /// The engine whose events this host classifies and coalesces.
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// The session `conn` selected, if any.
    pub fn active_session(&self, conn: ConnId) -> Option<&str> {
        self.conns.get(&conn)?.active.as_deref()
    }

    /// Whether a session's turn streams (as far as the engine's events said): it runs and
    /// waits on no prompt of its session.
    pub fn any_streaming(&self) -> bool {
        self.slots.states().any(|(id, s)| s.running && self.prompts.open_count(Some(id)) == 0)
    }

    /// Whether `session` may queue one more prompt behind its running turn: `Err` with how
    /// many are queued and the bound when not (`queue_full`).
    pub fn queue_room(&self, session: &str) -> Result<(), (u64, u64)> {
        let max = self.config.max_queued_prompts;
        match self.slots.state(session) {
            Some(s) if s.running && s.queued_prompts >= max => Err((s.queued_prompts, max)),
            _ => Ok(()),
        }
    }

    /// The turns `session` started so far, and whether one streams now: it runs and waits
    /// on no prompt of its session (a turn waiting on the user sends nothing more until it
    /// is answered).
    pub fn turns(&self, session: &str) -> (u64, bool) {
        self.slots.state(session).map_or((0, false), |s| {
            (s.turns, s.running && self.prompts.open_count(Some(session)) == 0)
        })
    }

    /// Deltas merged into an earlier one so far, over all sessions still known.
    pub fn coalesced_deltas(&self) -> u64 {
        self.slots.lanes().map(Lane::coalesced).sum()
    }

    /// Whether the engine knows `session_id` (as far as the host has seen).
    pub fn knows_session(&self, session_id: &str) -> bool {
        self.slots.knows(session_id)
    }

    /// The full body behind a truncated item's `ref`, while it is still held.
    pub fn body(&self, body_ref: &str) -> Option<&str> {
        self.fitter.body(body_ref)
    }

    /// The full body behind a `ref` seen in `session`'s events or updates (an item's
    /// payload, an oversized update, or a text previewed in the view), while still held.
    pub fn session_body(&self, session: &str, body_ref: &str) -> Option<&str> {
        self.fitter.body(body_ref).or_else(|| self.slots.view(session)?.body(body_ref))
    }

    /// A page of `session`'s older turns (`bb.history`): up to `limit` turns (at most
    /// [`HISTORY_MAX_TURNS`]; `HostConfig::history_turns` when `None`) ending at `before`, within [`HISTORY_PAGE_BYTES`], as updates
    /// oldest first, with what is older still. `None` when the host has no view of the
    /// session.
    pub fn history(
        &mut self,
        session: &str,
        before: u64,
        limit: Option<u64>,
    ) -> Option<HistoryResult> {
        let view = self.slots.view(session)?;
        let turns = limit.map_or(self.config.history_turns, |l| {
            usize::try_from(l).unwrap_or(usize::MAX).clamp(1, HISTORY_MAX_TURNS)
        });
        let before = usize::try_from(before).unwrap_or(usize::MAX);
        let mut list = UpdateList::new();
        let earlier = view.history_updates(&mut list, before, turns, HISTORY_PAGE_BYTES);
        Some(HistoryResult {
            session_id: session.to_owned(),
            updates: self.fitter.updates(list),
            earlier: earlier.map(crate::fit::wire_earlier),
        })
    }

    /// Gives back the room a burst left in the sessions' event queues and in their views'
    /// block lists (called by the runtime when the engine went quiet after a burst, before
    /// its allocator returns free pages). Nothing queued is touched.
    pub fn release_spare(&mut self) {
        for (_, slot) in self.slots.iter_mut() {
            if let Some(lane) = &mut slot.lane {
                lane.release_spare();
            }
            if let Some(view) = &mut slot.view {
                view.release_spare();
            }
        }
    }

    /// The most bytes any one tab's ring holds (bounded by `max_buffered_bytes`, unless a
    /// single message is larger, which is then the only one kept).
    pub fn buffered_bytes(&self) -> usize {
        self.tabs.max_ring_bytes()
    }

    /// Last `seq` assigned per tab.
    pub fn tab_positions(&self) -> BTreeMap<String, u64> {
        self.tabs.positions()
    }

    /// Whether the workspace is trusted: `--trusted`, or the webview's latest word.
    pub fn trusted(&self) -> bool {
        self.config.trusted || self.webview_trusted
    }

    /// Applies one input at `now`. What it changes in `bb/state` is sent at the next
    /// [`Host::poll_output`]: inputs handled in a row before it yield one state message.
    pub fn handle(&mut self, input: Input, now: Instant) {
        self.now = Some(now);
        if self.next_heartbeat.is_none() {
            self.next_heartbeat = self.config.heartbeat.map(|every| now + every);
        }
        match input {
            Input::Opened(conn) => {
                self.conn_mut(conn);
            }
            Input::Closed(conn) => {
                self.conns.remove(&conn);
                self.tabs.detach(conn);
                // Sessions no tab is bound to followed the tab-less connections' tabs.
                let sessions: Vec<String> = self.floors.sessions().map(str::to_owned).collect();
                self.tabs.mark_moved(sessions);
                self.updates_wanted = self.wants_updates();
                let freed = self.claims.closed(conn);
                self.offer(&freed, now);
                self.refresh_priorities();
            }
            Input::WebviewReady { conn, last_seen } => {
                for (tab, seen) in last_seen {
                    self.tabs.resume(conn, &tab, seen);
                }
                self.tabs.drop_unsent_implicit(conn);
                let c = self.conn_mut(conn);
                c.ready = true;
                // A (re)initialised webview gets the full picture again.
                c.last_state = None;
                let queued = c.out.iter().any(|t| matches!(t, V1Topic::Connection(_)));
                if let Some(payload) = self.connection.clone().filter(|_| !queued) {
                    self.conn_mut(conn).emit(V1Topic::Connection(payload));
                }
                self.became_deliverable(conn, now);
            }
            Input::Receive { conn, receive } => {
                self.conn_mut(conn).receive = receive;
                let changed = self.tabs.set_receive(conn, receive);
                for tab in changed {
                    self.resync_tab(&tab);
                }
                self.updates_wanted = self.wants_updates();
                self.became_deliverable(conn, now);
            }
            Input::Visibility { conn, visible } => {
                self.conn_mut(conn).visible = visible;
                self.became_deliverable(conn, now);
            }
            Input::Stalled { conn, stalled } => {
                self.conn_mut(conn).stalled = stalled;
                self.became_deliverable(conn, now);
            }
            Input::SessionSelected { conn, session_id, tab_id } => {
                self.entry(&session_id);
                self.view_was_dropped(&session_id, now);
                self.use_session(conn, &session_id, tab_id.as_deref(), now);
                self.touch(&session_id);
                self.conn_mut(conn).active = Some(session_id);
                self.refresh_priorities();
            }
            Input::TabNamed { conn, tab_id } => {
                self.conn_mut(conn);
                self.tabs.attach(&tab_id, conn, true);
            }
            Input::Claimed { conn, request_id, session_id } => {
                self.conn_mut(conn);
                self.claims.claim(conn, request_id, session_id);
            }
            Input::Answered { conn, request_id } => {
                let freed = self.claims.answered(conn, &request_id);
                self.offer(&freed, now);
            }
            Input::SessionUsed { conn, session_id, tab_id } => {
                self.view_was_dropped(&session_id, now);
                self.use_session(conn, &session_id, tab_id.as_deref(), now);
            }
            Input::MessageSent { session_id, message_id } => {
                self.entry(&session_id).message_id = Some(message_id);
            }
            Input::SessionsListed(list) => self.sessions_listed(list),
            Input::SessionUpserted(summary) => {
                let id = summary.session_id.clone();
                let entry = self.entry(&id);
                if summary.parent_id.is_some() {
                    entry.parent.clone_from(&summary.parent_id);
                }
                entry.summary = Some(*summary);
                self.touch(&id);
            }
            Input::SessionLost { session_id } => self.session_lost(&session_id, now),
            Input::SessionRemoved(id) => {
                // What the session streamed before it went still leaves, in order.
                self.flush_session(&id, now);
                self.prompts.remove_session(&id);
                let known = self.slots.remove(&id).is_some_and(|s| s.state.is_some());
                self.lane_times.forget();
                self.tabs.remove_session(&id);
                self.floors.remove(&id);
                self.claims.removed(&id);
                if let Some(changed) = &mut self.changed {
                    changed.remove(&id);
                }
                if known {
                    self.order.retain(|s| *s != id);
                }
                for c in self.conns.values_mut() {
                    if c.active.as_deref() == Some(id.as_str()) {
                        c.active = None;
                    }
                }
                self.state_dirty = true;
            }
            Input::SessionRunning { session_id, running } => {
                let s = self.entry(&session_id);
                if s.running != running {
                    s.running = running;
                    s.turns += u64::from(running);
                    // A turn started: it was the first queued prompt, when any was.
                    if running && !s.engine_counts_queue {
                        s.queued_prompts = s.queued_prompts.saturating_sub(1);
                    }
                    self.touch(&session_id);
                }
            }
            Input::QueuedPrompts { session_id, count } => {
                let s = self.entry(&session_id);
                s.engine_counts_queue = true;
                if s.queued_prompts != count {
                    s.queued_prompts = count;
                    self.touch(&session_id);
                }
            }
            Input::PromptQueued { session_id } => {
                // Counted at once, as the engine's own count may come later (it replaces
                // this one when it does).
                let s = self.entry(&session_id);
                if s.running {
                    s.queued_prompts += 1;
                    self.touch(&session_id);
                }
            }
            Input::Events { session_id, events } => {
                self.engine_events(&session_id, events.into_iter(), now);
            }
            Input::PromptRaised { prompt, event } => {
                self.prompt_raised(*prompt, event.map(|e| *e), now);
            }
            Input::PromptReplayed { prompt, event_id } => {
                self.prompt_replayed(*prompt, &event_id, now);
            }
            Input::PromptsListed { session_id, prompts } => {
                self.prompts_listed(&session_id, prompts, now);
            }
            Input::PromptSettled { session_id, request_id, event } => {
                self.prompt_settled(&session_id, &request_id, event.map(|e| *e), now);
            }
            Input::PromptsCancelled { session_id } => self.prompts_cancelled(&session_id),
            Input::PromptAnswered { session_id, request_id, outcome } => {
                self.prompt_answered(&session_id, &request_id, outcome, now);
            }
            Input::PromptResent { session_id, request_id, outcome } => {
                self.prompt_resent(&session_id, &request_id, outcome, now);
            }
            Input::EngineRestarted => self.engine_restarted(&[], now),
            Input::EngineRestartedHolding { sessions } => self.engine_restarted(&sessions, now),
            Input::PromptsRestored(saved) => self.prompts_restored(saved, now),
            Input::PromptsForgotten(forgotten) => self.prompts_forgotten(forgotten, now),
            Input::Trusted(trusted) => self.webview_trusted = trusted,
            Input::Written(written) => {
                for (tab, seq) in written {
                    self.tabs.written(&tab, seq);
                }
            }
            Input::Gap { session_id } => {
                let mut payload = self.connection.clone().unwrap_or_else(|| {
                    crate::input::connection_payload(
                        bb_protocol::v1::ConnectionStatus::Connected,
                        None,
                        None,
                    )
                });
                payload.session_id = session_id;
                payload.gap_detected = Some(true);
                self.handle(Input::Connection(Box::new(payload)), now);
            }
            Input::Connection(payload) => {
                if self.connection.as_ref() == Some(&*payload) {
                    return;
                }
                self.flush_all(now);
                let payload = *payload;
                self.connection = Some(payload.clone());
                for c in self.conns.values_mut() {
                    c.emit(V1Topic::Connection(payload.clone()));
                }
            }
        }
    }

    /// Publishes every session's batch that is due at `now`, and expires the prompts past
    /// their deadline.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.now = Some(now);
        self.expire_prompts(now);
        self.heartbeat(now);
        if self.lanes_due().is_none_or(|due| due > now) {
            // No batch is due: the lanes are not visited.
            return;
        }
        let mut due = std::mem::take(&mut self.scratch.due);
        // The pass that picks the due lanes visits every lane with events pending: the
        // earliest of the others is the due time after the flushes, with the flushed lanes'
        // own.
        let later = Cell::new(None);
        self.slots.pending_in_order(&mut due, |_, s| {
            match s.lane.as_ref().and_then(Lane::poll_timeout) {
                Some(d) if d <= now => true,
                d => {
                    later.set(earliest(later.get(), d));
                    false
                }
            }
        });
        let mut later = later.get();
        for (_, id) in due.drain(..) {
            let Some(Slot { lane: Some(lane), view, batch, .. }) = self.slots.get_mut(&id) else {
                continue;
            };
            let was = lane.times();
            let events = lane.poll_flush(now, view.get_or_insert_default());
            let times = lane.times();
            later = earliest(later, times.0);
            self.lane_times.flushed(was, times);
            if let Some(events) = events {
                *batch = None;
                self.publish(&id, events, now);
            }
        }
        self.lane_times.found_due(later);
        self.scratch.due = due;
    }

    /// When the earliest pending batch is due, if any is pending.
    pub(crate) fn lanes_due(&self) -> Option<Instant> {
        self.lane_times.due(|| self.slots.lanes().filter_map(Lane::poll_timeout).min())
    }

    /// The earliest time a pending batch is due, a prompt expires or a heartbeat is due, if
    /// any.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let lanes = self.lanes_due();
        [lanes, self.prompts.poll_timeout(), self.next_heartbeat].into_iter().flatten().min()
    }

    /// The next cadence point after `now` of the sessions a webview shows
    /// ([`bb_normalize::batch::Batcher::next_beat`]): a bridge that pauses its reads to
    /// gather engine events ends the pause before it (and before [`Host::poll_timeout`]), so
    /// that events still on their way are read in time for the beat they would make.
    pub fn next_beat(&self, now: Instant) -> Option<Instant> {
        let earliest =
            self.lane_times.beat(|| self.slots.lanes().filter_map(Lane::next_beat).min());
        match earliest {
            Some(beat) if beat > now => Some(beat),
            // A beat passed with nothing to flush: the next one after `now`, lane by lane.
            Some(_) => {
                self.slots.lanes().filter_map(Lane::next_beat).filter(|beat| *beat > now).min()
            }
            None => None,
        }
    }

    /// Sends every ready connection the connection state again when the heartbeat is due: the
    /// latest `bb/connection` (`connecting` before the engine said anything) without its
    /// session and gap marks, with `heartbeat` set. A connection that has an unsent
    /// connection update queued gets none (that update is as good, and a heartbeat must not
    /// replace a change a stalled webview has not seen yet). The next one is due an interval after this one was (a late
    /// tick does not shift the cadence; missed beats are not sent twice).
    fn heartbeat(&mut self, now: Instant) {
        let (Some(due), Some(every)) = (self.next_heartbeat, self.config.heartbeat) else {
            return;
        };
        if due > now {
            return;
        }
        let mut next = due + every;
        while next <= now {
            next += every;
        }
        self.next_heartbeat = Some(next);
        let mut payload = self.connection.clone().unwrap_or_else(|| {
            crate::input::connection_payload(
                bb_protocol::v1::ConnectionStatus::Connecting,
                None,
                None,
            )
        });
        payload.session_id = None;
        payload.gap_detected = None;
        payload.heartbeat = Some(u64::try_from(every.as_millis()).unwrap_or(u64::MAX));
        for c in self.conns.values_mut().filter(|c| c.ready) {
            if !c.out.iter().any(|t| matches!(t, V1Topic::Connection(_))) {
                c.emit(V1Topic::Connection(payload.clone()));
            }
        }
    }

    /// The next topic to send and the connection it is for, among the connections that may
    /// receive now. A hidden webview still gets `bb/connection` (the heartbeat included), so
    /// it can tell the bridge is alive; its state and events wait until it is shown.
    pub fn poll_output(&mut self) -> Option<(ConnId, V1Topic)> {
        if let Some(now) = self.now.filter(|_| self.state_dirty) {
            self.emit_state_if_changed(now);
        }
        self.conns.iter_mut().find_map(|(id, c)| {
            if c.deliverable() {
                return c.out.pop_front().map(|t| (*id, t));
            }
            if !c.ready || c.stalled {
                return None;
            }
            let at = c.out.iter().position(|t| matches!(t, V1Topic::Connection(_)))?;
            c.out.remove(at).map(|t| (*id, t))
        })
    }

    /// The next resume position: `(session, event id)` when every tab showing the session
    /// (see `floor.rs`) has been written its events up to that one, past the last position
    /// reported. The runtime hands it to the engine adapter
    /// (`EngineAdapter::delivered`).
    pub fn poll_resume(&mut self) -> Option<(String, String)> {
        let mut moved = std::mem::take(&mut self.scratch.moved);
        self.tabs.take_moved(&mut moved);
        if !moved.is_empty() {
            let open = open_conns(&mut self.scratch.open, &self.conns);
            for session in moved.drain(..) {
                if let Some(at) = self.tabs.floor(&session, open, &mut self.scratch.name) {
                    self.floors.moved(&session, at);
                }
            }
        }
        self.scratch.moved = moved;
        self.floors.poll()
    }

    /// Puts back a topic the runtime could not hand over (the connection's queue was full),
    /// ahead of the rest, and stalls the connection until [`Input::Stalled`] `false`.
    pub fn push_back_front(&mut self, conn: ConnId, topic: V1Topic) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.out.push_front(topic);
            c.stalled = true;
        }
        self.refresh_priorities();
    }

    fn conn_mut(&mut self, conn: ConnId) -> &mut Conn {
        let tabs = &mut self.tabs;
        self.conns.entry(conn).or_insert_with(|| {
            tabs.attach(&implicit_tab(conn), conn, false);
            Conn::new()
        })
    }

    /// The engine no longer holds `id` (it restarted without it): the view the bridge kept
    /// stays showable, read-only, ended, with one notice saying so and how to go on.
    fn session_lost(&mut self, id: &str, now: Instant) {
        if !self.kept_view(id) {
            return;
        }
        let state = self.entry(id);
        if std::mem::replace(&mut state.lost, true) {
            return;
        }
        state.running = false;
        let summary = state.summary.get_or_insert_with(|| SessionSummary {
            session_id: id.to_owned(),
            ..SessionSummary::default()
        });
        summary.status = Some(LOST_STATUS.to_owned());
        self.bridge_notice(id, "bb-session-lost", LOST_NOTICE, now);
        self.touch(id);
    }

    /// Whether the bridge keeps something of `id` to show: it knows the session, or still
    /// holds its reduced view.
    pub fn kept_view(&self, id: &str) -> bool {
        self.slots.get(id).is_some_and(|s| s.state.is_some() || s.view.is_some())
    }

    /// Whether the engine was found no longer holding `id` ([`Input::SessionLost`]).
    pub fn session_is_lost(&self, id: &str) -> bool {
        self.slots.state(id).is_some_and(|s| s.lost)
    }

    pub(crate) fn entry(&mut self, id: &str) -> &mut SessionState {
        let slot = self.slots.slot(id);
        if slot.state.is_none() {
            self.order.insert(0, id.to_owned());
        }
        slot.state.get_or_insert_default()
    }

    /// The parent of `session`, when the engine named one.
    pub(crate) fn sessions_parent(&self, session: &str) -> Option<&str> {
        self.slots.state(session)?.parent.as_deref()
    }

    /// The id of `conn`'s explicit tab that shows `session`, if any.
    pub(crate) fn tab_showing(&self, conn: ConnId, session: &str) -> Option<String> {
        self.tabs.showing(conn, session).map(str::to_owned)
    }

    /// Whether a tab is bound to `session`.
    pub(crate) fn tab_shows(&self, session: &str) -> bool {
        self.tabs.is_bound(session)
    }

    /// Whether `session`'s events reach a tab: one shows it, or a connection that never
    /// named a tab gets every session no tab shows.
    pub(crate) fn delivered(&self, session: &str) -> bool {
        let open: Vec<ConnId> = self.conns.keys().copied().collect();
        self.tabs.is_bound(session) || self.tabs.any_tabless(&open)
    }

    fn use_session(&mut self, conn: ConnId, session: &str, tab: Option<&str>, now: Instant) {
        self.conn_mut(conn);
        match tab {
            Some(tab) => self.tabs.bind(conn, tab, session),
            None => self.tabs.bind_implicit(conn, session),
        }
        // Whether another tab was sent the session's messages (its early ones went there).
        let shown_elsewhere = self.tabs.seen_by_any(session);
        self.claims.bound(session);
        // A tab that starts showing a session another tab showed first gets the session's
        // view: as updates when it receives them, else as a declared resync (the events it
        // was not sent are not replayed one by one: a second window, or a window re-selecting
        // after a bridge restart after another did, would otherwise miss them silently).
        let tab = tab.map_or_else(|| implicit_tab(conn), str::to_owned);
        // A tab receiving updates that was handed events published while no webview wanted
        // updates (a restarted bridge resumed the session, or showed its saved prompts,
        // before any webview was there) lacks their updates: it gets the view too.
        if let Some(t) = self.tabs.get(&tab)
            && ((t.receive.updates() || shown_elsewhere) && !t.has_seen(session)
                || t.needs_view(session))
            && self.tabs.shows(&tab, session)
        {
            self.record_resync(&tab, session);
        }
        // The tab may have been handed the session's early messages.
        self.became_deliverable(conn, now);
    }

    /// Whether some connection, or some tab kept for one, receives updates.
    fn wants_updates(&self) -> bool {
        self.conns.values().any(|c| c.receive.updates()) || self.tabs.any_receives_updates()
    }

    /// Records for `tab` a declared resync of every session it showed (its ring was shaped
    /// for another webview).
    fn resync_tab(&mut self, tab: &str) {
        let sessions = self.tabs.get(tab).map(|t| t.seen()).unwrap_or_default();
        for session in sessions {
            self.record_resync(tab, &session);
        }
    }

    /// Records for `tab` a declared resync of `session` from its view, if it has one.
    fn record_resync(&mut self, tab: &str, session: &str) {
        let Some(receive) = self.tabs.get(tab).map(|t| t.receive) else { return };
        let Some(view) = self.slots.view(session) else { return };
        let (payload, bytes) = self.fitter.resync(session, view, receive);
        let ordinal = self.floors.current(session);
        // Kept in the tab's ring; delivered from there.
        self.tabs.record(tab, payload, (bytes, ordinal), &mut Vec::new());
    }

    fn sessions_listed(&mut self, list: Vec<SessionSummary>) {
        let mut order = Vec::with_capacity(list.len());
        // Every known session is forgotten, then the listed ones are known again.
        let mut old: Keyed<SessionState> = Keyed::default();
        for (id, slot) in self.slots.iter_mut() {
            if let Some(state) = slot.state.take() {
                old.insert(id.clone(), state);
            }
        }
        for summary in list {
            let mut state = old.remove(&summary.session_id).unwrap_or_default();
            if summary.parent_id.is_some() {
                state.parent.clone_from(&summary.parent_id);
            }
            let slot = self.slots.slot(&summary.session_id);
            let id = summary.session_id.clone();
            state.summary = Some(summary);
            if slot.state.replace(state).is_none() {
                order.push(id);
            }
        }
        // Sessions with a run in progress stay even if the listing raced their creation.
        for (id, state) in old.drain() {
            if state.running {
                self.slots.slot(&id).state = Some(state);
                order.push(id);
            }
        }
        self.order = order;
        // A lane stays with its session, or while it holds events.
        for (_, slot) in self.slots.iter_mut() {
            if slot.state.is_none() && slot.lane.as_ref().is_some_and(|l| l.pending_len() == 0) {
                slot.lane = None;
                self.lane_times.forget();
            }
        }
        self.slots.prune_all();
        let known = &self.slots;
        for c in self.conns.values_mut() {
            if c.active.as_ref().is_some_and(|a| !known.knows(a)) {
                c.active = None;
            }
        }
        self.refresh_priorities();
        self.changed = None;
        self.state_dirty = true;
    }

    /// The cadence class of a session: one a receiving webview has selected is active, the
    /// others background.
    fn priority_of(&self, id: &str) -> Priority {
        priority_in(&self.conns, id)
    }

    fn refresh_priorities(&mut self) {
        let ids: Vec<String> =
            self.slots.iter().filter(|(_, s)| s.lane.is_some()).map(|(id, _)| id.clone()).collect();
        for id in ids {
            let priority = self.priority_of(&id);
            if let Some(lane) = self.slots.get_mut(&id).and_then(|s| s.lane.as_mut()) {
                lane.set_priority(priority);
                self.lane_times.forget();
            }
        }
    }

    /// Engine events of a session, each with the class its adapter decided.
    pub(crate) fn engine_events(
        &mut self,
        session_id: &str,
        events: impl ExactSizeIterator<Item = (EngineEvent, EventClass)>,
        now: Instant,
    ) {
        if events.len() == 0 {
            return;
        }
        self.push_events(session_id, None, events, now);
    }

    /// Queues events in `session_id`'s lane; `foreign`: they belong to that other session
    /// (a sub-agent's prompt shown on an ancestor's tab).
    pub(crate) fn push_events(
        &mut self,
        session_id: &str,
        foreign: Option<&str>,
        events: impl Iterator<Item = (EngineEvent, EventClass)>,
        now: Instant,
    ) {
        let engine = self.engine;
        self.activity += 1;
        let grid = *self.grid.get_or_insert(now);
        // One look-up finds the session's state, lane and view (or makes them).
        let slot = self.slots.slot(session_id);
        if slot.state.is_none() && foreign.is_none() {
            // Its first events: the session is listed first, its `bb/state` entry is new.
            self.order.insert(0, session_id.to_owned());
            mark_changed(&mut self.changed, session_id);
            self.state_dirty = true;
        }
        let state = slot.state.get_or_insert_default();
        state.active_at = self.activity;
        // The priority is looked up for a new lane only (`refresh_priorities` keeps an
        // existing lane's current).
        let conns = &self.conns;
        let lane = slot
            .lane
            .get_or_insert_with(|| Lane::new(engine, priority_in(conns, session_id), grid));
        // Its times as the kept ones know them (a new lane's are none).
        let was = lane.times();
        if lane.pending_len() == 0 {
            self.batches_begun += 1;
            slot.batch = Some(self.batches_begun);
        }
        for (event, class) in events {
            let ends = foreign.is_none() && ends_reply(&event.event_type);
            lane.push(now, event, class, state.message_id.clone(), foreign);
            if ends {
                state.message_id = None;
            }
        }
        // Full, or due already (first event after a quiet spell, an immediate-flush class).
        // The due time is read once: it decides the flush and, when there is none, is the
        // lane's new due time (`Lane::poll_flush` would read it, and then this again).
        let fresh_view = slot.view.is_none();
        let view = slot.view.get_or_insert_default();
        let due = lane.poll_timeout();
        let flushed =
            if lane.pending_len() >= self.config.max_batch || due.is_some_and(|due| due <= now) {
                lane.flush_now(now, view)
            } else {
                None
            };
        match flushed {
            Some(events) => {
                self.lane_times.flushed(was, lane.times());
                slot.batch = None;
                let name = Arc::clone(&slot.name);
                self.publish(&name, events, now);
            }
            None => self.lane_times.queued(due),
        }
        if fresh_view {
            self.bound_unshown_views();
        }
    }

    fn flush_session(&mut self, id: &str, now: Instant) {
        let Some(Slot { name, lane: Some(lane), view, batch, .. }) = self.slots.get_mut(id) else {
            return;
        };
        *batch = None;
        let flushed = lane.flush_now(now, view.get_or_insert_default());
        self.lane_times.forget();
        let Some(events) = flushed else { return };
        let name = Arc::clone(name);
        self.publish(&name, events, now);
    }

    /// Splits a flushed batch into messages under the count and byte bounds and records each
    /// for every tab showing the session; tabs of receiving connections get it at once.
    fn publish(&mut self, name: &Arc<str>, events: Vec<EventItem>, now: Instant) {
        if events.is_empty() {
            return;
        }
        let id: &str = name;
        let mut targets = std::mem::take(&mut self.scratch.targets);
        let open = open_conns(&mut self.scratch.open, &self.conns);
        let claimed = self.tabs.targets(id, open, &mut targets);
        if !claimed && self.claims.holds(id, || self.tabs.seen_by_any(id)) {
            // A request in flight is about to bind it: nobody else gets it meanwhile.
            targets.clear();
        }
        let mut lagging = Vec::new();
        let mut messages = std::mem::take(&mut self.scratch.messages);
        let mut recorded = std::mem::take(&mut self.scratch.recorded);
        self.fitter.split(name, events, self.config.max_batch, &mut messages);
        if self.updates_wanted
            && let Some(view) = self.slots.view_mut(id)
        {
            // What the batch changed in the view, with the last of its messages.
            let mut list = UpdateList::new();
            view.take_updates(&mut list);
            if !list.is_empty()
                && let Some((last, _)) = messages.last_mut()
            {
                last.updates = Some(self.fitter.updates(list));
            }
        }
        for (payload, bytes) in messages.drain(..) {
            let ordinal = self.floors.publish(&payload);
            if !claimed {
                self.tabs.keep_early(&payload, bytes, (ordinal, !self.updates_wanted));
            }
            // The last tab takes the payload itself: one deep copy fewer per message.
            let mut payload = Some(payload);
            for (i, tab) in targets.iter().enumerate() {
                let this = if i + 1 == targets.len() { payload.take() } else { payload.clone() };
                let Some(this) = this else { continue };
                if claimed {
                    self.tabs.record(tab, this, (bytes, ordinal), &mut recorded);
                } else {
                    self.tabs.record_early(tab, this, (bytes, ordinal), &mut recorded);
                }
                let Some(t) = self.tabs.tab_mut(tab) else {
                    recorded.clear();
                    continue;
                };
                let Some(conn) = t.conn else {
                    recorded.clear();
                    continue;
                };
                let receiving = self.conns.get(&conn).is_some_and(Conn::deliverable);
                for message in recorded.drain(..) {
                    let seq = message.seq.unwrap_or(0);
                    if receiving && t.delivered + 1 == seq {
                        t.delivered = seq;
                        if let Some(c) = self.conns.get_mut(&conn) {
                            c.out.push_back(V1Topic::Events(message));
                        }
                    }
                }
                if receiving && !t.caught_up() && !lagging.contains(&conn) {
                    lagging.push(conn);
                }
            }
        }
        self.scratch.targets = targets;
        self.scratch.messages = messages;
        self.scratch.recorded = recorded;
        // A tab handed a declared resync for early messages it lacks catches up at once.
        for conn in lagging {
            self.became_deliverable(conn, now);
        }
    }

    /// Sessions no request claims any more: those no tab shows yet are offered to the
    /// tab-less connections' implicit tabs (what they streamed so far first).
    fn offer(&mut self, freed: &[String], now: Instant) {
        let open: Vec<ConnId> = self.conns.keys().copied().collect();
        let tabless = self.tabs.tabless(&open);
        let mut offered = false;
        for session in freed {
            if self.tabs.is_bound(session) {
                continue;
            }
            self.tabs.offer_early(&tabless, session);
            for tab in &tabless {
                if self.tabs.get(tab).is_some_and(|t| t.needs_view(session)) {
                    self.record_resync(tab, session);
                }
            }
            offered = true;
        }
        if offered {
            for conn in open {
                self.became_deliverable(conn, now);
            }
        }
    }

    fn flush_all(&mut self, now: Instant) {
        let mut due = std::mem::take(&mut self.scratch.due);
        self.slots.pending_in_order(&mut due, |_, _| true);
        for (_, id) in due.drain(..) {
            self.flush_session(&id, now);
        }
        self.scratch.due = due;
        self.changed = Some(HashSet::new());
    }

    /// `session`'s entry in `bb/state` changed: its pending events go out before the state.
    pub(crate) fn touch(&mut self, session: &str) {
        mark_changed(&mut self.changed, session);
        self.state_dirty = true;
    }

    /// Publishes the pending events of every session whose state changed since they were
    /// queued, in the order the sessions' batches began. The others keep their cadence: the
    /// state shows nothing about them that their pending events precede.
    fn flush_changed(&mut self, now: Instant) {
        let Some(mut changed) = self.changed.take() else {
            self.flush_all(now);
            return;
        };
        if !changed.is_empty() {
            let mut due = std::mem::take(&mut self.scratch.due);
            self.slots.pending_in_order(&mut due, |id, _| changed.contains(id));
            for (_, id) in due.drain(..) {
                self.flush_session(&id, now);
            }
            self.scratch.due = due;
            changed.clear();
        }
        self.changed = Some(changed);
    }

    fn emit_state_if_changed(&mut self, now: Instant) {
        self.state_dirty = false;
        let mut flushed = false;
        for at in 0..self.conns.len() {
            let Some((&conn, c)) = self.conns.iter_mut().nth(at) else { break };
            // The last state sent, brought up to date in place: nothing built when unchanged,
            // and the topic shares it. One the runtime still holds is copied first.
            let (state, changed) = match c.last_state.take() {
                Some(mut last) => match Arc::get_mut(&mut last) {
                    Some(state) => {
                        let changed = self.refresh_state(conn, state);
                        (last, changed)
                    }
                    None => {
                        let mut state = StatePayload::clone(&last);
                        let changed = self.refresh_state(conn, &mut state);
                        (if changed { Arc::new(state) } else { last }, changed)
                    }
                },
                None => (Arc::new(self.state(conn)), true),
            };
            if changed && !flushed {
                self.flush_changed(now);
                flushed = true;
            }
            let Some(c) = self.conns.get_mut(&conn) else { continue };
            if changed {
                c.emit(V1Topic::State(Arc::clone(&state)));
            }
            c.last_state = Some(state);
        }
    }

    /// The connection may be able to receive again: each of its tabs gets what it missed
    /// (replayed from its ring, or a declared resync), then the current state.
    fn became_deliverable(&mut self, conn: ConnId, now: Instant) {
        self.refresh_priorities();
        if !self.conns.get(&conn).is_some_and(Conn::deliverable) {
            return;
        }
        let lagging: Vec<String> = self
            .tabs
            .of_conn(conn)
            .into_iter()
            .filter(|t| self.tabs.get(t).is_some_and(|t| !t.caught_up()))
            .collect();
        if !lagging.is_empty() {
            let mut messages = Vec::new();
            for tab in lagging {
                let slots = &self.slots;
                let fitter = &mut self.fitter;
                let floors = &self.floors;
                messages.extend(self.tabs.catch_up(&tab, |session, receive| {
                    let view = slots.view(session)?;
                    let (payload, bytes) = fitter.resync(session, view, receive);
                    Some((payload, bytes, floors.current(session)))
                }));
            }
            // Held state and connection updates are newer than what the tabs missed: the
            // missed events go before them (after any events already queued).
            let c = self.conn_mut(conn);
            let at =
                c.out.iter().rposition(|t| matches!(t, V1Topic::Events(_))).map_or(0, |p| p + 1);
            for (i, message) in messages.into_iter().enumerate() {
                c.out.insert(at + i, V1Topic::Events(message));
            }
        }
        self.state_dirty = true;
        let _ = now;
    }
}

/// Notes that `session`'s `bb/state` entry changed (`None`: every entry already did).
fn mark_changed(changed: &mut Option<HashSet<String>>, session: &str) {
    if let Some(changed) = changed
        && !changed.contains(session)
    {
        changed.insert(session.to_owned());
    }
}

/// Whether an engine event ends the reply a `messageId` names (run end, error, idle).
fn ends_reply(kind: &str) -> bool {
    matches!(kind, "completion" | "run_finished" | "error" | "session.idle" | "session.error")
}
