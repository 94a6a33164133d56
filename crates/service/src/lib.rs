//! The async host service: one event loop that drives the host core (`bb-host`) against one
//! engine adapter for any number of webview connections, restarts a supervised engine, and
//! writes to each connection's webview sink.
//!
//! IO contract: the only crate below the apps that owns tasks and channels; all IO goes
//! through the ports of `ARCHITECTURE.md` (the engine adapter, the webview sink, the process
//! spawner via `bb-supervisor`, and the [`SystemClock`], the one place that reads the clock).
//!
//! # The loop
//!
//! [`Service::run`] takes a channel of [`WebviewSink`]s (the stdio sidecar sends its one
//! connection with [`sink::single`]; a WebSocket gateway sends one per window) and handles
//! one closed `Event` enum in order: a new connection, a report of a connection (request,
//! visibility, input closed, gone, envelopes written, queue has room), an engine update, the supervised
//! child's exit, the completion of an engine call, or a timer tick (batch flush or restart
//! deadline). Engine calls run as futures owned by the loop and report back as completions,
//! so a slow call never blocks other requests, and only the loop mutates state; per-connection
//! forwarder tasks only move messages. A response goes to the connection that asked; topics go
//! where the host core routes them. When the connection channel is closed and no connection is
//! left, the loop stops the engine's streams, terminates the supervised engine (TERM, KILL after
//! the grace period) and returns.
//!
//! # Delivery
//!
//! * **Never blocked by one webview.** Outbound queues are bounded
//!   ([`sink::OUTBOUND_CAPACITY`]) and written with `try_send`. A topic that does not fit goes
//!   back to the host core and stalls that connection only (its events wait in its tabs'
//!   rings; once a quarter of the queue is free it gets exactly what it missed, or a declared
//!   resync past the ring bound); a response that does not fit waits in that connection's
//!   backlog, in order. Other connections and the engine side go on.
//! * **Write acknowledgement.** A sink may carry `written` (a `watch` of how many envelopes
//!   the bridge wrote; [`sink::channels_with_ack`] / [`WriteAck`]). The runtime numbers what
//!   it hands over; [`EngineAdapter::delivered`] is called with the last event id per session
//!   of a `bb/events` message once the bridge reports that message written (replays of a
//!   message a tab was already handed are not reported again). Without acknowledgements
//!   (`memory()`), a message counts as written when the queue took it.
//! * **Bridge-answered requests.** `bb.command {command: "body.get", args: {ref, offset?}}`
//!   is answered from the host's body store, never the engine: one page of at most 256 KiB
//!   of the body's JSON text, `{text, offset, totalBytes, nextOffset?}` (concatenate the pages
//!   until `nextOffset` is absent, then parse). An evicted or unknown `ref` answers
//!   `body_not_found`, saying the store keeps the most recent 64 MiB and to reselect the
//!   session. `bb.visibility` is answered with the visibility now in effect.
//! * **Identity.** `bb.sendMessage`'s `messageId` and the session it streams to are handed to
//!   the host when the request is dispatched (before its events can arrive); `tabId` binds a
//!   tab when `bb.createSession` / `bb.selectSession` succeed; `bb.init`'s `lastSeen` applies
//!   after its response.
//!
//! Every engine update reaches the host core through one routing function; [`Ingest`] runs
//! that routing and the host core without the loop, time passed in, so a capture can be
//! replayed through the sidecar's own path and stages (`bb-harness ingest`, with the engine
//! crate's event mapping before it). An engine's inputs arrive on its input channel
//! ([`input_channel`]), bounded in inputs and in the engine events they carry
//! ([`engine::INPUT_EVENT_BUDGET`]): a reader faster than the loop waits whatever the
//! scheduling, and nothing is dropped.
//!
//! # Choices
//!
//! * `bb.createSession` selects the new session (in the connection asking) when that
//!   connection has none selected.
//! * `bb.selectSession` asks the engine whether the session exists before selecting it.
//! * While a supervised engine is starting or restarting, engine calls wait for it (up to 256
//!   held, in order; each call's timeout starts when it is dispatched) and `bb.init` answers at
//!   once, reporting `starting`. Once the breaker opens, held and new calls answer
//!   `engine_unavailable`.
//! * Every request with a readable id gets exactly one response, in request order per
//!   connection (module `order`): a response waits for the responses to earlier requests; a
//!   state change (`bb.createSession`, `bb.selectSession`, `bb.deleteSession`,
//!   `bb.sendMessage`, `bb.stop`) starts only after every earlier request finished and
//!   nothing later starts before it finishes; other requests run together. A line the bridge
//!   refused (`Inbound::Rejected`) takes its turn like any request. What a response causes
//!   (`bb.init` readiness and replay) is applied when the response goes out.
//! * When a connection's input closes (end of stdin), what is in flight or held for a
//!   starting engine is still answered; after `ServiceConfig::eof_grace` (10 s) the rest is
//!   answered `engine_timeout` ("may or may not have taken effect"), then the connection
//!   closes and, when it was the last, the engine is stopped.
//! * Engine exits count towards the crash-loop breaker; a start that fails counts too. A
//!   pending restart shows as `bb/connection` `connecting` with `restarting: true`, the
//!   `attempt` and the exit as `lastError`. Once the breaker opens, `bb/connection` reports
//!   `error`, `restarting: false` and the reason, and every call but `bb.init` answers
//!   `engine_unavailable` with that reason and what to do, without reaching the adapter,
//!   until `bb.command {command: "engine.restart"}` (module `lifecycle`) clears the crash
//!   history and starts the engine again. `engine.restart` on a running engine replaces it
//!   (its stop is no crash); on an attached engine it answers `invalid_request`.
//! * `bb.command {command: "metrics"}` answers the Kilo backend plan's telemetry counters
//!   (`kilo.cli.*`, module `metrics`), the bridge's own (`bridge`), the breaker and the
//!   diagnostics. `bb/connection` carries `diagnostics` (engine pid and port, reconnects,
//!   last gap, outbound queue depth over all connections, last flush latency = arrival of the
//!   oldest unwritten engine event to the hand-over of the batch) as of its emission: it is
//!   sent on connection changes, not as a stream; `metrics` has the current values.
//! * Prompts (permission requests and questions) are the host core's, engine-wide and
//!   shared by every webview connection: the loop asks it before an answer reaches the
//!   adapter (shown, pending, the trust gate: `--trusted` or `bb.init({workspaceTrusted})`,
//!   the command line cannot be revoked by a webview), has the adapter deny what the host
//!   withdraws (expired at the host's deadline, a stopped turn's, a restarted engine's), and
//!   publishes the host's prompt counters; `pendingPermissionCount` is the host's open set.
//! * The host core is built for the adapter's engine kind, which decides which events are
//!   deltas that coalesce (ACP events are matched as Kilo's, so none do).
//! * Kilo events carry `ts` only from the event itself (`properties.time`, a part's
//!   `time.end`/`start`, a session's or message's `time.completed`/`updated`/`created`) and
//!   `turn` only from a `properties.turn`; otherwise both stay absent.

mod clock;
mod connections;
mod delivery;
mod endpoint;
pub mod engine;
pub mod folders;
pub mod fs;
mod ingest;
mod inputs;
mod lifecycle;
mod metrics;
mod order;
pub mod pace;
mod saved;
mod service;
pub mod sink;
mod starter;
mod trim;

pub use clock::SystemClock;
pub use endpoint::Endpoint;
pub use engine::{
    AnswerReason, EngineAdapter, EngineError, InputReceiver, InputSender, PromptAnswer,
    input_channel,
};
pub use folders::{FolderEngine, FolderFactory, Folders};
pub use ingest::Ingest;
pub use pace::Pace;
pub use saved::PROMPTS_FILE;
pub use service::{Service, ServiceConfig, ServiceError, Supervision};
pub use sink::{Inbound, MemoryWebview, WebviewSink, WriteAck, memory};
pub use starter::{EngineStarter, StartedEngine};
pub use trim::MemoryTrim;

#[cfg(test)]
mod tests;
