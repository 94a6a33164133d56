//! The WebSocket webview bridge: `request`/`response`/`event` envelopes over a loopback
//! WebSocket, admitted by a per-run `?token=`, an `Origin` allow-list and a loopback `Host`.
//! Each connection is one webview: it gets its own `WebviewSink` on the runtime's
//! connection channel; `bb.*` requests go to the runtime as v1 requests and the runtime's v1
//! responses and topics come back as WebSocket responses and events of the same names.
//! `dialog.open` / `shell.openPath` go to a [`Platform`] port, `acp_*` to an [`AcpHandler`].
//!
//! IO contract: serves the routes of [`router`] on a listener the caller binds; the only
//! process it may start is the desktop opener of [`HeadlessPlatform`].
//!
//! # Rules
//!
//! * Admission, in order: `Host` must be `127.0.0.1`, `localhost` or `[::1]` with the
//!   gateway's port (421 otherwise); `Origin`, when present, must be the gateway's own,
//!   `tauri://localhost`, `http://tauri.localhost` or a configured extra (403); the token
//!   must match in constant time (403). A refusal names the check, never the token; nothing
//!   logs the token or the query string.
//! * A message larger than the protocol's byte limit closes the connection with 1009 and a
//!   reason (tungstenite refuses it before it is buffered whole); other connections are
//!   unaffected. An invalid message is answered with an error response when its id is
//!   readable, else logged as a violation.
//! * Every request gets exactly one response: the runtime answers `bb.*`; the platform and
//!   ACP ports answer the rest (their results are checked against the method's result type;
//!   a wrong shape becomes `internal_error`); if the runtime is gone the request is answered
//!   with `engine_unavailable`.
//! * An outbound envelope that fails validation is not sent: a response becomes an
//!   `internal_error` response, an event is dropped and logged. Every envelope taken from the
//!   runtime is acknowledged once written (or dropped), so the runtime knows what reached the
//!   page.
//! * When `WsState::stopping` turns `true`, every connection closes with 1001; a connection
//!   that arrives after the runtime is gone is closed with 1011.
//!
//! # Choices (where the specs are silent)
//!
//! * A request without `Origin` is admitted (non-browser clients hold the token; browsers
//!   always send `Origin`); `null` and any origin not listed are refused.
//! * The page itself needs the token too, so the token only reaches whoever was given the URL.
//! * Binary messages are decoded like text ones (UTF-8 JSON); there is one message limit for
//!   both, enforced as the WebSocket frame and message limit.
//! * `shell.openPath` in the headless platform opens a contained, existing path with
//!   `xdg-open`; no opener answers `unsupported`, a missing file `not_found`.
//! * Platform and ACP requests run beside the reader, so a dialog waiting for the user never
//!   holds up `bb.*` requests; their responses may overtake earlier `bb.*` responses (ids
//!   match them).

mod acp;
mod connection;
mod convert;
mod guard;
mod platform;
mod server;

pub use acp::{AcpHandler, AcpUnavailable};
pub use connection::{CLOSE_GOING_AWAY, CLOSE_TOO_BIG, CLOSE_UNAVAILABLE};
pub use convert::to_ws;
pub use guard::{OriginPolicy, fresh_token, host_allowed, token_matches};
pub use platform::{HeadlessPlatform, Platform};
pub use server::{ECHO_MAX_BYTES, Refusal, WsState, query_token, router};

#[cfg(test)]
mod tests;
