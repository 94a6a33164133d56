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
//!   session that connection created, selected or messaged without naming a tab; a
//!   connection that never named a tab also gets every session no tab shows (so a single
//!   webview that knows nothing of tabs sees every session's events, as before). Messages of
//!   a session no tab shows yet (a new session streaming before the `bb.createSession` that
//!   binds it has answered) are also kept, within the ring bounds, and handed to the first
//!   tab that binds it, before anything newer (a declared resync if some were dropped).
//!   A connection that names a tab (`TabNamed`, when the request is dispatched) no longer
//!   gets unbound sessions. So two webviews that use tabs never see each other's sessions
//!   unless they select them.
//! * **Claims.** A session may stream before the request that binds it has answered (a new
//!   session's first metadata events come before `bb.createSession` returns its id). So a
//!   `bb.createSession` or `bb.selectSession` claims its session when it is *dispatched*
//!   ([`Input::Claimed`]), not when it answers, and the claim lasts until its response went out
//!   ([`Input::Answered`]) or its connection closed. A select claims the session it names; a
//!   create, whose session id is not known yet, claims every session that starts streaming
//!   while it is in flight and that no tab was ever sent anything of (a new session). The
//!   events of a claimed session that no tab shows are kept (as early messages: a ring's bounds
//!   per session, one ring's bytes in all, the session holding the most giving way first and
//!   then caught up by a declared resync; the messages are shared with the tabs that were sent
//!   them, not copied) and offered to nobody: the binding that the claiming request makes hands
//!   them to its tab. Only a session that no tab shows and no request claims is offered to the
//!   implicit tabs of connections that never named a tab; a claimed session left unbound when
//!   its claims end (the request failed, or bound another session) is offered to them then,
//!   from its first kept event. Early messages are numbered per session and each tab is handed
//!   only those it was not sent yet: an implicit tab that was sent a session's first events
//!   directly (a restarted bridge resumes a saved stream on its own) and then selects it gets
//!   the events its select's claim held, once. So two windows never see each other's sessions,
//!   even when one's implicit tab exists before the other names its tabs, and a single webview
//!   that never names a tab still sees every session's events, including sessions it did not
//!   create (e.g. after a bridge restart) — at worst held until its own create answers.
//! * **seq and rings.** Every `bb/events` message carries `tabId` and a per-tab `seq` (from
//!   1, +1 per message, never reused). Each tab keeps a ring of what it was sent, bounded by
//!   `max_buffered_events` messages and `max_buffered_bytes` serialized bytes, and of the
//!   messages already handed to its connection by `max_handed_bytes` (256 KiB: what a
//!   reattaching webview may have lost in flight; older ones would be a second copy of what
//!   the session's view holds, so a webview further behind gets a declared resync). The newest
//!   message is always kept. A connection that cannot receive (before `bb.init`, hidden,
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
//!   new messages; its sessions are bound again when the webview selects them (and the
//!   connection's implicit tab, which recorded what the restarted bridge resumed before the
//!   webview was ready, is dropped: the named tab that selects a session gets those messages
//!   once, from the early store). Without
//!   `lastSeen` a re-`bb.init` gets what was not yet handed to the connection, plus the
//!   connection and state again. Tabs of closed connections are kept (at most
//!   `max_detached_tabs`, oldest forgotten) and keep recording.
//! * **Ordering.** Events of one session leave in the order they came in, ids untouched.
//!   A `bb/state` update is built at the next [`Host::poll_output`], so the changes of inputs
//!   handled in a row leave as one message (a run that starts and ends between two polls
//!   shows no `running`; its events still say so). Before it, the pending events of every
//!   session whose entry changed since they were queued are flushed, so the webview never
//!   sees "idle" ahead of the last streamed text; other sessions keep their cadence. A
//!   `bb/connection` update flushes every session first. Replayed events go before held
//!   state/connection updates.
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
//! * **Updates.** A webview says in `bb.init({receive})` ([`Input::Receive`]) whether its
//!   `bb/events` messages carry the engine events (the default: exactly the messages a
//!   webview got before updates existed), the view-model updates of the session's reducers
//!   (`updates`, `events` left empty), or both. The updates are taken from the session's
//!   `SessionView` when a batch is published (what the batch changed, attached to its last
//!   message), and only while some tab (of an open or a closed connection) receives them;
//!   until then the view keeps its changes marked and the first updates taken carry them all.
//!   Each tab records messages shaped for its webview (`shape.rs`): one receiving updates is
//!   sent nothing of a message whose events changed nothing it shows; `both` gets the events
//!   and their updates in one message, or in two when one would outgrow the limit; updates too
//!   many for one message are cut over several. A single update larger than half a message
//!   is kept aside and sent as an `oversized` update naming its `body.get` reference. A
//!   declared resync for such a tab is the updates that rebuild the session's view (its
//!   snapshot), and a tab receiving updates that binds a session another tab showed first
//!   (so the session's early messages went there) is sent that snapshot at once: a second
//!   window opening a session sees it; a tab receiving events gets a declared resync (the
//!   view) in that case, rather than starting silently in the middle of the session's
//!   events. The snapshot is **paged**: the transcript's last
//!   `HostConfig::recent_turns` turns (50; a turn starts at a user message), fewer when
//!   they pass [`HISTORY_PAGE_BYTES`] (512 KiB; one turn larger than that is cut to its
//!   newest blocks), then every approval or question still pending in the turns left out
//!   (a late window can answer them at once), then the run, tasks, todos, changed files and
//!   unknown events whole; the message carries `earlier: {before, turns}` when turns were
//!   left out. [`Host::history`] (`bb.history`) pages back from `before` (a block index:
//!   the transcript only grows, so a cursor stays valid while the session lives) in pages of
//!   `history_turns` (50) or the webview's `limit` (at most [`HISTORY_MAX_TURNS`]) within
//!   the same byte bound. A webview receiving events still gets the whole `view` (fitted
//!   under the limit, or a `ref` to fetch it with `body.get`). A connection that changes what it receives resyncs its
//!   tabs (their rings were shaped for the old choice).
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
//!   said when the engine gave no status, or said `running`/`busy` of a session with no turn
//!   in progress (BreadBoard's `running` means the session is alive). A session the engine
//!   gave no title is named by the first line of its first prompt (60 characters at most). `running` is the connection's selected
//!   session's run flag; the permission count is the sum over all sessions. A session's
//!   `queuedPrompts` is the engine's latest [`Input::QueuedPrompts`] count (absent when 0);
//!   an engine upsert of the summary does not clear it.
//! * **Prompts.** The host owns every permission request and question, of every engine
//!   ([`prompts`]): adapters say what the engine raised ([`Input::PromptRaised`], with what
//!   it would let the engine do and the paths it names), re-listed
//!   ([`Input::PromptsListed`]) or settled ([`Input::PromptSettled`]); a prompt is shown
//!   once (a repeat is dropped, an id reused after its request closed is a new prompt),
//!   answered at most once ([`Host::begin_answer`], then [`Input::PromptAnswered`] with how
//!   the engine took it), expires after [`HostConfig::prompt_ttl`] when one is set, is
//!   cancelled by a stop ([`Input::PromptsCancelled`]) and dies with a restarted engine
//!   ([`Input::EngineRestarted`]); pending prompts to deny on the engine come out of
//!   [`Host::poll_withdraw`]. The trust gate is here, once: approving a write, a command or
//!   a kind the adapter cannot name needs a trusted workspace ([`HostConfig::trusted`], or
//!   [`Input::Trusted`] from `bb.init {workspaceTrusted}`), and the refusal says how to
//!   grant it; denying always works. `pendingPermissionCount` is the number of open prompts,
//!   and each session's own count is on its `bb/state` summary.
//! * **Sub-agents.** A session's summary may name its parent (`parentId`). A prompt of a
//!   session no tab shows is also shown on the tab of its nearest ancestor a tab shows, as
//!   an item carrying the sub-agent's `sessionId` (so is what settles it); answering it with
//!   either session id reaches the sub-agent's request. Where no tab shows an ancestor
//!   either, the prompt waits with its session's events, and `bb/state` names the session
//!   that waits (its `pendingPermissionCount`). A prompt that closes without the engine
//!   saying so (stale after a re-list or a 404, or dead with a restarted engine) gets the
//!   host's own [`PROMPT_CLOSED_EVENT`], so no card stays open.
//! * **Answers across a restart.** An answer on its way is saved with its prompt
//!   ([`Host::take_saved`], [`SavedAnswer`]) before the runtime sends it; a restarted host
//!   given it back closes the card at once with that answer and who gave it, and settles it
//!   when the answer sent again is taken or refused as not pending
//!   ([`Input::PromptResent`]); only an answer that cannot be delivered asks again. The event
//!   that showed a closed request, replayed by a resumed stream, shows nothing new; an
//!   earlier request of a restored prompt's id, replayed by it, and its settling leave the
//!   restored prompt open (the settling is the earlier request's).
//! * **Sessions no window shows.** At most [`HostConfig::max_unshown_views`] of their views
//!   are kept (least recently active dropped first, never one running, asking or with events
//!   waiting); a tab binding a dropped one is told ([`VIEW_DROPPED_NOTICE`]).
//! * **A session the engine lost.** [`Input::SessionLost`] (a select the engine answered
//!   `session_not_found` for a session the host keeps) shows the kept view read-only: status
//!   [`LOST_STATUS`], one notice ([`LOST_NOTICE`]).

mod claims;
mod clock;
mod conn;
mod core;
mod events;
mod fit;
mod floor;
mod input;
mod lane;
mod prompting;
pub mod prompts;
mod saved;
mod shape;
mod slot;
mod state;
mod tabs;
mod unshown;

pub use bb_normalize::Engine;
pub use clock::{Clock, FakeClock};
pub use core::{
    HEARTBEAT_INTERVAL, HISTORY_DEFAULT_TURNS, HISTORY_MAX_TURNS, Host, HostConfig, LOST_NOTICE,
    LOST_STATUS, MAX_UNSHOWN_VIEWS,
};
pub use events::{ClassedEvent, EngineEvents};
pub use fit::{BODY_STORE_BYTES, HISTORY_PAGE_BYTES, RECENT_TURNS};
pub use input::{Input, connection_payload, push_merged};
pub use prompting::{PROMPT_CLOSED_EVENT, PromptCounters, Withdraw};
pub use prompts::{AnswerError, AnswerOutcome, Prompt, PromptKind, PromptState, Verdict};
pub use saved::{SavedAnswer, SavedPrompt};
pub use tabs::{ConnId, implicit_tab};
pub use unshown::VIEW_DROPPED_NOTICE;

#[cfg(test)]
mod tests;
