//! The host core that every bridge shares: the sessions the engine knows, run and
//! permission state per session, per-session batching of engine events, the reduced view
//! model per session, and — per webview connection — readiness, visibility, the selected
//! session, the `bb/state` projection, tabs with their delivery index (`seq`) and ring, as
//! one state machine fed inputs with `now` passed in (`handle`, `handle_timeout`,
//! `poll_output`, `poll_timeout`).
//!
//! IO contract: this crate does no IO and reads no clock; time enters as `now` arguments and
//! through the [`Clock`] port, implemented by the service.
//!
//! # Choices
//!
//! * **Connections.** Inputs that concern one webview carry its [`ConnId`] (the runtime
//!   picks it); the first input naming a connection opens it. Engine-wide state (sessions,
//!   status, run flags, lanes, view models, the engine connection) exists once; each
//!   connection has its own readiness, visibility, back-pressure flag, selected session,
//!   last `bb/state` and output queue. [`Host::poll_output`] returns `(conn, topic)`.
//! * **Tabs.** A tab named by the webview (`tabId` on `bb.createSession` /
//!   `bb.selectSession`) shows one session; binding it is atomic in both directions (the tab
//!   leaves its previous session, another tab of the same connection showing the session
//!   gives it up). Two connections may show the same session. A connection that never names
//!   a tab gets one implicit tab, `implicit-<conn>` ([`implicit_tab`]), which shows every
//!   session that connection created, selected or messaged without naming a tab, plus every
//!   session no tab of any connection shows (so a single webview that knows nothing of tabs
//!   sees every session's events, as before). So two connections never see each other's
//!   sessions unless they select them.
//! * **seq and rings.** Every `bb/events` message carries `tabId` and a per-tab `seq` (from
//!   1, +1 per message, never reused). Each tab keeps a ring of what it was sent, bounded by
//!   `max_buffered_events` messages and `max_buffered_bytes` serialized bytes (the newest
//!   message is always kept). A connection that cannot receive (before `bb.init`, hidden,
//!   or stalled by the runtime because its outbound queue is full) is not handed events:
//!   they wait in the rings, and when it can receive again each tab gets exactly the
//!   messages after the last it was handed, in order — or, when the ring no longer holds
//!   them, a **declared resync**: one message per session the tab showed, `resync: true`,
//!   `events: []`, `view` = the session's reduced `bb_normalize::SessionView` (which already
//!   holds every event published so far). Hidden buffering is therefore bounded in bytes,
//!   and deltas coalesce while hidden through the background cadence.
//! * **Replay.** `bb.init({lastSeen: {tab: seq}})` ([`Input::WebviewReady`]) moves each named
//!   tab to the connection (a recreated webview reattaching, also over a new connection) and
//!   replays what came after `seq`, or resyncs. A tab the bridge does not know (the bridge
//!   restarted) continues numbering after `seq`, so the webview's de-duplication never drops
//!   new messages; its sessions are bound again when the webview selects them. Without
//!   `lastSeen` a re-`bb.init` gets what was not yet handed to the connection, plus the
//!   connection and state again. Tabs of closed connections are kept (at most
//!   `max_detached_tabs`, oldest forgotten) and keep recording.
//! * **Ordering.** Events of one session leave in the order they came in, ids untouched.
//!   Before a `bb/state` or `bb/connection` update is emitted, every pending event batch is
//!   flushed, so the webview never sees "idle" ahead of the last streamed text; replayed
//!   events go before held state/connection updates.
//! * **Batching.** Each session's events go through its own `bb_normalize` batcher: adjacent
//!   text deltas of one message (+ turn, + part) coalesce into one event, and a session
//!   publishes at most once per cadence of its priority — a session a receiving connection
//!   selected every 33 ms at most, the others every 500 ms — except that the first event
//!   after a quiet spell, a permission request, an error and a run end go out at once. A
//!   session with `max_batch` items pending is flushed at once too.
//! * **Coalesced deltas.** A coalesced delta is the LAST engine event merged into it — its
//!   `id` (so a resume token taken from it is valid), `type`, `turn`, `ts` — with the payload
//!   of that event except the text field (`delta` for Kilo `message.part.delta` and
//!   BreadBoard `assistant.message.delta` / `…reasoning.delta` /
//!   `…thought_summary.delta`; `text` for BreadBoard `assistant_delta`), which holds the
//!   concatenated text of all merged events in engine order. Only adjacent deltas merge, so
//!   no other event is moved.
//! * **Items.** Every item carries its `bb_normalize` class; the events of a reply carry the
//!   `messageId` of the `bb.sendMessage` that started it ([`Input::MessageSent`]) until the
//!   run ends (`completion`, `run_finished`, `error`, `session.idle`, `session.error`).
//! * **Size.** No message is dropped for its size: a batch is split so each serialized
//!   payload stays under `max_message_bytes` (1 MiB less 4 KiB); an item that alone exceeds
//!   it has every string longer than 8 KiB / 200 lines replaced by its head + tail preview
//!   (`bb_normalize::truncate`), naming a reference, and carries `truncated: {ref, fields,
//!   totalBytes}`; if that is still too large its payload becomes one preview of the whole.
//!   A resync view is fitted the same way (each long string under its own reference). The
//!   full JSON bodies are kept in a store bounded to [`BODY_STORE_BYTES`] (64 MiB, oldest
//!   forgotten) and read with [`Host::body`].
//! * **`bb/state`.** A session's `status` is the engine's own (`failed`, `completed`, …);
//!   `running` replaces it while the run flag (derived from events) is set, and `idle` is
//!   said only when the engine gave no status. `running` is the connection's selected
//!   session's run flag; the permission count is the sum over all sessions.

mod clock;
mod conn;
mod core;
mod fit;
mod lane;
mod tabs;

pub use bb_normalize::Engine;
pub use clock::{Clock, FakeClock};
pub use core::{Host, HostConfig, Input};
pub use fit::BODY_STORE_BYTES;
pub use tabs::{ConnId, implicit_tab};

#[cfg(test)]
mod tests;
