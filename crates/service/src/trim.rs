//! Memory back to the system after a burst. A session streamed fast (a long history replayed
//! at attach, a burst of deltas) leaves the allocator holding pages of freed buffers: read
//! chunks, batches, serialized messages, freed on another thread than the one that made
//! them. The loop calls the binary's [`MemoryTrim`] (which knows its allocator) once the
//! engine has been quiet for [`QUIET`] after at least [`AFTER_INPUTS`] inputs: never while
//! a stream is busy, once after it settles.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the engine must be quiet after a burst before the memory is returned.
pub(crate) const QUIET: Duration = Duration::from_millis(200);

/// Engine inputs since the last trim that make a burst worth a trim.
pub(crate) const AFTER_INPUTS: usize = 512;

/// Returns the allocator's free memory to the system (the binary's hook: it owns the
/// allocator, and the threads that allocate).
#[derive(Clone)]
pub struct MemoryTrim(Arc<dyn Fn() + Send + Sync>);

impl MemoryTrim {
    /// The hook `trim`, called on the service loop's thread.
    pub fn new(trim: impl Fn() + Send + Sync + 'static) -> Self {
        Self(Arc::new(trim))
    }
}

impl fmt::Debug for MemoryTrim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MemoryTrim")
    }
}

/// When the loop trims: counts inputs, and sets a deadline [`QUIET`] after the latest one
/// once a burst was seen.
#[derive(Debug, Default)]
pub(crate) struct Trimmer {
    hook: Option<MemoryTrim>,
    inputs: usize,
    at: Option<Instant>,
}

impl Trimmer {
    pub(crate) fn new(hook: Option<MemoryTrim>) -> Self {
        Self { hook, inputs: 0, at: None }
    }

    /// `n` engine inputs were handled at `now`.
    pub(crate) fn inputs(&mut self, n: usize, now: Instant) {
        if self.hook.is_none() {
            return;
        }
        self.inputs = self.inputs.saturating_add(n);
        if self.inputs >= AFTER_INPUTS {
            self.at = Some(now + QUIET);
        }
    }

    /// When the loop must wake to trim.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.at
    }

    /// Whether the next [`Trimmer::poll`] at `now` trims.
    pub(crate) fn due(&self, now: Instant) -> bool {
        self.hook.is_some() && self.at.is_some_and(|at| at <= now)
    }

    /// Trims when the deadline passed; whether it did.
    pub(crate) fn poll(&mut self, now: Instant) -> bool {
        match &self.hook {
            Some(hook) if self.due(now) => {
                (hook.0)();
                self.inputs = 0;
                self.at = None;
                true
            }
            _ => false,
        }
    }
}
