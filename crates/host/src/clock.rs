//! The clock port and its fake for tests.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Where time comes from. Implemented by `SystemClock` in `bb-service` (the one place that
/// reads the system clock) and by [`FakeClock`] in tests.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Monotonic now.
    fn now(&self) -> Instant;
    /// Wall time, milliseconds since the Unix epoch.
    fn wall_ms(&self) -> u64;
}

/// A clock advanced by hand.
#[derive(Debug)]
pub struct FakeClock {
    state: Mutex<(Instant, u64)>,
}

impl FakeClock {
    /// A clock at `start`, with wall time `wall_ms`.
    pub fn new(start: Instant, wall_ms: u64) -> Self {
        Self { state: Mutex::new((start, wall_ms)) }
    }

    /// Moves time forward.
    pub fn advance(&self, by: Duration) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.0 += by;
        s.1 = s.1.saturating_add(u64::try_from(by.as_millis()).unwrap_or(u64::MAX));
    }

    /// Moves time forward to `at` (no-op when `at` is in the past).
    pub fn advance_to(&self, at: Instant) {
        let now = self.now();
        if at > now {
            self.advance(at - now);
        }
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Instant {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).0
    }

    fn wall_ms(&self) -> u64 {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).1
    }
}
