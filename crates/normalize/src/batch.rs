//! The pure per-session batcher: queues classified events, coalesces consecutive deltas of
//! the same message + turn, and decides when a batch is published (time passed in).

use std::borrow::Cow;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::class::Classified;
use crate::event::RawEvent;
use crate::kilo;
use crate::reduce::bb_message_id;

/// Minimum gap between two cadence flushes of the session the user is looking at.
pub const ACTIVE_CADENCE: Duration = Duration::from_millis(33);
/// Minimum gap for other visible sessions.
pub const VISIBLE_CADENCE: Duration = Duration::from_millis(100);
/// Minimum gap for background sessions.
pub const BACKGROUND_CADENCE: Duration = Duration::from_millis(500);
/// The step of the grid a background batch that waits out its cadence is due on, counted
/// from an origin its batchers share ([`Batcher::on_grid`]): the sessions no webview looks at
/// publish on one wake-up of the bridge instead of each on its own phase (100 streaming
/// sessions: ≤ 10 of those wake-ups a second instead of ~200). Such a batch waits at most
/// this much longer than its cadence; a first event after a quiet spell and the immediate
/// classes still leave at once.
pub const BACKGROUND_GRID: Duration = Duration::from_millis(100);

/// How prominently a session is shown; decides its flush cadence.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Priority {
    /// The session the user is looking at: at most one cadence flush per 33 ms.
    #[default]
    Active,
    /// Visible but not focused: 100 ms.
    Visible,
    /// Not visible: 500 ms.
    Background,
}

impl Priority {
    /// The minimum gap between cadence flushes.
    pub fn cadence(self) -> Duration {
        match self {
            Self::Active => ACTIVE_CADENCE,
            Self::Visible => VISIBLE_CADENCE,
            Self::Background => BACKGROUND_CADENCE,
        }
    }
}

/// What a batch holds, in event order.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// The events (coalesced deltas count as one item).
    pub items: Vec<Classified>,
    /// Whether an immediate-flush event (permission request, error, run end) caused it.
    pub immediate: bool,
}

impl Batch {
    /// Engine events in the batch, counting coalesced deltas one each.
    pub fn event_count(&self) -> u64 {
        self.items.iter().map(Classified::event_count).sum()
    }
}

/// The per-session batcher. Feed it with [`Batcher::handle_event`], publish what
/// [`Batcher::poll_flush`] returns, and wake up at [`Batcher::poll_timeout`].
///
/// Law: two flushes are at least the cadence apart, except flushes caused by an
/// immediate-flush event; no event is lost or reordered.
#[derive(Debug, Clone, Default)]
pub struct Batcher {
    priority: Priority,
    pending: Vec<Classified>,
    last_flush: Option<Instant>,
    first_pending: Option<Instant>,
    immediate: bool,
    coalesced: u64,
    /// The origin of the [`BACKGROUND_GRID`], when the batcher follows it.
    grid: Option<Instant>,
}

impl Batcher {
    /// A batcher with the given priority.
    pub fn new(priority: Priority) -> Self {
        Self { priority, ..Self::default() }
    }

    /// The batcher with its background cadence flushes on the [`BACKGROUND_GRID`] counted
    /// from `origin` (the batchers of one host share it).
    pub fn on_grid(self, origin: Instant) -> Self {
        Self { grid: Some(origin), ..self }
    }

    /// The current priority.
    pub fn priority(&self) -> Priority {
        self.priority
    }

    /// Changes the priority (the next deadline follows the new cadence).
    pub fn set_priority(&mut self, priority: Priority) {
        self.priority = priority;
    }

    /// Events waiting (coalesced deltas count as one).
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Deltas merged into an earlier one so far.
    pub fn coalesced(&self) -> u64 {
        self.coalesced
    }

    /// Queues one event, merging it into the previous one when both are deltas of the same
    /// message + turn (+ part).
    pub fn handle_event(&mut self, now: Instant, item: Classified) {
        if item.class.flushes_immediately() {
            self.immediate = true;
        }
        if self.first_pending.is_none() {
            self.first_pending = Some(now);
        }
        if let Some(last) = self.pending.last_mut()
            && try_merge(last, &item)
        {
            self.coalesced += 1;
            return;
        }
        self.pending.push(item);
    }

    /// When the pending events become due, if any are pending: at once after a quiet spell
    /// or for an immediate class, else when the cadence since the last flush has passed (for
    /// a background batcher on the grid, at the grid's next point from then).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let first = self.first_pending?;
        let Some(last) = self.last_flush.filter(|_| !self.immediate) else {
            return Some(first);
        };
        let due = last + self.priority.cadence();
        if due <= first {
            return Some(first);
        }
        Some(match self.grid {
            Some(origin) if self.priority == Priority::Background => grid_point(origin, due),
            _ => due,
        })
    }

    /// The batch to publish now, if one is due.
    pub fn poll_flush(&mut self, now: Instant) -> Option<Batch> {
        let due = self.poll_timeout()?;
        if now < due {
            return None;
        }
        self.flush_now(now)
    }

    /// Publishes whatever is pending now, due or not (for a caller that must emit something
    /// after these events, e.g. a state change that must not overtake them). Counts as a
    /// flush for the cadence.
    pub fn flush_now(&mut self, now: Instant) -> Option<Batch> {
        self.first_pending?;
        let batch = Batch { items: std::mem::take(&mut self.pending), immediate: self.immediate };
        self.immediate = false;
        self.first_pending = None;
        self.last_flush = Some(now);
        Some(batch)
    }
}

/// The first point of the [`BACKGROUND_GRID`] from `origin` at or after `at` (`at` itself
/// when it precedes `origin`, or when the point would not fit an `Instant`).
fn grid_point(origin: Instant, at: Instant) -> Instant {
    let step = BACKGROUND_GRID.as_nanos();
    let steps = at.saturating_duration_since(origin).as_nanos().div_ceil(step);
    u64::try_from(steps * step)
        .ok()
        .and_then(|nanos| origin.checked_add(Duration::from_nanos(nanos)))
        .unwrap_or(at)
}

/// What names a delta's stream: its type, then message + part + field (Kilo) or message id
/// and turn (BreadBoard). Two deltas merge only when their keys are equal.
#[derive(PartialEq)]
struct DeltaKey<'a> {
    kind: &'a str,
    ids: [Cow<'a, str>; 3],
    turn: Option<i64>,
}

/// A delta event's coalescing key, appended field and that field's text.
fn delta_key(ev: &RawEvent) -> Option<(DeltaKey<'_>, &'static str, Cow<'_, str>)> {
    let p = &ev.payload;
    let (id, field) = match ev.kind.as_str() {
        "assistant.message.delta"
        | "assistant.reasoning.delta"
        | "assistant.thought_summary.delta" => (bb_message_id(p).unwrap_or(""), "delta"),
        "assistant_delta" => (bb_message_id(p).unwrap_or(""), "text"),
        "message.part.delta" => {
            let (ids, text) = match kilo::kept::<kilo::Delta<'_>>(&ev.payload) {
                kilo::Kept::Memo(d) => {
                    let ids =
                        [&d.message_id, &d.part_id, &d.field].map(|s| s.get().map(Cow::Borrowed));
                    let [Some(m), Some(p), Some(f)] = ids else { return None };
                    ([m, p, f], Cow::Borrowed(d.delta.get().unwrap_or_default()))
                }
                kilo::Kept::Read(d) => {
                    ([d.message_id.0?, d.part_id.0?, d.field.0?], d.delta.0.unwrap_or_default())
                }
            };
            return Some((DeltaKey { kind: &ev.kind, ids, turn: None }, "delta", text));
        }
        _ => return None,
    };
    let text = p.get(field)?.as_str()?;
    let ids = [Cow::Borrowed(id), Cow::Borrowed(""), Cow::Borrowed("")];
    Some((DeltaKey { kind: &ev.kind, ids, turn: ev.turn }, field, Cow::Borrowed(text)))
}

/// The appended field and the concatenated text of `last` and `next` when both are deltas
/// of one stream of one session.
fn merged_text(last: &RawEvent, next: &RawEvent) -> Option<(&'static str, String)> {
    let (k1, field, t1) = delta_key(last)?;
    let (k2, _, t2) = delta_key(next)?;
    if k1 != k2 || last.session_id != next.session_id {
        return None;
    }
    let mut text = t1.into_owned();
    text.push_str(&t2);
    Some((field, text))
}

/// Merges `next` into `last` when both are deltas with the same key; the merged event keeps
/// `next`'s envelope (id, ts; the higher seq) and the concatenated text: written into
/// `next`'s text where both Kilo deltas' memos know where their string is
/// ([`kilo::spliced`]), else into `next`'s tree.
fn try_merge(last: &mut Classified, next: &Classified) -> bool {
    if last.class != next.class || last.event.engine != next.event.engine {
        return false;
    }
    let Some((field, text)) = merged_text(&last.event, &next.event) else {
        return false;
    };
    let payload = match kilo::spliced(&last.event.payload, &next.event.payload, text) {
        Ok(payload) => payload,
        Err(text) => {
            let mut payload = next.event.payload.clone();
            if let Some(obj) = payload.as_object_mut() {
                obj.insert(field.to_owned(), Value::String(text));
            }
            payload
        }
    };
    let e = &next.event;
    let merged = RawEvent {
        id: e.id.clone(),
        engine: e.engine,
        kind: e.kind.clone(),
        session_id: e.session_id.clone(),
        // The debug lane tracks the highest seq; keep it across the merge.
        seq: e.seq.max(last.event.seq),
        turn: e.turn,
        ts: e.ts,
        payload,
    };
    let prev = std::mem::replace(&mut last.event, merged);
    last.absorbed_ids.push(prev.id);
    last.absorbed_ids.extend(next.absorbed_ids.iter().cloned());
    true
}
