//! Agent Client Protocol client: drives any ACP agent over its stdio.
//!
//! The bridge is the ACP *client*. [`AcpHub`] is the transport-neutral `acp_*` surface (one
//! method per call, one event receiver per hub); the gateway wires each WebSocket to its own
//! hub, and the sidecar's `--engine acp` adapter ([`sidebar`]) drives one through the v1
//! methods. IO: spawns agents and the terminals they ask for, reads and writes files inside
//! the workspace for them; nothing else.
//!
//! # Choices
//!
//! * **SDK.** The wire types and the JSON-RPC connection (ids, request/response matching,
//!   the dispatch loop, "method not found" for agent requests nobody handles, failing
//!   pending calls when the transport closes, protocol version negotiation) are the
//!   `agent-client-protocol` crate, pinned exactly (`=5.2.0`, ACP schema 1.17.0), without
//!   its unstable features. Two things are not taken from it: spawning (its `AcpAgent`
//!   starts a process itself, without the supervisor's environment allow-list, process
//!   group, parent-death signal and group guard, so the agent is spawned through
//!   `bb_supervisor::ProcessSpawner::spawn_stdio` and its pipes handed to the SDK as
//!   `ByteStreams`), and `session/update` parsing: the SDK's typed `SessionUpdate` rejects a
//!   kind it does not know, so updates are taken as raw JSON and forwarded whole (also the
//!   unstable `subagent_update`, which the bridge maps without advertising sub-agent
//!   support).
//! * **Initialize.** The client speaks protocol version 1; an agent that negotiates another
//!   is refused (`acp_protocol_unsupported`, naming both). It offers `fs.readTextFile`,
//!   `fs.writeTextFile`, `terminal`, `session.notices`, `session.compaction`,
//!   `session.configOptions.boolean` and elicitation `form` + `url`.
//! * **Optional agent methods** ([`Optional`]: `session/load`, `list`, `resume`, `close`,
//!   `delete`) are sent only when the agent's answer offers them; otherwise the call is
//!   `not_supported` naming the method. `session/set_config_option` needs config options on
//!   the session (checked: the option exists and takes the value); image, audio and embedded
//!   prompt content need the matching `promptCapabilities`.
//! * **Sessions.** Reopening prefers `session/resume` (no replay) over `session/load`.
//!   Closing a session stops forwarding its updates *before* `session/close` is sent, so a
//!   late update of it is dropped and counted ([`AcpCounters::dropped_after_close`]); what it
//!   holds open is answered `cancelled`, its terminals killed. Without `session/close` the
//!   session is still closed here (a running turn cancelled). Every `session/new`, `load`,
//!   `resume` and `set_config_option` answer's config options are also reported as a
//!   `config_option_update`, so a client follows one kind of update for them.
//! * **Files** ([`MAX_READ_BYTES`], [`MAX_WRITE_BYTES`]): absolute paths inside the
//!   workspace only (symlink-safe); reads need no trust. A write needs a trusted workspace
//!   ([`Gate`]) and an approval: the user's approval of an edit of the same path in the same
//!   turn covers it (Kilo and opencode write the approved edit through the client), else the
//!   bridge asks with its own permission request (`bb-write-<n>`, options `allow` /
//!   `reject`), answered like the agent's. Refusals reach the agent as JSON-RPC errors
//!   (-32602 outside, -32002 missing, -32603 otherwise) and the client as a file-access event.
//! * **Terminals** ([`DEFAULT_OUTPUT_LIMIT`]): refused until the workspace is trusted; the cwd
//!   is inside the workspace; a command without arguments that looks like a command line runs
//!   under `/bin/sh -c`; the environment is the allow-list plus the agent's (loader variables
//!   refused); own process group through the spawner; output kept to the agent's byte limit
//!   (oldest bytes dropped on a char boundary), lines capped like engine log lines (8 KiB);
//!   killed (TERM, KILL after 0.5 s) on `terminal/kill`, `release`, the session's cancel or
//!   close, and the connection's end.
//! * **Elicitations**: held until answered (`accept` with the form checked against its schema:
//!   required fields, types, enums; `decline`; `cancel`) or cancelled with the session; a mode
//!   this client does not know is answered `cancel` at once, never shown as a known one.
//! * **Lifetime.** The agent never outlives its connection: `acp_disconnect` (TERM to the
//!   group, KILL after 3 s, then reaped before the call returns), dropping the hub (the
//!   client went away), or the bridge dying (death signal, guard).
//! * **Crashes.** The watcher reaps an agent that exits on its own and records why: its exit
//!   status and the last [`STDERR_TAIL_LINES`] lines of its stderr, redacted, at most
//!   [`STDERR_TAIL_CHARS`] characters. Every pending call fails with `acp_connection_closed`
//!   naming that, and a `acp-session-state {state: "closed", reason}` event is sent. Later
//!   calls on the id get the same error; the id is kept so the error says "closed", not
//!   "unknown". (Restarting is the sidecar adapter's: [`sidebar`].)
//! * **Permissions.** Every `session/request_permission` is held until
//!   `acp_permission_reply` answers it (an option id that was not offered is refused with
//!   the list) or `acp_session_cancel` answers it `cancelled`; while a cancelled turn is
//!   still running, new permission requests of that session are answered `cancelled` at
//!   once. An answer is reported as `acp-session-state {state: "permission_settled"}`.
//! * **Listing.** `session/list` is read for at most [`MAX_LIST_PAGES`] pages; a longer
//!   listing is cut there and logged.
//! * **Ids.** Connection ids are random version-4 UUIDs. A request is named by the agent's
//!   own JSON-RPC id (number or string), as the agent sent it; the bridge's own questions by
//!   `bb-write-<n>`.
//! * **Timeouts.** `initialize` and the session calls get 120 s; prompts are unbounded (a turn
//!   ends by itself or by a cancel).
//! * **Events.** `acp-session-update {connectionId, sessionId, update}` (the update untouched),
//!   `acp-session-state {connectionId, sessionId?, state: running|idle|closed|
//!   permission_settled|elicitation_settled|file_access, …}`, `acp-permission-request
//!   {connectionId, sessionId, requestId, toolCall, options}`, `acp-elicitation-request
//!   {connectionId, sessionId?, requestId, elicitation}`, `acp-terminal-output
//!   {connectionId, sessionId, terminalId, output | exitStatus}`. The hub's channel holds
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
