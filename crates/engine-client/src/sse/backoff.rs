//! Reconnect policy of the SSE client: exponential back-off with jitter, bounded attempts,
//! and the read timeout that turns a silent connection into a dropped one.

use std::fmt;
use std::time::Duration;

/// When and how often the SSE client reconnects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReconnectPolicy {
    /// Delay before the first reconnect (the stream's `retry` field replaces it).
    pub initial_delay: Duration,
    /// Largest delay between attempts.
    pub max_delay: Duration,
    /// Consecutive failed attempts tolerated before a hard error.
    pub max_attempts: u32,
    /// A connection that yields no bytes for this long counts as dropped. It also bounds
    /// opening a connection.
    pub read_timeout: Duration,
}

impl Default for ReconnectPolicy {
    /// 250 ms doubling to 5 s, 10 attempts, 15 s read timeout (Kilo heartbeats every 10 s).
    fn default() -> Self {
        Self {
            initial_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(5),
            max_attempts: 10,
            read_timeout: Duration::from_secs(15),
        }
    }
}

impl ReconnectPolicy {
    /// The delay before attempt `attempt` (1-based), before jitter. `server_retry` is the
    /// last valid `retry` field of the stream, which replaces the initial delay.
    pub fn delay(&self, attempt: u32, server_retry: Option<Duration>) -> Duration {
        let base = server_retry.unwrap_or(self.initial_delay);
        let cap = self.max_delay.max(base);
        let factor = 1u32.checked_shl(attempt.saturating_sub(1)).unwrap_or(u32::MAX);
        base.saturating_mul(factor).min(cap)
    }
}

/// Spreads reconnect delays so that clients do not reconnect in lockstep.
pub trait Jitter: Send + Sync + fmt::Debug {
    /// The delay actually waited for a computed `delay`.
    fn apply(&self, delay: Duration) -> Duration;
}

/// Uniformly random in `[delay / 2, delay]` ("equal jitter").
#[derive(Debug, Clone, Copy, Default)]
pub struct RandomJitter;

impl Jitter for RandomJitter {
    fn apply(&self, delay: Duration) -> Duration {
        let half = delay / 2;
        let spread = u64::try_from(half.as_micros()).unwrap_or(u64::MAX);
        if spread == 0 {
            return delay;
        }
        half + Duration::from_micros(rand::random_range(0..=spread))
    }
}

/// No jitter: the computed delay exactly (tests).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoJitter;

impl Jitter for NoJitter {
    fn apply(&self, delay: Duration) -> Duration {
        delay
    }
}
