//! The engine adapter trait every engine implements (one method per v1 method, and the one
//! way an answer to a prompt reaches the engine), its typed error with stable wire codes,
//! and the input channel an engine reports through: adapters hand the host core its
//! [`Input`](bb_host::Input)s.

use std::fmt;

use async_trait::async_trait;
use bb_host::{Prompt, Verdict};
use bb_protocol::v1::{
    CommandParams, CommandResult, CreateSessionParams, DownloadArtifactParams,
    DownloadArtifactResult, EngineKind, FileSnippetResult, InitResult, ListFilesParams,
    ListFilesResult, ListSessionsResult, OpenDiffParams, ReadFileSnippetParams, SendMessageParams,
    SendMessageResult, SessionAck, SessionParams, SessionSummary, V1Error,
};

pub use crate::inputs::{
    INPUT_CAPACITY, INPUT_EVENT_BUDGET, InputReceiver, InputSender, input_channel,
};

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
    /// The engine did not answer within this deadline (`engine_timeout`).
    #[error(
        "the engine did not answer within {0:?}: it may be overloaded or hung; retry, or restart it"
    )]
    Timeout(std::time::Duration),
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
            EngineError::Timeout(_) => "engine_timeout",
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

/// Why the bridge tells the engine an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerReason {
    /// The user answered.
    User,
    /// Nobody answered in time: the engine is told to deny it.
    Expired,
    /// The turn was stopped: the engine is told to deny it.
    Cancelled,
}

/// An answer the host allowed, for the adapter to carry to the engine.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptAnswer {
    /// The prompt as raised (its own session: a sub-agent's, not its parent's).
    pub prompt: Prompt,
    /// Allow, deny, or (a question) the answers of the `bb.command` that carries them.
    pub verdict: Verdict,
    /// `allow_rule`: remember the rule (`bb.approvePermission`'s `decision`).
    pub remember: bool,
    /// `bb.approvePermission`'s `ruleUpdate`, for `allow_rule`.
    pub rule_update: Option<serde_json::Map<String, serde_json::Value>>,
    /// Why it is told.
    pub reason: AnswerReason,
}

impl PromptAnswer {
    /// A denial the bridge decided (`reason`: expired or cancelled).
    pub fn withdraw(prompt: Prompt, reason: AnswerReason) -> Self {
        Self { prompt, verdict: Verdict::Deny, remember: false, rule_update: None, reason }
    }
}

fn unsupported<T>(engine: &'static str, method: &'static str) -> Result<T, EngineError> {
    Err(EngineError::NotSupported { method, engine })
}

/// One engine behind the bridge. Every v1 method has a method here taking the `bb-protocol`
/// params and returning its result; those an engine lacks default to `not_supported`.
/// Engines report streamed events and state changes as host [`Input`](bb_host::Input)s on the
/// [`InputSender`] they were built with (a constructor returns the adapter together with the
/// matching [`InputReceiver`]); an engine's prompts are raised there too, and the host owns
/// them: `bb.approvePermission` is decided by the host (shown, pending, trust) and only an
/// answer it allows reaches [`EngineAdapter::answer`].
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

    /// `bb.sendMessage`: starts a turn; the reply streams as [`Input::Events`](bb_host::Input::Events).
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

    /// Carries an answer the host allowed (the user's, or a denial the bridge decided: the
    /// prompt expired or its turn was stopped) to the engine. `Err` with the code
    /// `permission_not_pending` when the engine no longer knows the request (it is then
    /// stale); any other error leaves it pending for another answer.
    async fn answer(&self, _answer: PromptAnswer) -> Result<(), EngineError> {
        unsupported(self.name(), "bb.approvePermission")
    }

    /// Of the prompts a previous run of the bridge saved and showed again, the ones the
    /// engine no longer knows (it restarted, the session is gone, or its agent died with that
    /// run): they close as stale. The default knows nothing either way: they stay shown, and
    /// an answer finds out (`permission_not_pending` makes one stale).
    async fn forgotten(&self, _prompts: Vec<Prompt>) -> Vec<Prompt> {
        Vec::new()
    }

    /// The prompt a `bb.command` answers, when it answers one (Kilo's `question.reply`,
    /// `question.reject`): its request id and what the answer says. The host decides it as
    /// it decides `bb.approvePermission`; the command goes to the engine only when allowed.
    fn answers_prompt(&self, _params: &CommandParams) -> Option<(String, Verdict)> {
        None
    }

    /// Whether `bb.command {command: "session.close"}` (a webview closed the session's tab)
    /// closes the session in the engine. When not, the runtime answers it itself
    /// (`{closed: false, reason}`) and the engine is told nothing.
    fn closes_sessions(&self) -> bool {
        false
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

    /// The engine's telemetry counters, by the spec's names (`bb.command metrics` adds them):
    /// Kilo reports `security.out_of_scope_path_attempt_count`,
    /// `credentials.insecure_storage_detected`, the stream events no webview is shown
    /// (`events.unrouted_count`: of no session; `events.malformed_count`: not Kilo events) and
    /// `bridge.rehydrations`. The prompt counters are the host's, for every engine.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// What is wrong with the engine's setup, said in words (Kilo: a credential store
    /// readable by other users); `bb/connection` carries them in its diagnostics.
    fn diagnostics(&self) -> Vec<String> {
        Vec::new()
    }

    /// The host's workspace trust changed (`bb.init {workspaceTrusted}`; at start, what
    /// `--trusted` set). Approvals never ask the adapter: the host decides them. This is for
    /// what the bridge itself does in the workspace on the engine's behalf (an ACP agent's
    /// file writes and terminals through the client), which the host's trust gates too.
    fn trust_changed(&self, _trusted: bool) {}

    /// Stops background work (event streams) before the bridge exits.
    async fn shutdown(&self) {}

    /// Every webview showing `session_id` has been written its events up to and including
    /// `event_id` (the host core's resume floor: detached, hidden and slow windows
    /// included); a resume position may move up to here, never further.
    fn delivered(&self, _session_id: &str, _event_id: &str) {}

    /// The runtime reports deliveries ([`EngineAdapter::delivered`]) from now on: a resume
    /// position moves only on them, also before the first one. Called once, when the
    /// service is built.
    fn reports_deliveries(&self) {}
}
