//! Restart policy: doubling back-off between restarts and a crash-loop breaker over a sliding
//! window. Pure: `now` is passed in.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How restarts are paced and when to give up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    /// Delay before the first restart after a crash.
    pub initial_delay: Duration,
    /// Upper bound of the doubling delay.
    pub max_delay: Duration,
    /// Crashes within `window` that open the breaker.
    pub max_crashes: usize,
    /// The sliding window crashes are counted in.
    pub window: Duration,
}

impl Default for RestartPolicy {
    /// 500 ms doubling to 10 s; 3 crashes within 10 minutes open the breaker (the rollback
    /// trigger named by the Kilo backend plan).
    fn default() -> Self {
        Self {
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(10),
            max_crashes: 3,
            window: Duration::from_secs(600),
        }
    }
}

/// What to do after a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartDecision {
    /// Restart after this delay.
    Restart {
        /// How long to wait first.
        after: Duration,
        /// Crashes counted in the window, this one included.
        crashes: usize,
    },
    /// The breaker is open: stop restarting and report.
    GiveUp {
        /// Crashes counted in the window.
        crashes: usize,
        /// The window they happened in.
        window: Duration,
    },
}

/// Crash timestamps within the policy window.
#[derive(Debug, Clone)]
pub struct CrashHistory {
    policy: RestartPolicy,
    crashes: VecDeque<Instant>,
}

impl CrashHistory {
    /// An empty history under `policy`.
    pub fn new(policy: RestartPolicy) -> Self {
        Self { policy, crashes: VecDeque::new() }
    }

    /// The policy in force.
    pub fn policy(&self) -> RestartPolicy {
        self.policy
    }

    /// Records a crash at `now` and decides what happens next.
    pub fn record_crash(&mut self, now: Instant) -> RestartDecision {
        while let Some(&first) = self.crashes.front() {
            if now.saturating_duration_since(first) >= self.policy.window {
                self.crashes.pop_front();
            } else {
                break;
            }
        }
        self.crashes.push_back(now);
        let crashes = self.crashes.len();
        if crashes >= self.policy.max_crashes {
            return RestartDecision::GiveUp { crashes, window: self.policy.window };
        }
        let exp = u32::try_from(crashes.saturating_sub(1)).unwrap_or(u32::MAX).min(16);
        let after =
            self.policy.initial_delay.saturating_mul(1u32 << exp).min(self.policy.max_delay);
        RestartDecision::Restart { after, crashes }
    }
}

impl RestartDecision {
    /// What the decision means, for logs and the reason `bb/connection` gives.
    pub fn describe(&self) -> String {
        match self {
            RestartDecision::Restart { after, crashes } => {
                format!("restarting in {after:?} (crash {crashes})")
            }
            RestartDecision::GiveUp { crashes, window } => {
                format!("crash loop: {crashes} crashes within {window:?}; not restarting")
            }
        }
    }
}
