//! The engine adapter trait every engine implements (one method per v1 method), its typed
//! error with stable wire codes, and the update channel an engine reports through.

use std::fmt;

use async_trait::async_trait;
use bb_normalize::EventClass;
use bb_protocol::v1::{
    ApprovePermissionParams, CommandParams, CommandResult, ConnectionStatus, CreateSessionParams,
    DownloadArtifactParams, DownloadArtifactResult, EngineEvent, EngineKind, FileSnippetResult,
    InitResult, ListFilesParams, ListFilesResult, ListSessionsResult, OpenDiffParams,
    ReadFileSnippetParams, SendMessageParams, SendMessageResult, SessionAck, SessionParams,
    SessionSummary, V1Error,
};
use tokio::sync::mpsc;

/// Why an engine call failed. Each variant has a stable wire code ([`EngineError::code`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The engine has no such operation (`not_supported`).
    #[error("{method} is not supported by the {engine} engine")]
    NotSupported {
        /// The v1 method, e.g. `bb.command`.
        method: &'static str,
        /// The engine name.
        engine: &'static str,
    },
    /// The session does not exist (`session_not_found`).
    #[error("session not found: {0}")]
    SessionNotFound(String),
    /// The engine rejected the request as malformed (`invalid_request`).
    #[error("the engine rejected the request: {0}")]
    InvalidRequest(String),
    /// The engine refused the bridge's credentials (`engine_auth`); never retried.
    #[error("the engine refused the bridge's credentials (HTTP {status})")]
    Auth {
        /// 401 or 403.
        status: u16,
    },
    /// The engine is not reachable, starting, restarting or gone (`engine_unavailable`).
    #[error("the engine is unavailable: {0}")]
    Unavailable(String),
    /// The engine did not answer in time (`engine_timeout`).
    #[error("the engine did not answer in time")]
    Timeout,
    /// The engine answered with an error or something unexpected (`engine_error`).
    #[error("engine error: {0}")]
    Engine(String),
    /// The bridge refused the call with its own stable code (`permission_not_pending`,
    /// `workspace_untrusted`, `unknown_command`, `invalid_params`, `path_outside_workspace`,
    /// `file_not_found`, `queue_full`, …).
    #[error("{message}")]
    Refused {
        /// The stable wire code.
        code: &'static str,
        /// What happened and what to do next.
        message: String,
    },
}

impl EngineError {
    /// A refusal with the bridge's own code.
    pub fn refused(code: &'static str, message: impl Into<String>) -> Self {
        Self::Refused { code, message: message.into() }
    }

    /// The stable wire code.
    pub fn code(&self) -> &'static str {
        match self {
            EngineError::NotSupported { .. } => "not_supported",
            EngineError::SessionNotFound(_) => "session_not_found",
            EngineError::InvalidRequest(_) => "invalid_request",
            EngineError::Auth { .. } => "engine_auth",
            EngineError::Unavailable(_) => "engine_unavailable",
            EngineError::Timeout => "engine_timeout",
            EngineError::Engine(_) => "engine_error",
            EngineError::Refused { code, .. } => code,
        }
    }

    /// The error as it goes on the wire (`{code, message}`); the message never carries a
    /// secret because no variant holds one.
    pub fn to_wire(&self) -> V1Error {
        V1Error::new(self.code(), self.to_string())
    }
}

/// The connection between the bridge and its engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionUpdate {
    /// Connecting, connected or failed.
    pub status: ConnectionStatus,
    /// Reconnect attempts so far.
    pub retry_count: Option<u64>,
    /// What went wrong last (redacted, human-readable).
    pub last_error: Option<String>,
}

/// What an engine reports on its own, outside request/response.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum EngineUpdate {
    /// The connection to the engine changed.
    Connection(ConnectionUpdate),
    /// Events of one session, in engine order, ids untouched.
    Events {
        /// The engine session id.
        session_id: String,
        /// The events.
        events: Vec<EngineEvent>,
    },
    /// Events of one session as [`EngineUpdate::Events`], each with the class the adapter
    /// decided from what it read of it (the host core does not read it again).
    ClassifiedEvents {
        /// The engine session id.
        session_id: String,
        /// The events and their classes.
        events: Vec<(EngineEvent, EventClass)>,
    },
    /// Events of a session (or of all, `None`) may have been lost (reconnect without replay).
    GapDetected {
        /// The session, when known.
        session_id: Option<String>,
    },
    /// A session was created or changed on the engine.
    SessionUpserted(SessionSummary),
    /// A session was deleted on the engine.
    SessionRemoved(String),
    /// The engine's full session list (after a reconnect or restart).
    SessionsListed(Vec<SessionSummary>),
    /// A session started or finished a turn.
    SessionRunning {
        /// The session.
        session_id: String,
        /// Whether a turn is in progress.
        running: bool,
    },
    /// A session's count of permission requests awaiting an answer.
    PendingPermissions {
        /// The session.
        session_id: String,
        /// How many.
        count: u64,
    },
    /// A session's count of prompts the engine holds queued behind its running turn.
    QueuedPrompts {
        /// The session.
        session_id: String,
        /// How many.
        count: u64,
    },
}

impl EngineUpdate {
    /// At most this many events go in one update made by [`EngineUpdate::merge`].
    pub const MERGED_EVENTS: usize = 256;

    /// Merges `next` into `self` when both are classified events of one session (the merged
    /// update applies as the two did, in the same order: only a batch may split otherwise,
    /// as more events arrived at once) and the result holds at most
    /// [`EngineUpdate::MERGED_EVENTS`] events; otherwise hands `next` back. An adapter
    /// merges what it mapped from events that arrived together, so each goes to the
    /// service loop (and the host core) as one update.
    pub fn merge(&mut self, next: EngineUpdate) -> Result<(), EngineUpdate> {
        match (self, next) {
            (
                EngineUpdate::ClassifiedEvents { session_id, events },
                EngineUpdate::ClassifiedEvents { session_id: next_id, events: next_events },
            ) if *session_id == next_id
                && events.len() + next_events.len() <= Self::MERGED_EVENTS =>
            {
                events.extend(next_events);
                Ok(())
            }
            (_, next) => Err(next),
        }
    }
}

/// Appends `update` to `out`, merged into the last one where [`EngineUpdate::merge`] can.
pub fn push_merged(out: &mut Vec<EngineUpdate>, update: EngineUpdate) {
    let unmerged = match out.last_mut() {
        Some(last) => last.merge(update),
        None => Err(update),
    };
    if let Err(update) = unmerged {
        out.push(update);
    }
}

/// Capacity of an engine's update channel; a full channel applies back-pressure to the
/// engine's event reader rather than dropping events.
pub const UPDATE_CAPACITY: usize = 1024;

/// Sending half of an engine's update channel.
pub type UpdateSender = mpsc::Sender<EngineUpdate>;
/// Receiving half of an engine's update channel, read by the service loop.
pub type UpdateReceiver = mpsc::Receiver<EngineUpdate>;

/// A fresh update channel.
pub fn update_channel() -> (UpdateSender, UpdateReceiver) {
    mpsc::channel(UPDATE_CAPACITY)
}

fn unsupported<T>(engine: &'static str, method: &'static str) -> Result<T, EngineError> {
    Err(EngineError::NotSupported { method, engine })
}

/// One engine behind the bridge. Every v1 method has a method here taking the `bb-protocol`
/// params and returning its result; those an engine lacks default to `not_supported`.
/// Engines report streamed events and state changes on the [`UpdateSender`] they were built
/// with; a constructor returns the adapter together with the matching [`UpdateReceiver`].
#[async_trait]
pub trait EngineAdapter: Send + Sync + fmt::Debug {
    /// Short engine name for errors and logs (`"kilo"`).
    fn name(&self) -> &'static str;

    /// The engine kind reported by `bb.init`.
    fn kind(&self) -> EngineKind;

    /// `bb.init`: engine status, version and capabilities.
    async fn init(&self) -> Result<InitResult, EngineError>;

    /// `bb.createSession`.
    async fn create_session(
        &self,
        params: CreateSessionParams,
    ) -> Result<SessionSummary, EngineError>;

    /// `bb.listSessions`.
    async fn list_sessions(&self) -> Result<ListSessionsResult, EngineError>;

    /// `bb.selectSession`: the host records the selection; engines that need to (e.g. to
    /// open a per-session stream) do so here. Default: the session must exist in
    /// `list_sessions`.
    async fn select_session(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        let listed = self.list_sessions().await?;
        if listed.sessions.iter().any(|s| s.session_id == params.session_id) {
            Ok(SessionAck { session_id: params.session_id })
        } else {
            Err(EngineError::SessionNotFound(params.session_id))
        }
    }

    /// `bb.deleteSession`.
    async fn delete_session(&self, params: SessionParams) -> Result<SessionAck, EngineError>;

    /// `bb.sendMessage`: starts a turn; the reply streams as [`EngineUpdate::Events`].
    /// Returns once the turn started, never at its end: the bridge runs a connection's state
    /// changes one at a time, so a send that waited for the reply would hold back `bb.stop`.
    async fn send_message(
        &self,
        params: SendMessageParams,
    ) -> Result<SendMessageResult, EngineError>;

    /// `bb.stop`: aborts the running turn; the session reaches a terminal state.
    async fn stop(&self, params: SessionParams) -> Result<SessionAck, EngineError>;

    /// `bb.command`.
    async fn command(&self, _params: CommandParams) -> Result<CommandResult, EngineError> {
        unsupported(self.name(), "bb.command")
    }

    /// `bb.approvePermission`.
    async fn approve_permission(
        &self,
        _params: ApprovePermissionParams,
    ) -> Result<SessionAck, EngineError> {
        unsupported(self.name(), "bb.approvePermission")
    }

    /// `bb.listFiles`.
    async fn list_files(&self, _params: ListFilesParams) -> Result<ListFilesResult, EngineError> {
        unsupported(self.name(), "bb.listFiles")
    }

    /// `bb.readFileSnippet`.
    async fn read_file_snippet(
        &self,
        _params: ReadFileSnippetParams,
    ) -> Result<FileSnippetResult, EngineError> {
        unsupported(self.name(), "bb.readFileSnippet")
    }

    /// `bb.openDiff`.
    async fn open_diff(&self, _params: OpenDiffParams) -> Result<SessionAck, EngineError> {
        unsupported(self.name(), "bb.openDiff")
    }

    /// `bb.downloadArtifact`.
    async fn download_artifact(
        &self,
        _params: DownloadArtifactParams,
    ) -> Result<DownloadArtifactResult, EngineError> {
        unsupported(self.name(), "bb.downloadArtifact")
    }

    /// Points the adapter at a (restarted) engine (new URL and credentials) and resumes its
    /// event stream. The endpoint is engine-neutral; an adapter refuses one it cannot speak
    /// to with `invalid_request`. Engines the bridge does not supervise keep the default.
    async fn reconnect(&self, _endpoint: crate::Endpoint) -> Result<(), EngineError> {
        unsupported(self.name(), "reconnect")
    }

    /// Whether the workspace is trusted (from `--trusted` or `bb.init`): while it is not,
    /// approving a request that writes or executes answers `workspace_untrusted`. Engines
    /// without permission requests ignore it.
    fn set_workspace_trusted(&self, _trusted: bool) {}

    /// The engine's telemetry counters, by the spec's names (`bb.command metrics` adds them):
    /// Kilo reports `permissions.prompt_count`, `tools.write.allow_count`,
    /// `tools.write.deny_count`, `security.out_of_scope_path_attempt_count`, and the stream
    /// events no webview is shown: `events.unrouted_count` (of no session) and
    /// `events.malformed_count` (not Kilo events).
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// Stops background work (event streams) before the bridge exits.
    async fn shutdown(&self) {}

    /// The bridge wrote the events of `session_id` up to and including `event_id` to a
    /// webview; a resume position may move up to here, never further.
    fn delivered(&self, _session_id: &str, _event_id: &str) {}
}
