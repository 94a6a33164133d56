//! The pure domain core: classifying raw engine events into stable view-model classes, the
//! reducers that fold them into a session view model, delta batching and coalescing, preview
//! truncation, secret redaction and workspace path containment.
//!
//! IO contract: this crate does no IO and reads no clock; time is passed in.
//!
//! # Flow
//!
//! Adapters turn engine SSE data into a [`RawEvent`] ([`RawEvent::parse`]), classify it once
//! ([`Classified::new`]), queue it in the session's [`Batcher`] and reduce the batches it
//! publishes into a [`SessionView`]. Unknown events reach the debug lane only, counted, with
//! a redacted payload ([`redact`]). Tool paths are checked with a [`PathGuard`].
//!
//! # Choices where the spec is silent
//!
//! - Classes beyond the spec's table: `tool.output` (BreadBoard `tool.exec.*.delta`),
//!   `task.todo` (BreadBoard `todo_update`, Kilo `todo.updated`, ACP `plan`; a BreadBoard
//!   `tool_result` carrying a todo snapshot keeps the table's `tool.result`, and the reducer
//!   sends its todos to the tasks lane instead of a tool block), `run.status` (busy/idle),
//!   `run.limits` (`limits_update`), `run.diff` (`session.diff`, `file.edited`),
//!   `session.info` (session metadata, step markers) and `connection` (connected,
//!   heartbeat, `sync`, instance noise: out of the view, not unknown). `warning` is a
//!   `run.error_or_gap` card of level warning; `conversation.compaction.*` and
//!   `ctree_delta` stay `unknown_event`. Kilo `session.idle` and `session.turn.close` are
//!   `run.finished` (opencode has no `turn.close`); `question.*` are approval cards.
//! - Classification is stateless: a Kilo text part of a user message is classified
//!   `transcript.assistant_stream` and the reducer routes it to the user block it belongs to.
//! - Tool results are matched by call id, else by the oldest running call of the same tool,
//!   else the latest block of the same call/tool in the same turn is refreshed (BreadBoard
//!   sends two results per call), else a closed block is opened.
//! - Task status merges by precedence `failed > running > completed > queued`, except that
//!   `running` gives way to `completed`; each task also shows the roll-up (highest
//!   precedence) of its subtree. Tasks whose parent is unknown, or in a parent cycle, are
//!   listed under `orphans`.
//! - The batcher publishes the first event after a quiet period at once, then at most once
//!   per cadence; coalescing merges only adjacent deltas, so order is never changed. A
//!   background batcher on a grid ([`Batcher::on_grid`]) that waits out its cadence is due
//!   at the grid's next point (100 ms steps), so the host's background lanes publish together.
//! - Windows paths: `\foo` (current drive) and `C:foo` (drive-relative) are invalid; trailing
//!   dots and spaces are trimmed except in `\\?\` paths, where names are literal;
//!   components of only dots and spaces, reserved device names, `:` (alternate data
//!   streams) and wildcards are invalid; device and volume paths (`\\.\`) are invalid.
//!   The symlink-safe check needs the path lexically inside first, then compares the real
//!   path of the longest existing prefix (rest appended) with the root's real path.
//!   Paths longer than 4096 bytes ([`MAX_PATH_BYTES`]) are invalid: finding that prefix
//!   resolves prefixes one by one, which must stay cheap for any engine-supplied path.
//! - Redaction: key fragments `token`, `apikey`, `authorization`, `cookie`, `password`/
//!   `passwd`, `secret`, `credential`, `privatekey`, `accesskey` (case, `-`, `_`, `.`
//!   ignored); keys ending in `tokens` keep numbers (token usage). In URL queries `key`,
//!   `sig`, `signature`, `code`, `auth` are sensitive too. Long (≥ 32) mixed-class runs
//!   with Shannon entropy ≥ 4 bits/char are secrets; UUIDs and plain hex digests are not.
//!   `Bearer …` always, `Basic`/`Digest …` only when encoded-looking.
//! - Bounded memory: the debug lane keeps the last 256 unknown nodes (evictions counted);
//!   the body store keeps 64 MiB of full bodies (oldest evicted, counted). User text is a
//!   preview too (BreadBoard appends its whole system prompt to it).
//! - The view's memory stays near its serialized size: blocks are boxed (a slot of the block
//!   vector is two words), a block id is held as its number (written `b<n>`), message ids are
//!   held once, in their blocks (the transcript's indexes map a key's hash to block positions
//!   and check the block), Kilo part ids once, as index keys (text spans carry a number), and
//!   a text block gives back its spare capacity when its stream ends. The full bodies behind
//!   truncated previews are held on top (the body store above), outside the serialized view.
//! - Error texts shown in cards (notices, tool errors, approval summaries) are redacted and
//!   one line; tool output previews are shown as the engine sent them.
//! - Updates (`reduce::updates`): the reducers mark what they change; `take_updates` writes
//!   each marked block, lane and node once, as a `bb_protocol::v1::WebviewUpdate`, and a text
//!   block's growth as `assistantDelta`s from the UTF-16 offset last sent (a rewrite, e.g. a
//!   Kilo part replaced in the middle, as its whole text); no text goes out in pieces longer
//!   than 64 KiB. `snapshot_updates` writes the whole view the same way: the updates of a
//!   session applied from its first rebuild exactly its snapshot (a property test holds it for
//!   any split of every capture into batches).
//! - Exchanges: each user message (and each run end) begins a new exchange, and the keys of
//!   BreadBoard and ACP messages hold it: those engines reuse message ids and turn numbers
//!   across replies (the demo replays the same script every turn), so a second prompt's reply
//!   never lands in the first's block. Kilo's ids are unique and keyed alone.
//! - A stop: a finish event whose reason says the user stopped the turn (`stopped_by_user`,
//!   `interrupted`, ACP `cancelled`), or Kilo's `MessageAbortedError`, marks the turn stopped
//!   (streaming blocks `stopped`, one `Stopped` card, the summary's outcome) and is no error.
//!   Approval cards still pending when a run ends are resolved `withdrawn`.
//! - Blocks made while the webview's prompt `messageId` is known (`SessionView::apply_for`)
//!   carry it, so a reply groups under the prompt it answers, in any window.
//! - Tool views: for the tools the reducers recognize (shell, listing, patch/edit/write,
//!   read; by name, on all three engines) a block says what the tool did: a command with its
//!   exit code, a listing (200 entries at most), diffs per file (previewed, their full text
//!   behind a reference), a file path. Other tools show their input and output as text.
//! - Approval prompts are said in words from the engine's category and target (`Run echo
//!   hi`, `Edit Makefile`); a Kilo question keeps its questions and the answers it offers.
//! - A view's previews name their full text `text-N` (the host's item bodies are `body-N`),
//!   which `body.get` returns for the session.

pub mod batch;
pub mod breadboard;
pub mod class;
pub mod contain;
pub mod event;
mod json;
pub mod kilo;
pub mod redact;
pub mod reduce;
mod splice;
pub mod truncate;

pub use batch::{Batch, Batcher, Priority};
pub use class::{Classified, EventClass, classify};
pub use contain::{
    Checked, MAX_PATH_BYTES, PathError, PathFlavor, PathGuard, Resolution, Resolver, Verdict,
};
pub use event::{Engine, EventError, RawEvent};
pub use reduce::{Earlier, SessionView, UpdateList};
pub use truncate::{BodyStore, Limits, Preview};

#[cfg(test)]
mod tests;
