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
//! * **Batching.** Each session's events go through its own `bb_normalize` batcher: adjacent
//!   text deltas of one message (+ turn, + part) coalesce into one event, and a session
//!   publishes at most once per cadence of its priority — the selected session (when the
//!   webview can receive) every 33 ms at most, the others every 500 ms — except that the
//!   first event after a quiet spell, a permission request, an error and a run end go out
//!   at once. A session with `max_batch` items pending is flushed at once too.
//! * **Coalesced deltas.** A coalesced delta is the LAST engine event merged into it — its
//!   `id` (so a resume token taken from it is valid), `type`, `turn`, `ts` — with the payload
//!   of that event except the text field (`delta` for Kilo `message.part.delta` and
//!   BreadBoard `assistant.message.delta` / `…reasoning.delta` /
//!   `…thought_summary.delta`; `text` for BreadBoard `assistant_delta`), which holds the
//!   concatenated text of all merged events in engine order. Only adjacent deltas merge, so
//!   no other event is moved.
//! * **Hidden webview.** Until `bb.init` (and while the webview reports itself hidden) output
//!   is held back: event batches are kept in order up to `max_buffered_events` (the oldest
//!   batches are dropped beyond that, and the next `bb/connection` says `gapDetected`), state
//!   and connection updates are coalesced to the latest one. On show, the buffer is replayed
//!   in order, then the current state.
//! * **`running` and `pendingPermissionCount`.** `running` is the active session's run flag;
//!   the permission count is the sum over all sessions (a background session waiting for an
//!   answer needs the user too).
//! * **Permissions.** [`permissions`] is the engine-neutral permission and question state
//!   machine (shown once, answered at most once, trust for writes and execs, re-list after a
//!   reconnect, optional expiry); the runtime keeps one table per engine and feeds the count
//!   of its open set into `pendingPermissionCount`.

mod clock;
mod core;
mod lane;
pub mod permissions;

pub use bb_normalize::Engine;
pub use clock::{Clock, FakeClock};
pub use core::{Host, HostConfig, Input};

#[cfg(test)]
mod tests;
