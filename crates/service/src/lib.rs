//! The async host service: one event loop per webview connection that drives the host core
//! (`bb-host`) against an engine adapter, restarts a supervised engine, and writes to a
//! webview sink.
//!
//! IO contract: the only crate below the apps that owns tasks and channels; all IO goes
//! through the ports of `ARCHITECTURE.md` (the engine adapter, the webview sink, the process
//! spawner via `bb-supervisor`, and the [`SystemClock`], the one place that reads the clock).
//!
//! # The loop
//!
//! [`Service::run`] handles one closed `Event` enum in order: a webview request, an engine
//! update, the supervised child's exit, the completion of an engine call, or a timer tick
//! (batch flush or restart deadline). Engine calls run as futures owned by the loop and
//! report back as completions, so a slow call never blocks other requests, and only the loop
//! mutates state. When the webview's input closes, the loop stops the engine's streams,
//! terminates the supervised engine (TERM, KILL after the grace period) and returns.
//!
//! # Choices
//!
//! * `bb.createSession` selects the new session when none is active.
//! * `bb.selectSession` asks the engine whether the session exists before selecting it.
//! * While a supervised engine is starting or restarting, engine calls wait for it (up to 256
//!   held, in order; each call's timeout starts when it is dispatched) and `bb.init` answers at
//!   once, reporting `starting`. Once the breaker opens, held and new calls answer
//!   `engine_unavailable`.
//! * Engine exits count towards the crash-loop breaker; a start that fails counts too. Once
//!   the breaker opens, `bb/connection` reports `error` with the reason and the service keeps
//!   answering requests with `engine_unavailable` until the webview closes.
//! * The host core is built for the adapter's engine kind, which decides which events are
//!   deltas that coalesce (ACP events are matched as Kilo's, so none do).
//! * Kilo events carry `ts` only from the event itself (`properties.time`, a part's
//!   `time.end`/`start`, a session's or message's `time.completed`/`updated`/`created`) and
//!   `turn` only from a `properties.turn`; otherwise both stay absent.

pub mod breadboard;
mod clock;
pub mod engine;
mod ingest;
pub mod kilo;
mod service;
pub mod sink;

pub use clock::SystemClock;
pub use engine::{
    ConnectionUpdate, EngineAdapter, EngineError, EngineUpdate, UpdateReceiver, UpdateSender,
    update_channel,
};
pub use ingest::Ingest;
pub use service::{Service, ServiceConfig, ServiceError, Supervision};
pub use sink::{Inbound, MemoryWebview, WebviewSink, memory};

#[cfg(test)]
mod tests;
