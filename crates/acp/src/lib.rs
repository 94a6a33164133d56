//! Agent Client Protocol client: drives any ACP agent over its stdio.
//!
//! The bridge is the ACP *client*. [`AcpHub`] is the transport-neutral `acp_*` surface (one
//! method per call, one event receiver per hub); the gateway wires each WebSocket to its own
//! hub, and the sidecar's `--engine acp` adapter ([`sidebar`]) drives one through the v1
//! methods.
//!
//! # Choices
//!
//! * **SDK.** The wire types and the JSON-RPC connection (ids, request/response matching,
//!   the dispatch loop, "method not found" for agent requests nobody handles, failing
//!   pending calls when the transport closes) are the `agent-client-protocol` crate, pinned
//!   exactly (`=5.2.0`, ACP schema 1.17.0). Two things are not taken from it: spawning (its `AcpAgent` starts
//!   a process itself, without the supervisor's environment allow-list, process group,
//!   parent-death signal and group guard, so the agent is spawned through
//!   `bb_supervisor::ProcessSpawner::spawn_stdio` and its pipes handed to the SDK as
//!   `ByteStreams`), and `session/update` parsing: the SDK's typed `SessionUpdate` rejects a
//!   kind it does not know, so updates are taken as raw JSON and forwarded whole.
//! * **Process.** Own process group, `PR_SET_PDEATHSIG(SIGKILL)`, the supervisor's group
//!   guard; the environment is the supervisor's allow-list plus what `acp_connect` names
//!   (dynamic loader variables `LD_*`/`DYLD_*` are refused). The working directory is the
//!   workspace, or a directory inside it (symlink-safe, `bb_normalize::PathGuard`); outside
//!   only when the workspace is trusted. A bare command is looked up on the agent's `PATH`
//!   before anything starts.
//! * **Lifetime.** The agent never outlives its connection: `acp_disconnect` (TERM to the
//!   group, KILL after 3 s, then reaped before the call returns), dropping the hub (the
//!   client went away), or the bridge dying (death signal, guard).
//! * **Crashes.** The watcher reaps an agent that exits on its own and records why; every
//!   pending call fails with `acp_connection_closed` naming the exit status, and a
//!   `acp-session-state {state: "closed", reason}` event is sent. Later calls on the id get
//!   the same error; the id is kept so the error says "closed", not "unknown".
//! * **Client capabilities.** None are offered: `fs.readTextFile`, `fs.writeTextFile` and
//!   `terminal` are `false` in `initialize`, so agents use their own file and shell tools
//!   (which ask for permission). An agent that calls them anyway gets "method not found"
//!   from the SDK. `acp-terminal-output` is therefore never sent.
//! * **Permissions.** Every `session/request_permission` is held until
//!   `acp_permission_reply` answers it (an option id that was not offered is refused with
//!   the list) or `acp_session_cancel` answers it `cancelled`; while a cancelled turn is
//!   still running, new permission requests of that session are answered `cancelled` at
//!   once. An answer is reported as `acp-session-state {state: "permission_settled"}`.
//! * **Listing.** `AcpHub::list_sessions` reads the agent's `session/list` (when its
//!   `sessionCapabilities.list` says it has one), following `nextCursor` for at most
//!   [`MAX_LIST_PAGES`] pages; a longer listing is cut there and logged.
//! * **Ids.** Connection ids are random version-4 UUIDs. A permission request is named by the
//!   agent's own JSON-RPC id (number or string), as the agent sent it.
//! * **Timeouts.** `initialize`, `session/new` and `session/load` get 120 s; prompts are
//!   unbounded (a turn ends by itself or by a cancel).
//! * **Events.** `acp-session-update {connectionId, sessionId, update}` (the update untouched),
//!   `acp-session-state {connectionId, sessionId?, state: running|idle|closed|
//!   permission_settled, stopReason?, error?, reason?}`, `acp-permission-request
//!   {connectionId, sessionId, requestId, toolCall, options}`. The hub's channel holds
//!   1024 events; when full the agent's reader waits (no drop).
//! * **Limits.** The SDK reads one JSON-RPC message per line without a length bound.

mod asks;
mod caps;
mod client;
mod conn;
mod error;
mod event;
mod fs;
mod gate;
mod hub;
pub mod sidebar;
mod spawn;
mod terminal;
#[cfg(test)]
mod tests;
mod watch;

pub use caps::Optional;
pub use conn::{AcpCounters, MAX_LIST_PAGES, SETUP_TIMEOUT, STOP_GRACE};
pub use error::AcpError;
pub use event::{AcpEvent, AcpEventKind};
pub use fs::{MAX_READ_BYTES, MAX_WRITE_BYTES};
pub use gate::{Gate, TrustFlag};
pub use hub::{AcpHub, EVENT_CAPACITY};
pub use spawn::LaunchPolicy;
pub use terminal::DEFAULT_OUTPUT_LIMIT;
pub use watch::{STDERR_TAIL_CHARS, STDERR_TAIL_LINES};
