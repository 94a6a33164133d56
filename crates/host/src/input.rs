//! Everything the host core reacts to: per-connection inputs (naming a [`ConnId`]) and
//! engine-wide ones.

use std::collections::BTreeMap;
use std::sync::Arc;

use bb_normalize::EventClass;
use bb_protocol::v1::{ConnectionPayload, ConnectionStatus, EngineEvent, Receive, SessionSummary};

use crate::events::EngineEvents;
use crate::prompts::{AnswerOutcome, Prompt};
use crate::saved::SavedPrompt;
use crate::tabs::ConnId;

/// Everything the host core reacts to. Inputs naming a `conn` concern that webview
/// connection (it is opened implicitly by the first input naming it); the others are
/// engine-wide.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// A webview connection opened.
    Opened(ConnId),
    /// A webview connection closed; its tabs stay for a reattach.
    Closed(ConnId),
    /// The webview completed `bb.init`: it is ready to receive. `last_seen` (tab → last
    /// `seq` it saw) asks for what each tab missed.
    WebviewReady {
        /// The connection.
        conn: ConnId,
        /// `bb.init({lastSeen})`.
        last_seen: BTreeMap<String, u64>,
    },
    /// What the webview's `bb/events` messages carry (`bb.init({receive})`): engine events,
    /// view-model updates, or both. Applied before its [`Input::WebviewReady`].
    Receive {
        /// The connection.
        conn: ConnId,
        /// What it receives.
        receive: Receive,
    },
    /// The webview was hidden (`false`) or shown (`true`).
    Visibility {
        /// The connection.
        conn: ConnId,
        /// Whether it is visible.
        visible: bool,
    },
    /// The runtime could not hand the connection more (`true`) or can again (`false`).
    Stalled {
        /// The connection.
        conn: ConnId,
        /// Whether it is stalled.
        stalled: bool,
    },
    /// The webview selected a session (in a tab, or its implicit tab).
    SessionSelected {
        /// The connection.
        conn: ConnId,
        /// The session.
        session_id: String,
        /// The tab, when the webview named one.
        tab_id: Option<String>,
    },
    /// The webview named a tab (in a request still in flight): from now on it is a webview
    /// that uses tabs, so sessions no tab shows wait for their tab instead of going to its
    /// implicit tab.
    TabNamed {
        /// The connection.
        conn: ConnId,
        /// The tab.
        tab_id: String,
    },
    /// A request of the webview that will bind a session was dispatched: `bb.createSession`
    /// (`session_id: None`, the session it is about to create) or `bb.selectSession`. Until
    /// it binds the session or is answered ([`Input::Answered`]), the session's events (for
    /// a create: of every session no tab was sent anything of yet) are held for it, not
    /// offered to other connections' implicit tabs.
    Claimed {
        /// The connection.
        conn: ConnId,
        /// The request's id.
        request_id: String,
        /// The session a select names; `None` for a create.
        session_id: Option<String>,
    },
    /// The response to a request of the webview went out: what it claimed is released.
    Answered {
        /// The connection.
        conn: ConnId,
        /// The request's id.
        request_id: String,
    },
    /// The webview used a session without selecting it (created it while another one was
    /// selected, sent a message to it): its events go to the webview from now on.
    SessionUsed {
        /// The connection.
        conn: ConnId,
        /// The session.
        session_id: String,
        /// The tab, when the webview named one.
        tab_id: Option<String>,
    },
    /// The webview sent a message with a `messageId`: the session's events carry it until the
    /// run ends.
    MessageSent {
        /// The session.
        session_id: String,
        /// The webview's message id.
        message_id: String,
    },
    /// The engine's full session list (replaces what is known, keeps run state).
    SessionsListed(Vec<SessionSummary>),
    /// A session was created or changed.
    SessionUpserted(Box<SessionSummary>),
    /// A session was deleted.
    SessionRemoved(String),
    /// A session started or finished running.
    SessionRunning {
        /// The session.
        session_id: String,
        /// Whether a turn is in progress.
        running: bool,
    },
    /// A prompt was sent to a session (`bb.sendMessage` accepted): while a turn runs, it
    /// waits behind it (counted at once; the engine's count, when it gives one, replaces it).
    PromptQueued {
        /// The session.
        session_id: String,
    },
    /// Prompts the engine holds queued behind a session's running turn; shown in that
    /// session's `bb/state` summary as `queuedPrompts` (absent when 0). From the first one
    /// on, the engine's count is the session's.
    QueuedPrompts {
        /// The session.
        session_id: String,
        /// How many.
        count: u64,
    },
    /// Engine events of one session, in engine order, each with the class its adapter
    /// decided from what it read of the event (the core does not read it again). The one
    /// way engine events enter the host.
    Events {
        /// The session: shared, not copied per input (an adapter keeps one per session; the
        /// host only compares it and looks the session up by it).
        session_id: Arc<str>,
        /// The events and their classes.
        events: EngineEvents,
    },
    /// The engine raised a permission request or a question. `event` is the engine event
    /// that shows it (`None`: the webview was shown it before, e.g. a resumed stream's
    /// replay); it goes out only when the prompt is new (a repeat is not shown again).
    PromptRaised {
        /// The request as the adapter reads it.
        prompt: Box<Prompt>,
        /// The event that shows it.
        event: Option<Box<(EngineEvent, EventClass)>>,
    },
    /// A permission request or question read again to rebuild state (a resumed stream's
    /// replay of what the webview was shown before): raised as [`Input::PromptRaised`] without
    /// an event, knowing the event that showed it: that event raising a request now closed is
    /// not a new prompt, and another event raising a restored open one is an earlier request
    /// of its id, whose settling follows.
    PromptReplayed {
        /// The request as the adapter reads it.
        prompt: Box<Prompt>,
        /// The id of the engine event that raised it.
        event_id: String,
    },
    /// The engine's list of a session's open prompts (after a reconnect or a rebuild): new
    /// ones are raised (each with the event that shows it), open ones it no longer lists
    /// close.
    PromptsListed {
        /// The session.
        session_id: String,
        /// The prompts, each with the event that shows it if it is new.
        prompts: Vec<(Prompt, Option<(EngineEvent, EventClass)>)>,
    },
    /// The engine says a prompt was answered (by this bridge or anyone); `event` is its
    /// event, which goes out whatever the prompt's state.
    PromptSettled {
        /// The session that asked.
        session_id: String,
        /// The request id.
        request_id: String,
        /// The engine event that says so.
        event: Option<Box<(EngineEvent, EventClass)>>,
    },
    /// The session's turn was stopped or failed: its open prompts are withdrawn (the
    /// engine is told to deny the pending ones, see [`crate::Host::poll_withdraw`]).
    PromptsCancelled {
        /// The session.
        session_id: String,
    },
    /// An answer [`crate::Host::begin_answer`] allowed reached the engine with this outcome.
    PromptAnswered {
        /// The session that asked.
        session_id: String,
        /// The request id.
        request_id: String,
        /// How the engine took it.
        outcome: AnswerOutcome,
    },
    /// An answer a previous run of the bridge saved on its way
    /// ([`crate::SavedAnswer`]) was sent again with this outcome: accepted, or refused as not
    /// pending ([`AnswerOutcome::Unknown`]: the engine took the first sending), settles it;
    /// a failure asks the user again.
    PromptResent {
        /// The session that asked.
        session_id: String,
        /// The request id.
        request_id: String,
        /// How the engine took it.
        outcome: AnswerOutcome,
    },
    /// The engine no longer holds a session the host knows (a select found it gone): its
    /// kept view stays showable, read-only, status `ended`, with one notice saying so and how
    /// to go on (a new session). Nothing for a session the host does not know.
    SessionLost {
        /// The session.
        session_id: String,
    },
    /// The engine restarted: every open prompt died with it.
    EngineRestarted,
    /// The engine restarted at the same address and the bridge noticed it late: it already
    /// holds these sessions (created on it since), whose open prompts are its own and stay;
    /// every other open prompt died with the engine.
    EngineRestartedHolding {
        /// The sessions the restarted engine lists.
        sessions: Vec<String>,
    },
    /// The open prompts a previous run of the bridge saved ([`crate::Host::take_saved`]):
    /// shown again with their original ids (each with the event that showed it), as if the
    /// engine had raised them; a prompt open already is not shown twice.
    PromptsRestored(Vec<SavedPrompt>),
    /// Prompts (session, request id) the engine no longer knows (it restarted, or the
    /// session is gone): the open ones close as stale, every view told so.
    PromptsForgotten(Vec<(String, String)>),
    /// The webview's word on workspace trust (`bb.init {workspaceTrusted}`); `--trusted`
    /// ([`crate::HostConfig::trusted`]) cannot be taken back by it.
    Trusted(bool),
    /// The runtime wrote these `bb/events` messages to their webviews: `(tabId, seq)`, each
    /// the last `seq` of that tab written (the id as the messages carry it: shared, not a
    /// copy per message). Moves the tabs' written positions, from which
    /// [`crate::Host::poll_resume`] reports resume positions.
    Written(Vec<(Arc<str>, u64)>),
    /// Events of a session (or of every session, `None`) may have been lost: the current
    /// engine connection goes out again flagged with the gap.
    Gap {
        /// The session, when known.
        session_id: Option<String>,
    },
    /// The engine connection changed.
    Connection(Box<ConnectionPayload>),
}

// An input moves about fifteen times between an engine's stream and the host (the pumps'
// futures, the channel, the service loop): kept this small, a move is a few register moves
// rather than a `memcpy` call. A large new payload goes in a `Box`.
const _: () = assert!(size_of::<Input>() <= 64);

impl Input {
    /// At most this many events go in one input made by [`Input::merge`].
    pub const MERGED_EVENTS: usize = 256;

    /// Merges `next` into `self` when both are events of one session (the merged input
    /// applies as the two did, in the same order: only a batch may split otherwise, as more
    /// events arrived at once) and the result holds at most [`Input::MERGED_EVENTS`]
    /// events; otherwise hands `next` back. An adapter merges what it mapped from events
    /// that arrived together, so each goes to the service loop (and the host core) as one
    /// input.
    pub fn merge(&mut self, next: Input) -> Option<Input> {
        match (self, next) {
            (
                Input::Events { session_id, events },
                Input::Events { session_id: next_id, events: next_events },
            ) if (Arc::ptr_eq(session_id, &next_id) || *session_id == next_id)
                && events.len() + next_events.len() <= Self::MERGED_EVENTS =>
            {
                events.extend(next_events);
                None
            }
            (_, next) => Some(next),
        }
    }

    /// `bb.init` without `lastSeen` on `conn`.
    pub fn ready(conn: ConnId) -> Self {
        Input::WebviewReady { conn, last_seen: BTreeMap::new() }
    }

    /// `bb.visibility` on `conn`.
    pub fn visibility(conn: ConnId, visible: bool) -> Self {
        Input::Visibility { conn, visible }
    }

    /// The engine connection with no session and no gap (`attempt` is the retry count while
    /// connecting).
    pub fn connection(
        status: ConnectionStatus,
        retry_count: Option<u64>,
        last_error: Option<String>,
    ) -> Self {
        Input::Connection(Box::new(connection_payload(status, retry_count, last_error)))
    }

    /// `bb.selectSession` without a tab on `conn`.
    pub fn select(conn: ConnId, session_id: impl Into<String>) -> Self {
        Input::SessionSelected { conn, session_id: session_id.into(), tab_id: None }
    }
}

/// A `bb/connection` payload with no session and no gap; a reconnecting stream's retry
/// count is its attempt number.
pub fn connection_payload(
    status: ConnectionStatus,
    retry_count: Option<u64>,
    last_error: Option<String>,
) -> ConnectionPayload {
    ConnectionPayload {
        status,
        session_id: None,
        retry_count,
        last_error,
        gap_detected: None,
        attempt: retry_count.filter(|_| status == ConnectionStatus::Connecting),
        restarting: None,
        diagnostics: None,
        heartbeat: None,
    }
}

/// Appends `input` to `out`, merged into the last one where [`Input::merge`] can.
pub fn push_merged(out: &mut Vec<Input>, input: Input) {
    let unmerged = match out.last_mut() {
        Some(last) => last.merge(input),
        None => Some(input),
    };
    if let Some(input) = unmerged {
        out.push(input);
    }
}
