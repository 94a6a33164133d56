//! One session's outgoing event lane: `bb_normalize`'s batcher (delta coalescing, flush
//! cadence by priority, immediate flushes) around the webview's [`EngineEvent`]s.

use std::cell::Cell;
use std::collections::VecDeque;
use std::time::Instant;

use bb_normalize::{
    Batch, Batcher, Classified, Engine, EventClass, Priority, RawEvent, SessionView,
};
use bb_protocol::v1::{EngineEvent, EventItem, Payload};

/// The envelope fields kept exactly as received, one per queued engine event: the batcher's
/// event type holds a whole-millisecond `ts`, the webview's a float.
#[derive(Debug, Clone)]
struct Envelope {
    ts: Option<f64>,
    turn: Option<u64>,
    message_id: Option<String>,
    /// The session the event belongs to when it is not the lane's.
    session_id: Option<String>,
}

/// A session's pending events and its flush schedule.
#[derive(Debug)]
pub(crate) struct Lane {
    engine: Engine,
    batcher: Batcher,
    envelopes: VecDeque<Envelope>,
}

impl Lane {
    /// A lane whose background cadence flushes fall on the grid counted from `grid`.
    pub(crate) fn new(engine: Engine, priority: Priority, grid: Instant) -> Self {
        let batcher = Batcher::new(priority).on_grid(grid);
        Self { engine, batcher, envelopes: VecDeque::new() }
    }

    pub(crate) fn set_priority(&mut self, priority: Priority) {
        self.batcher.set_priority(priority);
    }

    /// Items waiting (a coalesced delta counts as one).
    pub(crate) fn pending_len(&self) -> usize {
        self.batcher.pending_len()
    }

    /// Deltas merged into an earlier one so far.
    pub(crate) fn coalesced(&self) -> u64 {
        self.batcher.coalesced()
    }

    /// Queues one event of `class` (its adapter's); `foreign`: it belongs to that other
    /// session.
    pub(crate) fn push(
        &mut self,
        now: Instant,
        event: EngineEvent,
        class: EventClass,
        message_id: Option<String>,
        foreign: Option<&str>,
    ) {
        let EngineEvent { id, event_type, turn, ts, payload } = event;
        let session_id = foreign.map(str::to_owned);
        self.envelopes.push_back(Envelope { ts, turn, message_id, session_id });
        let mut raw = RawEvent::new(self.engine, event_type, payload).with_id(id);
        // The coalescing key uses the turn; one beyond i64 (never sent) just keys as "none".
        raw.turn = turn.and_then(|t| i64::try_from(t).ok());
        self.batcher.handle_event(now, Classified::with_class(class, raw));
    }

    /// Gives back the room a burst left in the queue of envelopes once it is empty (it keeps
    /// the capacity of its longest backlog otherwise: 80 bytes an event, 160 KiB after a
    /// 2,048-event burst, for the life of the session).
    pub(crate) fn release_spare(&mut self) {
        if self.envelopes.is_empty() {
            self.envelopes = VecDeque::new();
        }
    }

    /// Room held by the queue of envelopes beyond what is queued, in envelopes.
    #[cfg(test)]
    pub(crate) fn spare(&self) -> usize {
        self.envelopes.capacity() - self.envelopes.len()
    }

    /// When the pending events are due, if any are pending.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.batcher.poll_timeout()
    }

    /// The next point of the lane's cadence while it is shown ([`Batcher::next_beat`]).
    pub(crate) fn next_beat(&self) -> Option<Instant> {
        self.batcher.next_beat()
    }

    /// The events to publish now, if they are due.
    pub(crate) fn poll_flush(
        &mut self,
        now: Instant,
        view: &mut SessionView,
    ) -> Option<Vec<EventItem>> {
        let batch = self.batcher.poll_flush(now)?;
        Some(self.webview_events(batch, view))
    }

    /// Everything pending, due or not.
    pub(crate) fn flush_now(
        &mut self,
        now: Instant,
        view: &mut SessionView,
    ) -> Option<Vec<EventItem>> {
        let batch = self.batcher.flush_now(now)?;
        Some(self.webview_events(batch, view))
    }

    /// A batch as webview events: one per item; a coalesced delta carries the id, turn and
    /// ts of the last engine event merged into it, and that event's payload with the text
    /// field holding the concatenated text of all of them. Each item is reduced into the
    /// session's view model (what a declared resync sends) and carries its class.
    fn webview_events(&mut self, batch: Batch, view: &mut SessionView) -> Vec<EventItem> {
        batch
            .items
            .into_iter()
            .map(|item| {
                let merged = usize::try_from(item.event_count()).unwrap_or(usize::MAX);
                let mut envelope =
                    Envelope { ts: None, turn: None, message_id: None, session_id: None };
                for _ in 0..merged {
                    match self.envelopes.pop_front() {
                        Some(e) => envelope = e,
                        None => break,
                    }
                }
                match envelope.session_id.as_deref() {
                    Some(owner) => {
                        view.apply_foreign(&item, envelope.message_id.as_deref(), owner);
                    }
                    None => view.apply_for(&item, envelope.message_id.as_deref()),
                }
                let class = item.class.as_str();
                let RawEvent { id, kind, payload, .. } = item.event;
                let event = EngineEvent {
                    id: id.unwrap_or_default(),
                    event_type: kind,
                    turn: envelope.turn,
                    ts: envelope.ts,
                    // An engine event's payload is an object; a non-object one (from a
                    // hand-built event) goes out empty.
                    payload: if payload.is_object() { payload } else { Payload::default() },
                };
                let mut item = EventItem::new(event, class);
                item.message_id = envelope.message_id;
                item.session_id = envelope.session_id;
                item
            })
            .collect()
    }
}

/// The lanes' earliest due time and earliest beat, kept from one look to the next, so that
/// a round of the service loop (which asks for both) does not visit every session's lane:
/// at 100 sessions that was a cold cache line or two per lane, per round. Queuing an event
/// only ever brings a lane's due time earlier ([`LaneTimes::queued`]) and leaves its beat
/// as it was; a flush moves only the flushed lane's ([`LaneTimes::flushed`]: a time that
/// lane may have set is forgotten), a timed flush of every due lane finds the due time in
/// the pass that picks them ([`LaneTimes::found_due`]); a priority change or a lane dropped
/// forgets both ([`LaneTimes::forget`]), and the next look visits the lanes again.
#[derive(Debug, Default)]
pub(crate) struct LaneTimes {
    /// `None`: to be found again; `Some(None)`: no lane has events pending.
    due: Cell<Option<Option<Instant>>>,
    /// The earliest beat of any lane, past or not; `None`: to be found again.
    beat: Cell<Option<Option<Instant>>>,
}

impl LaneTimes {
    /// The earliest due time, found with `find` when it is not known.
    pub(crate) fn due(&self, find: impl FnOnce() -> Option<Instant>) -> Option<Instant> {
        let due = self.due.get().unwrap_or_else(find);
        self.due.set(Some(due));
        due
    }

    /// The earliest beat, found with `find` when it is not known.
    pub(crate) fn beat(&self, find: impl FnOnce() -> Option<Instant>) -> Option<Instant> {
        let beat = self.beat.get().unwrap_or_else(find);
        self.beat.set(Some(beat));
        beat
    }

    /// A lane queued events and is now due at `due`.
    pub(crate) fn queued(&self, due: Option<Instant>) {
        if let Some(known) = self.due.get() {
            self.due.set(Some(earliest(known, due)));
        }
    }

    /// A lane flushed: its due time and beat were `was` (due, beat) and are now `now`.
    /// Where a kept time was earlier than the lane's old one, the lane did not set it, and
    /// it stays (or moves to the lane's new time, if that is earlier); a time the lane may
    /// have set is found again.
    pub(crate) fn flushed(&self, was: LaneTime, now: LaneTime) {
        self.due.set(moved(self.due.get(), was.0, now.0));
        self.beat.set(moved(self.beat.get(), was.1, now.1));
    }

    /// Every lane with events pending was visited, and the earliest due time is `due`; the
    /// beats of the lanes that flushed moved as [`LaneTimes::flushed`] has them.
    pub(crate) fn found_due(&self, due: Option<Instant>) {
        self.due.set(Some(due));
    }

    /// A lane changed priority or went: both times are found again.
    pub(crate) fn forget(&self) {
        self.due.set(None);
        self.beat.set(None);
    }
}

/// A lane's due time and beat.
pub(crate) type LaneTime = (Option<Instant>, Option<Instant>);

impl Lane {
    /// Its due time and beat.
    pub(crate) fn times(&self) -> LaneTime {
        (self.poll_timeout(), self.next_beat())
    }
}

/// The earlier of two times, either of which may be none.
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The earliest of a kept time (`None`: not known) after one lane's moved from `was` to
/// `now`: still known where the lane did not set it.
fn moved(
    kept: Option<Option<Instant>>,
    was: Option<Instant>,
    now: Option<Instant>,
) -> Option<Option<Instant>> {
    let kept = kept?;
    match (kept, was) {
        // The earliest may have been this lane's.
        (Some(k), Some(w)) if k >= w => None,
        (Some(k), _) => Some(earliest(Some(k), now)),
        // No lane had one, this one included.
        (None, None) => Some(now),
        (None, Some(_)) => None,
    }
}
