//! Everything the host core reacts to: per-connection inputs (naming a [`ConnId`]) and
//! engine-wide ones.

use std::collections::BTreeMap;

use bb_normalize::EventClass;
use bb_protocol::v1::{ConnectionPayload, EngineEvent, Receive, SessionSummary};

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
    SessionUpserted(SessionSummary),
    /// A session was deleted.
    SessionRemoved(String),
    /// A session started or finished running.
    SessionRunning {
        /// The session.
        session_id: String,
        /// Whether a turn is in progress.
        running: bool,
    },
    /// A session's pending permission requests.
    PendingPermissions {
        /// The session.
        session_id: String,
        /// How many wait for an answer.
        count: u64,
    },
    /// Prompts the engine holds queued behind a session's running turn; shown in that
    /// session's `bb/state` summary as `queuedPrompts` (absent when 0).
    QueuedPrompts {
        /// The session.
        session_id: String,
        /// How many.
        count: u64,
    },
    /// Engine events of one session, in engine order.
    EngineEvents {
        /// The session.
        session_id: String,
        /// The events.
        events: Vec<EngineEvent>,
    },
    /// Engine events of one session, in engine order, each with the class its adapter
    /// decided from what it read of the event (the core does not read it again).
    ClassifiedEvents {
        /// The session.
        session_id: String,
        /// The events and their classes.
        events: Vec<(EngineEvent, EventClass)>,
    },
    /// The engine connection changed.
    Connection(ConnectionPayload),
}

impl Input {
    /// `bb.init` without `lastSeen` on `conn`.
    pub fn ready(conn: ConnId) -> Self {
        Input::WebviewReady { conn, last_seen: BTreeMap::new() }
    }

    /// `bb.visibility` on `conn`.
    pub fn visibility(conn: ConnId, visible: bool) -> Self {
        Input::Visibility { conn, visible }
    }

    /// `bb.selectSession` without a tab on `conn`.
    pub fn select(conn: ConnId, session_id: impl Into<String>) -> Self {
        Input::SessionSelected { conn, session_id: session_id.into(), tab_id: None }
    }
}
