//! Gathering while busy: many engine events share one wake-up of a thread.
//!
//! A bridge thread woken for every event costs a wake-up per event (tens of µs of CPU on a
//! busy machine, far more than the event's work; `BENCHMARKS.md`). While the events reaching
//! the service loop come faster than [`BUSY_RATE`] a second (over the last 100 ms, or from
//! the 30th event of the current 100 ms), a paced runtime thread pauses
//! before it parks, up to [`GATHER`], so that its next wake-up finds the readiness of many
//! streams and many events at once; at lower rates (a lone streaming session, a sparse
//! event) it never pauses and every event is read at once.
//!
//! The pause never runs into the service loop's next deadline (the next batch due, the
//! selected session's cadence flush, a prompt's expiry) nor into the next beat of a shown
//! session that streams faster than its cadence (`bb_host::Host::next_beat`: its next batch
//! is still on its way): it ends [`MARGIN`] before them, so a batch due at its cadence is
//! published on time with what arrived meanwhile. What a pause
//! delays is an event that would have left at once (the first event of a quiet session, a
//! permission request, a run end) while the bridge is this busy: by at most [`GATHER`].
//!
//! [`Pace`] is shared by the service loop (which counts the events it is handed and
//! publishes its next deadline) and the runtimes it paces ([`Pace::park_hook`], installed
//! with `tokio::runtime::Builder::on_thread_park`). `BB_GATHER_MS` sets the longest pause
//! ([`Pace::from_env`]; `0` turns pacing off).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bb_host::Clock as _;

use crate::SystemClock;

/// The longest pause before a busy thread parks: one beat of the selected session's
/// cadence, so that while the bridge is busy a quiet session's first event waits at most a
/// frame of what the webview shows. A longer pause saves little more (`BENCHMARKS.md`,
/// issue 29's ninth round) and holds that event longer.
pub const GATHER: Duration = bb_normalize::batch::ACTIVE_CADENCE;

/// Engine events a second, reaching the service loop, from which threads pause.
pub const BUSY_RATE: u64 = 300;

/// A pause ends this long before the service loop's next deadline.
pub const MARGIN: Duration = Duration::from_millis(1);

/// How long the event rate is counted over, in milliseconds.
const WINDOW_MS: u64 = 100;

/// How long the event rate is counted over.
const WINDOW: Duration = Duration::from_millis(WINDOW_MS);

/// Events within a counting window that make the bridge busy before that window is over:
/// [`BUSY_RATE`] over [`WINDOW`], so they came at least that fast. A burst is paced from its
/// 30th event instead of from the end of the window it began in (a hundred wake-ups at 1,000
/// events a second, more on the BreadBoard shape where an event takes two reads unpaced).
const BUSY_COUNT: u64 = BUSY_RATE * WINDOW_MS / 1_000;

/// Shorter pauses are not taken (a sleep costs about a wake-up).
const MIN_PAUSE: Duration = Duration::from_micros(500);

/// The environment variable naming the longest pause in milliseconds.
pub const GATHER_ENV: &str = "BB_GATHER_MS";

/// The shared pacing state: the events counted, the next deadline, the longest pause.
#[derive(Debug, Clone)]
pub struct Pace {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    gather: Duration,
    epoch: Instant,
    /// Engine events handed to the service loop so far.
    events: AtomicU64,
    /// The service loop's next deadline, in ns after `epoch`, plus one (0: none).
    due: AtomicU64,
}

impl Pace {
    /// Pacing with pauses of up to `gather` (zero: never pauses).
    pub fn new(gather: Duration) -> Self {
        let shared = Shared {
            gather,
            epoch: SystemClock.now(),
            events: AtomicU64::new(0),
            due: AtomicU64::new(0),
        };
        Self { shared: Arc::new(shared) }
    }

    /// Pacing with the pause `BB_GATHER_MS` names, else [`GATHER`]; a value that is not a
    /// whole number of milliseconds is ignored (with a warning).
    pub fn from_env() -> Self {
        let gather = match std::env::var(GATHER_ENV) {
            Ok(ms) => match ms.trim().parse::<u64>() {
                Ok(ms) => Duration::from_millis(ms),
                Err(_) => {
                    tracing::warn!(value = %ms, "{GATHER_ENV} is not a number of milliseconds; using {} ms", GATHER.as_millis());
                    GATHER
                }
            },
            Err(_) => GATHER,
        };
        Self::new(gather)
    }

    /// The longest pause.
    pub fn gather(&self) -> Duration {
        self.shared.gather
    }

    /// Counts `n` engine events handed to the service loop.
    pub fn counted(&self, n: usize) {
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        self.shared.events.fetch_add(n, Ordering::Relaxed);
    }

    /// Publishes the service loop's next deadline.
    pub fn set_due(&self, due: Option<Instant>) {
        let ns = due.map_or(0, |due| {
            let after = due.saturating_duration_since(self.shared.epoch).as_nanos();
            u64::try_from(after).unwrap_or(u64::MAX - 1) + 1
        });
        self.shared.due.store(ns, Ordering::Relaxed);
    }

    fn due(&self) -> Option<Instant> {
        match self.shared.due.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(self.shared.epoch + Duration::from_nanos(ns - 1)),
        }
    }

    /// The hook a runtime calls before it parks its thread (`on_thread_park`): while busy,
    /// it sleeps the pause the event rate decides (`Meter::pause`).
    pub fn park_hook(&self) -> impl Fn() + Send + Sync + 'static {
        let pace = self.clone();
        let meter = Mutex::new(Meter::default());
        move || {
            let now = SystemClock.now();
            let count = pace.shared.events.load(Ordering::Relaxed);
            let pause = match meter.lock() {
                Ok(mut meter) => meter.pause(now, count, pace.due(), pace.shared.gather),
                Err(_) => None,
            };
            if let Some(pause) = pause {
                std::thread::sleep(pause);
            }
        }
    }
}

/// One thread's view of the event rate.
#[derive(Debug, Default)]
struct Meter {
    /// Start of the current counting window and the count then.
    window: Option<(Instant, u64)>,
    /// Events a second over the last complete window.
    rate: u64,
}

impl Meter {
    /// How long to pause before parking at `now`, with `count` events handed over so far and
    /// the service loop's next deadline `due`: up to `gather` while the rate is at least
    /// [`BUSY_RATE`] (over the last window, or over the current one once it has
    /// [`BUSY_COUNT`] events), ending [`MARGIN`] before `due`; none for less than
    /// [`MIN_PAUSE`].
    fn pause(
        &mut self,
        now: Instant,
        count: u64,
        due: Option<Instant>,
        gather: Duration,
    ) -> Option<Duration> {
        if gather.is_zero() {
            return None;
        }
        match self.window {
            None => self.window = Some((now, count)),
            Some((start, at_start)) => {
                let elapsed = now.saturating_duration_since(start);
                if elapsed >= WINDOW {
                    let events = u128::from(count.saturating_sub(at_start));
                    let rate = events * 1_000_000_000 / elapsed.as_nanos().max(1);
                    self.rate = u64::try_from(rate).unwrap_or(u64::MAX);
                    self.window = Some((now, count));
                }
            }
        }
        let burst =
            self.window.is_some_and(|(_, at_start)| count.saturating_sub(at_start) >= BUSY_COUNT);
        if self.rate < BUSY_RATE && !burst {
            return None;
        }
        let room =
            due.map_or(gather, |due| due.saturating_duration_since(now).saturating_sub(MARGIN));
        let pause = gather.min(room);
        (pause >= MIN_PAUSE).then_some(pause)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// A meter that saw `rate` events a second over one window ending at the returned time.
    fn busy(rate: u64) -> (Meter, Instant, u64) {
        let t0 = SystemClock.now();
        let mut m = Meter::default();
        assert_eq!(m.pause(t0, 0, None, GATHER), None, "no rate known yet");
        let count = rate / 10;
        let t1 = t0 + WINDOW;
        m.pause(t1, count, None, GATHER);
        (m, t1, count)
    }

    #[test]
    fn a_quiet_bridge_never_pauses() {
        let (mut m, t, count) = busy(BUSY_RATE - 10);
        assert_eq!(m.pause(t + MS, count + 1, None, GATHER), None);
    }

    #[test]
    fn a_busy_bridge_pauses_up_to_the_gather_time() {
        let (mut m, t, count) = busy(1_000);
        assert_eq!(m.pause(t + MS, count + 1, None, GATHER), Some(GATHER));
    }

    #[test]
    fn a_pause_ends_before_the_next_deadline() {
        let (mut m, t, count) = busy(1_000);
        let now = t + MS;
        assert_eq!(m.pause(now, count, Some(now + 4 * MS), GATHER), Some(3 * MS));
        assert_eq!(m.pause(now, count, Some(now + MS), GATHER), None, "no room left");
        assert_eq!(m.pause(now, count, Some(now - MS), GATHER), None, "overdue");
        assert_eq!(m.pause(now, count, Some(now + 60 * MS), GATHER), Some(GATHER));
    }

    #[test]
    fn a_burst_is_paced_from_its_busy_count_before_its_window_ends() {
        let t0 = SystemClock.now();
        let mut m = Meter::default();
        assert_eq!(m.pause(t0, 7, None, GATHER), None, "no rate known yet");
        assert_eq!(m.pause(t0 + 10 * MS, 7 + BUSY_COUNT - 1, None, GATHER), None);
        assert_eq!(m.pause(t0 + 20 * MS, 7 + BUSY_COUNT, None, GATHER), Some(GATHER));
        assert_eq!(BUSY_COUNT, 30, "300 a second over 100 ms");
    }

    #[test]
    fn a_sparse_bridge_is_not_paced_within_a_window() {
        let t0 = SystemClock.now();
        let mut m = Meter::default();
        m.pause(t0, 0, None, GATHER);
        assert_eq!(m.pause(t0 + 99 * MS, BUSY_COUNT - 1, None, GATHER), None);
        assert_eq!(m.pause(t0 + WINDOW, BUSY_COUNT - 1, None, GATHER), None, "290 a second");
    }

    #[test]
    fn pacing_stops_one_window_after_the_events_do() {
        let (mut m, t, count) = busy(1_000);
        let later = t + WINDOW + MS;
        assert_eq!(m.pause(later, count, None, GATHER), None, "nothing came in the last window");
    }

    #[test]
    fn a_zero_gather_turns_pacing_off() {
        let (mut m, t, count) = busy(10_000);
        assert_eq!(m.pause(t + MS, count, None, Duration::ZERO), None);
    }

    #[test]
    fn the_deadline_round_trips_through_the_shared_state() {
        let pace = Pace::new(GATHER);
        assert_eq!(pace.due(), None);
        let at = SystemClock.now() + 5 * MS;
        pace.set_due(Some(at));
        let back = pace.due().expect("set");
        assert!(back <= at && at - back < Duration::from_micros(1));
        pace.set_due(None);
        assert_eq!(pace.due(), None);
    }
}
