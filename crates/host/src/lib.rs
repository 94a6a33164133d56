//! The host core that both bridges share: the sessions the engine knows, the active session,
//! run and permission state per session, the `bb/state` projection, per-session batching of
//! engine events into `bb/events`, and buffering while the webview is hidden, as one state
//! machine fed inputs with `now` passed in (`handle`, `handle_timeout`, `poll_output`,
//! `poll_timeout`).
//!
//! IO contract: this crate does no IO and reads no clock; time enters as `now` arguments and
//! through the [`Clock`] port, implemented by the service.
//!
//! # Choices
//!
//! * **Ordering.** Events of one session leave in the order they came in, ids untouched.
//!   Before a `bb/state` or `bb/connection` update is emitted, every pending event batch is
//!   flushed, so the webview never sees "idle" ahead of the last streamed text.
//! * **Batching.** The first event of an empty batch arms a flush deadline
//!   (`HostConfig::flush_interval`); a batch reaching `max_batch` events is flushed at once.
//! * **Hidden webview.** Until `bb.init` (and while the webview reports itself hidden) output
//!   is held back: event batches are kept in order up to `max_buffered_events` (the oldest
//!   batches are dropped beyond that, and the next `bb/connection` says `gapDetected`), state
//!   and connection updates are coalesced to the latest one. On show, the buffer is replayed
//!   in order, then the current state.
//! * **`running` and `pendingPermissionCount`.** `running` is the active session's run flag;
//!   the permission count is the sum over all sessions (a background session waiting for an
//!   answer needs the user too).

mod clock;
mod core;

pub use clock::{Clock, FakeClock};
pub use core::{Host, HostConfig, Input};

#[cfg(test)]
mod tests;
