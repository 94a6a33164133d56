//! The pure per-session batcher: queues classified events, coalesces consecutive deltas of
//! the same message + turn, and decides when a batch is published (time passed in).

use std::borrow::Cow;
use std::time::{Duration, Instant};

use bb_payload::Payload;
use serde_json::Value;

use crate::breadboard::{self, BbText};
use crate::class::Classified;
use crate::event::RawEvent;
use crate::kilo;
use crate::splice::splice;

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

/// The largest merge buffer a batcher keeps for its next merge: the text of a shown
/// session's batch of deltas fits; a longer one (a background batch) is given back, so an
/// idle session holds at most this much.
const SPARE_TEXT: usize = 1024;

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
    /// The text of the last pending item while deltas merge into it.
    merging: Option<Merging>,
    /// The key of the deltas merging into the last pending item, while `merging` is set:
    /// the next delta is compared with it, not with a second read of the last item's
    /// payload. Its buffer is kept across merges.
    merge_key: HeldKey,
    /// The text buffer of the last merge closed, for the next one to start in (kept while
    /// it holds at most [`SPARE_TEXT`] bytes: most merges then neither allocate nor grow).
    spare: String,
    /// Whether the last flush's first event came within the cadence of the flush before it
    /// (the session streams faster than its cadence).
    streaming: bool,
    /// When the pending events are due ([`Batcher::poll_timeout`]), kept as the times it
    /// follows change: the host reads it two or three times per event, and a background
    /// batcher's due time is a grid point, a 128-bit division to find again.
    due: Option<Instant>,
}

/// The concatenated text of the deltas merged into the last pending item so far: appended
/// to as each one comes, and written into the item's payload once, when another item
/// follows it or the batch is taken ([`Merging::close`]). The item meanwhile holds the
/// envelope and payload of the last delta merged.
#[derive(Debug, Clone)]
struct Merging {
    /// The appended field.
    field: &'static str,
    text: String,
    /// Whether every merged delta's memo knows where its string is in its text (the last
    /// one's text is then spliced, no tree is built).
    splice: bool,
}

impl Batcher {
    /// A batcher with the given priority.
    pub fn new(priority: Priority) -> Self {
        Self { priority, ..Self::default() }
    }

    /// The batcher with its background cadence flushes on the [`BACKGROUND_GRID`] counted
    /// from `origin` (the batchers of one host share it).
    pub fn on_grid(self, origin: Instant) -> Self {
        let mut batcher = Self { grid: Some(origin), ..self };
        batcher.due = batcher.find_due();
        batcher
    }

    /// The current priority.
    pub fn priority(&self) -> Priority {
        self.priority
    }

    /// Changes the priority (the next deadline follows the new cadence).
    pub fn set_priority(&mut self, priority: Priority) {
        self.priority = priority;
        self.due = self.find_due();
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
        // Only a batch's first event and its first immediate one move its due time.
        if item.class.flushes_immediately() && !self.immediate {
            self.immediate = true;
            self.first_pending.get_or_insert(now);
            self.due = self.find_due();
        } else if self.first_pending.is_none() {
            self.first_pending = Some(now);
            self.due = self.find_due();
        }
        if let Some(last) = self.pending.last_mut()
            && merge_text(last, &item, (&mut self.merging, &mut self.merge_key, &mut self.spare))
        {
            absorb(last, item);
            self.coalesced += 1;
            return;
        }
        self.close_merge();
        self.pending.push(item);
    }

    /// When the pending events become due, if any are pending: at once after a quiet spell
    /// or for an immediate class, else when the cadence since the last flush has passed (for
    /// a background batcher on the grid, at the grid's next point from then).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.due
    }

    /// The due time [`Batcher::poll_timeout`] keeps, found from the times it follows.
    pub(crate) fn find_due(&self) -> Option<Instant> {
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

    /// The next point of a shown session's cadence after its last flush while it streams
    /// faster than its cadence: when events still on their way from the engine would be
    /// published if they came now. A bridge that pauses its reads to gather events
    /// (`bb_service`'s pacing) ends the pause before it, so a streaming session it shows
    /// keeps its cadence. `None` for a background session (its batches wait for the grid
    /// anyway) and for one whose last batch began after a quiet spell.
    pub fn next_beat(&self) -> Option<Instant> {
        if self.priority == Priority::Background || !self.streaming {
            return None;
        }
        Some(self.last_flush? + self.priority.cadence())
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
        let first = self.first_pending?;
        self.streaming = self.last_flush.is_some_and(|last| first < last + self.priority.cadence());
        self.close_merge();
        let batch = Batch { items: std::mem::take(&mut self.pending), immediate: self.immediate };
        self.immediate = false;
        self.first_pending = None;
        self.last_flush = Some(now);
        self.due = None;
        Some(batch)
    }

    /// Writes the merged text into the last pending item, if deltas merged into it.
    fn close_merge(&mut self) {
        if let Some(merging) = self.merging.take()
            && let Some(last) = self.pending.last_mut()
            && let Some(mut text) = merging.close(&mut last.event.payload)
            && text.capacity() <= SPARE_TEXT
        {
            text.clear();
            self.spare = text;
        }
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
    let field = match &*ev.kind {
        "assistant.message.delta"
        | "assistant.reasoning.delta"
        | "assistant.thought_summary.delta" => "delta",
        "assistant_delta" => "text",
        "message.part.delta" => {
            let d = kilo::delta(&ev.payload);
            let (ids, text) =
                ([d.message_id.0?, d.part_id.0?, d.field.0?], d.delta.0.unwrap_or_default());
            return Some((DeltaKey { kind: &ev.kind, ids, turn: None }, "delta", text));
        }
        _ => return None,
    };
    let (id, text) = BbText::of(&ev.payload).into_key(field);
    let ids = [id, Cow::Borrowed(""), Cow::Borrowed("")];
    Some((DeltaKey { kind: &ev.kind, ids, turn: ev.turn }, field, text?))
}

/// Whether `payload`'s delta memo (Kilo's, or BreadBoard's of its `field`) knows where its
/// string is in its text.
fn spans(payload: &Payload, field: &str) -> bool {
    payload.text().is_some()
        && (payload.memo::<kilo::DeltaMemo>().is_some_and(|m| m.span().is_some())
            || payload.memo::<breadboard::TextMemo>().is_some_and(|m| m.span(field).is_some()))
}

/// When `last` and `next` are deltas of one stream of one session: appends `next`'s text to
/// what `merging` holds of `last`'s (starting it with `last`'s, in `spare`'s buffer, and
/// `held` with their key), and says so. While a merge is open, `held` is `last`'s key.
fn merge_text(
    last: &Classified,
    next: &Classified,
    (merging, held, spare): (&mut Option<Merging>, &mut HeldKey, &mut String),
) -> bool {
    if last.class != next.class || last.event.engine != next.event.engine {
        return false;
    }
    let Some((k2, _, t2)) = delta_key(&next.event) else { return false };
    if last.event.session_id != next.event.session_id {
        return false;
    }
    match merging {
        Some(m) => {
            if !held.is(&k2) {
                return false;
            }
            m.text.push_str(&t2);
            m.splice &= spans(&next.event.payload, m.field);
        }
        None => {
            let Some((k1, field, t1)) = delta_key(&last.event) else { return false };
            if k1 != k2 {
                return false;
            }
            held.hold(&k2);
            let mut text = std::mem::take(spare);
            text.reserve(t1.len() + t2.len());
            text.push_str(&t1);
            text.push_str(&t2);
            let splice = spans(&last.event.payload, field) && spans(&next.event.payload, field);
            *merging = Some(Merging { field, text, splice });
        }
    }
    true
}

/// A [`DeltaKey`] kept: its strings one after another in one buffer, which later keys
/// reuse.
#[derive(Debug, Clone, Default)]
struct HeldKey {
    text: String,
    /// Where the type and each id end in `text`.
    ends: [usize; 4],
    turn: Option<i64>,
}

impl HeldKey {
    fn hold(&mut self, key: &DeltaKey<'_>) {
        self.text.clear();
        self.text.push_str(key.kind);
        self.ends[0] = self.text.len();
        for (end, id) in self.ends[1..].iter_mut().zip(&key.ids) {
            self.text.push_str(id);
            *end = self.text.len();
        }
        self.turn = key.turn;
    }

    /// Whether `key` equals the key held: the turn and the lengths first, then the bytes of
    /// the parts that have any.
    fn is(&self, key: &DeltaKey<'_>) -> bool {
        let parts = [key.kind, &key.ids[0], &key.ids[1], &key.ids[2]];
        let starts = [0, self.ends[0], self.ends[1], self.ends[2]];
        let spans = starts.into_iter().zip(self.ends);
        self.turn == key.turn
            && parts.iter().zip(spans.clone()).all(|(part, (from, end))| end - from == part.len())
            && parts.iter().zip(spans).all(|(part, (from, end))| {
                part.is_empty() || self.text.as_bytes().get(from..end) == Some(part.as_bytes())
            })
    }
}

/// Merges `next`, whose text [`merge_text`] took, into `last`: the merged event keeps
/// `next`'s envelope and payload (id, ts; the higher seq), moved; the merged text is
/// written into the payload when the merge is closed.
fn absorb(last: &mut Classified, next: Classified) {
    let Classified { event, absorbed, absorbed_last_id, .. } = next;
    // The debug lane tracks the highest seq; keep it across the merge.
    let seq = event.seq.max(last.event.seq);
    let prev = std::mem::replace(&mut last.event, event);
    last.event.seq = seq;
    // In event order the absorbed ones are `last`'s, then `last` itself, then `next`'s:
    // the latest id among them is `next`'s, else `last`'s own, else `last`'s absorbed one.
    last.absorbed += 1 + absorbed;
    if let Some(id) = absorbed_last_id.or(prev.id) {
        last.absorbed_last_id = Some(id);
    }
}

impl Merging {
    /// Writes the concatenated text into `payload`, the last merged delta's: into its text
    /// where every merged delta's memo knew where its string was ([`splice`]), or
    /// where the text is written as its tree would be (a BreadBoard payload,
    /// [`Payload::set_str_in_text`]), else into its tree. Gives the text's buffer back
    /// unless the tree took it.
    fn close(self, payload: &mut Payload) -> Option<String> {
        let Merging { field, text, splice: spans } = self;
        let written = spans
            && match payload.memo::<breadboard::TextMemo>() {
                Some(_) => splice::<breadboard::TextMemo>(payload, field, &text),
                None => splice::<kilo::DeltaMemo>(payload, field, &text),
            };
        if written || payload.set_str_in_text(field, &text) {
            return Some(text);
        }
        if let Some(obj) = payload.as_object_mut() {
            obj.insert(field.to_owned(), Value::String(text));
            return None;
        }
        Some(text)
    }
}
