//! The wire contract between a webview and the bridge: the v1 RPC envelope (`req`/`res`/`evt`)
//! and the WebSocket envelope (`request`/`response`/`event`), their typed params, results and
//! event payloads, and the validation that turns raw JSON into them.
//!
//! IO contract: this crate does no IO; it turns bytes into typed messages and back.
//!
//! # Decoding
//!
//! [`decode_v1`] and [`decode_ws`] (or [`decode`] with a [`Transport`]) take one raw message
//! and return the typed message or a [`Rejection`] with a stable [`RejectCode`]. Bridges run
//! outbound messages through the same checks with [`V1Message::to_line`] /
//! [`WsMessage::to_line`] before writing. A rejected request whose id could be read yields the
//! error response owed to the sender ([`Rejection::v1_response`], [`Rejection::ws_response`]).
//!
//! # Rules where the specs are silent
//!
//! - The byte limit ([`Limits::max_bytes`], default 1 MiB) is checked on the raw length before
//!   anything else, so an oversized message is `payload_too_large` even if it is not JSON.
//! - Nesting deeper than [`Limits::max_depth`] (default 100) is `invalid_json`, found by an
//!   iterative pre-scan before parsing; the parser never recurses past it.
//! - A message the decoder cannot read an id from (too long, too deep, not UTF-8, not JSON)
//!   may still be a request: [`IdSniffer`] reads its top-level `kind` and `id` from the raw
//!   bytes, fed in chunks (a bridge never holds an over-long line whole), so the sender still
//!   gets its error response ([`Rejection::answering`]).
//! - Not UTF-8, empty, whitespace-only or not JSON: `invalid_json`. JSON but not an object:
//!   `invalid_envelope`.
//! - v1: `v` is checked before `kind`. Missing or non-numeric `v` (including the string
//!   `"1"`) is `invalid_envelope`; any other number (including `1.0`, which is not the
//!   integer literal 1) is `unsupported_version`, whatever the rest of the message looks like.
//! - Missing, unknown or non-string `kind`/`type` is `invalid_envelope`. Ids must be strings
//!   (a numeric id is `invalid_envelope`); the empty string is a valid id.
//! - A request's method is checked before its params: an unknown name (including a method of
//!   the other transport) is `unknown_method`. Params absent or `null` are read as `{}`, so a
//!   method whose params are all optional (`bb.init`, `bb.listSessions`,
//!   `bb.createSession`, `dialog.open`) accepts them; a method with a required field answers
//!   `invalid_params`. Params that are not an object (array, string, number) are
//!   `invalid_params`.
//! - Count fields (`maxBytes`, `headLines`, `tailLines`, and `retryCount`,
//!   `pendingPermissionCount`, `turn` in payloads) are non-negative JSON integer literals up
//!   to 2^53 - 1: negatives, strings and numbers written with a fraction or exponent (`1.5`,
//!   `10.0`, `1e3`) are `invalid_params` (in a v1 event payload, `invalid_envelope`). `null`
//!   for an optional field is read as absent.
//! - Responses: `ok` must be a boolean; `ok: true` with an `error`, `ok: false` without an
//!   `error`, or `ok: false` with a `result` are `invalid_envelope` (`null` counts as
//!   absent). The `result` is not checked at the envelope level (a response does not name its
//!   method); [`v1::V1Method::check_result`] / [`ws::WsMethod::check_result`] check it when the
//!   method is known.
//! - Events: an unknown topic/event name, a missing payload or a v1 payload not matching its
//!   topic is `invalid_envelope`. WebSocket event payloads must be JSON objects; their fields
//!   are open.
//! - Unknown fields anywhere are accepted and dropped (additive changes within v1).
//!
//! # Additions within v1 (all optional for a webview; old webviews keep working)
//!
//! - Identity: `tabId` on `bb.createSession` / `bb.selectSession` (it binds the tab to the
//!   session; `bb.deleteSession` and `bb.stop` accept and ignore it), `messageId` on
//!   `bb.sendMessage` (the reply's event items carry it).
//! - Delivery: every `bb/events` payload a tab-tracking bridge sends carries `tabId` and a
//!   per-tab `seq` (from 1, +1 per message, never reused); `bb.init({lastSeen: {tabId: seq}})`
//!   asks for exactly what each tab missed. When that is no longer held the bridge sends a
//!   declared resync: `resync: true` with `view`, the session's reduced view model.
//!   `bb.visibility({visible})` says when the webview is hidden or shown.
//!   `bb.init({workspaceTrusted})` says whether write/exec actions are allowed.
//! - Items: every `bb/events` item the bridge sends carries its stable `class` (optional on
//!   the wire, like every additive field: an item shaped as the spec shows it, `{id, type,
//!   turn?, ts?, payload}`, is valid), and a `truncated: {ref, fields, totalBytes}` when large
//!   fields were replaced by previews (the full payload comes from `bb.command {command:
//!   "body.get", args: {ref}}`). An item of another session than its message's carries that
//!   `sessionId`: a sub-agent's prompt (and what settles it) shown on an ancestor session's
//!   tab.
//! - Updates: `bb.init({receive: "events" | "updates" | "both"})` says what `bb/events`
//!   messages carry: the engine events (the default, what a webview that says nothing gets),
//!   the view-model updates of the host's reducers in `updates` ([`v1::WebviewUpdate`]:
//!   keyed upserts and offset text deltas, see `v1::updates`; `events` left empty), or both.
//!   A resync for a webview receiving updates is the updates that rebuild the session's view,
//!   paged: its recent turns (and every card still pending in the turns left out), with
//!   `earlier: {before, turns}` when older turns were left out; `bb.history({sessionId,
//!   before, limit?})` returns the turns before `before` as updates, oldest first, with the
//!   next `earlier` (a new method, additive: a webview that never calls it still gets a
//!   working, shorter view). [`v1::UpdatedView`] is the reference of how a webview applies
//!   them (`UpdatedView::prepend` for a history page). A sub-agent's
//!   prompt card shown on an ancestor session's tab carries the sub-agent's `sessionId` (the
//!   session an answer names). The `run` update carries the engine's `usage`, its `commands`
//!   (the prompt box's `/` menu), its `configOptions` (the model and mode pickers; applied
//!   with `bb.command config.set`) and `mode`; a question of a card that is an agent's form
//!   names its `field`, `input` type, `required` and `default` (answered as one object).
//! - Sessions (`bb/state`, `bb.listSessions`, `bb.createSession`): `queuedPrompts`,
//!   `parentId` (the session that started a sub-agent's), and in `bb/state`
//!   `pendingPermissionCount` per session (the prompts of that session waiting).
//! - `bb/connection` gains `attempt`, `restarting` (`status: "error"` + `restarting: false`
//!   means the bridge gave up until asked to restart the engine), `diagnostics` and
//!   `heartbeat` (on the heartbeat the bridge sends every 5 s: its interval in milliseconds).
//! - The bridge's own `bb.prompt.closed` event (`PromptClosedPayload`) gains `answeredBy`
//!   (`{connection, tabId}`) and the answer's `decision`, when the engine took a webview's
//!   answer: every other window resolves the card with who answered and how.
//! - `bb.approvePermission` takes `eventId`, the id of the event that showed the card (a
//!   `permissionRequest` update carries it): an engine may give a later request the id of an
//!   earlier one (BreadBoard numbers them per run), and an answer naming the earlier card is
//!   then refused (`permission_not_pending`) instead of being taken for the later request.
//! - Workspace folders (a multi-root workspace): `bb.init`'s result lists `folders` (canonical
//!   paths, the default first); `bb.createSession` takes `folder` (one of them, as listed or
//!   any path resolving to one; else `folder_not_in_workspace`, naming the folders), and a
//!   session summary (`bb/state`, `bb.listSessions`, `bb.createSession`) says its `folder`
//!   when the bridge serves more than one.

mod count;
mod decode;
mod limits;
mod macros;
mod marker;
mod reject;
pub mod schema;
mod sniff;
pub mod typescript;
pub mod v1;
mod verdict;
pub mod ws;

pub use limits::{DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, Limits};
pub use marker::{EventTag, EvtTag, ProtocolV1, ReqTag, RequestTag, ResTag, ResponseTag};
pub use reject::{RejectCode, Rejection};
pub use sniff::{IdSniffer, MAX_SNIFFED_ID_BYTES, sniff_request_id};
pub use v1::{V1Message, decode_v1};
pub use verdict::{Message, Transport, UnknownTransport, Verdict, decode};
pub use ws::{WsMessage, decode_ws};

#[cfg(test)]
mod tests;
