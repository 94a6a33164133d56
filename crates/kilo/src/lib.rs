//! The Kilo CLI server engine, in one crate: its REST client and the router of its one
//! `GET /event` stream ([`client`]), the adapter that serves every v1 method over them and
//! maps the engine's events into host inputs, the supervisor that starts `kilo serve`
//! ([`supervisor`], the runtime's engine starter), and, behind the `testing` feature, the
//! setup the real-Kilo tests share (`testing`).
//!
//! IO contract: network IO to the engine through `bb-engine-client`'s transport; the engine
//! process is spawned through `bb-supervisor`'s spawner port; workspace files are read on the
//! blocking pool.
//!
//! The adapter starts unbound; [`EngineAdapter::reconnect`] binds it to an engine endpoint
//! (the supervisor's freshly started engine, or the URL given with `--engine-url`) and
//! (re)starts the event router. While unbound, calls answer `engine_unavailable` and
//! `bb.init` reports the engine as `starting`.
//!
//! # Choices
//!
//! * **Sessions.** `bb.createSession` takes `model` as `provider/model`, checked against
//!   the engine's `GET /config/providers` (`invalid_params` lists what exists), and sends it
//!   with every prompt of the session; `task` becomes the title and is sent as the first
//!   prompt; `configPath` has no Kilo counterpart and is `invalid_params`.
//! * **`permissionMode`** maps onto the session's Kilo permission rules (`POST /session
//!   {permission: [{permission, pattern: "*", action}]}`): `default` (the engine's
//!   configuration), `ask` (edit and bash ask), `readOnly` (edit and bash denied),
//!   `acceptEdits` (edits allowed, bash asks; needs a trusted workspace, else
//!   `workspace_untrusted`). Anything else is `invalid_params` naming these.
//! * **Prompts.** `bb.sendMessage` sends `attachmentIds` as file parts: each id is a path
//!   inside the workspace, checked like `bb.readFileSnippet`. One prompt runs at a time per
//!   session: a prompt sent while a turn runs is queued by the engine (its
//!   `session.queue.changed` event says so on `bb/events`, and its count reaches the host as
//!   `Input::QueuedPrompts`, the session's `queuedPrompts`); the host keeps the bound
//!   (`queue_full`).
//! * **Permissions and questions** are the host's prompts: the adapter says what each
//!   lets the engine do (`bash`, `shell`, `task` run commands; `edit`, `write`, `patch`,
//!   `multiedit`, `external_directory` write, naming `metadata.filepath`; `read`, `glob`,
//!   `grep`, `list`, `lsp`, `codesearch`, `todoread`, `todowrite` read; `webfetch`,
//!   `websearch` reach the network; a question is a question; any other name is unknown,
//!   which needs trust) and carries the answers the host allows: `allow_once`/`deny`/
//!   `allow_rule` → `once`/`reject`/`always` (`POST /permission/:id/reply`); a question is
//!   answered with `bb.command question.reply {requestId, answers: [[label…]…]}` or
//!   `question.reject {requestId}` (or `bb.approvePermission` with `deny`), which the host
//!   decides first (`EngineAdapter::answers_prompt`). Each answer is bounded by the engine
//!   deadline ([`KiloOptions::engine_timeout`]); a 404 is `permission_not_pending` (the host
//!   makes the request stale), a timeout or 5xx leaves it pending so the user can answer
//!   again. A withdrawal (expired, stopped) is a `reject`.
//! * **`bb.stop`** checks the session exists (Kilo answers `true` to an abort of any id) and
//!   aborts; the host then withdraws the session's open prompts (each pending one comes back
//!   as a `reject` to send).
//! * **Credentials.** At start the engine's credential store (`auth.json` in its data
//!   directory, [`KiloOptions::data_dir`]) is checked ([`credentials`]): readable by its
//!   group or others, it is a warning in the log and in `bb/connection` diagnostics, counted
//!   as `credentials.insecure_storage_detected`; its contents are never read.
//! * **Files.** `bb.listFiles`, `bb.readFileSnippet` and `bb.downloadArtifact` read the
//!   workspace directly (`--workspace`, else the session's directory as the engine reports
//!   it) through `bb-normalize`'s `PathGuard` with the real filesystem as resolver (symlinks
//!   resolved); a path outside is `path_outside_workspace` and counted
//!   (`out_of_scope_path_attempt_count`). File IO runs on the blocking pool.
//! * **Project directory.** With [`KiloOptions::directory`] every request and the event stream
//!   carry `?directory=` (the server's project instance for that folder): a multi-root bridge
//!   runs one adapter per workspace folder on one server, each seeing its folder's sessions and
//!   events only.
//! * **`bb.openDiff`** reads `GET /session/:id/diff` and sends the file's entry as a
//!   bridge-made `bridge.diff` event of the session (`payload: {sessionID, file, patch,
//!   additions, deletions, status}`); a file with no diff is `diff_not_found`.
//! * **`bb.command`**: see [`commands`].
//! * `sync` events are not forwarded: each repeats the previous event under the same id (the
//!   webview would see a duplicate id); their per-session `seq` is checked instead and a jump
//!   reports a gap. Events of no session (`server.*`, instance noise) are not forwarded.
//! * After a reconnect, each session the adapter has touched is rebuilt from REST by the
//!   router; the snapshot reaches the webview as a bridge-made `bb.session.rehydrated` event
//!   (`payload: {sessionID, status, messages, permissions, questions}`, id
//!   `bb-rehydrate-N`) ahead of the live events, permissions and questions raised meanwhile
//!   are shown once (listed to the host, each with its `permission.asked` / `question.asked`
//!   event, id `bb-relisted-<id>`: the host shows those it has not seen),
//!   and every tracked session is flagged with a gap. Requests of sessions the webview never
//!   opened are re-listed from `GET /permission` and `GET /question` too. A restarted
//!   engine's requests died with it (the runtime tells the host). The event stream never
//!   gives up while the engine runs (back-off capped at 5 s, attempts unbounded; only refused
//!   credentials stop it).
//! * Engine error bodies never reach the webview: what goes out is a stable code and a
//!   redacted message capped at 300 characters.

mod answer;
pub mod client;
pub mod commands;
pub mod credentials;
mod errors;
pub(crate) mod events;
mod facts;
pub mod files;
mod flat;
mod ingest;
mod probe;
mod pump;
mod shared;
mod stamp;
pub mod supervisor;
#[cfg(feature = "testing")]
pub mod testing;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::client::{KiloClient, KiloRouterHandle, RouterOptions, Session, spawn_router_into};
use async_trait::async_trait;
use bb_engine_client::sse::SseClient;
use bb_engine_client::transport::{EngineAuth, EngineTransport, HttpOptions, HttpTransport};
use bb_protocol::v1::{
    Capabilities, CommandParams, CommandResult, CreateSessionParams, DownloadArtifactParams,
    DownloadArtifactResult, EngineInfo, EngineKind, EngineStatus, FileSnippetResult, InitResult,
    ListFilesParams, ListFilesResult, ListSessionsResult, OpenDiffParams, ReadFileSnippetParams,
    SendMessageParams, SendMessageResult, SessionAck, SessionParams, SessionSummary,
};

pub use events::TURN_FAILED_EVENT;
pub use ingest::Mapping;
pub use probe::KiloProbe;
pub use pump::{REBUILD_FAILED_EVENT, REHYDRATED_EVENT};

use bb_host::{Prompt, Verdict};
use bb_service::Endpoint;
use bb_service::engine::{
    EngineAdapter, EngineError, InputReceiver, InputSender, PromptAnswer, input_channel,
};
use errors::{checked_session_id, map};
use shared::Shared;

/// Settings of the Kilo adapter.
#[derive(Debug, Clone)]
pub struct KiloOptions {
    /// The workspace root (files, attachments); without it, the session's directory.
    pub workspace: Option<PathBuf>,
    /// The engine project every request and the event stream are scoped to (Kilo's
    /// `?directory=`): one adapter per workspace folder on one shared server. `None`: the
    /// server's own directory.
    pub directory: Option<String>,
    /// Deadline of one answer to the engine (permission or question reply).
    pub engine_timeout: Duration,
    /// The engine's data directory (`$XDG_DATA_HOME/kilo`), where its credential store
    /// `auth.json` lives: checked at start ([`credentials`]); `None`: not checked.
    pub data_dir: Option<PathBuf>,
    /// The runtime the event router and its pump run on; `None` (the bridges): the one
    /// `bind` is called on.
    pub events: Option<tokio::runtime::Handle>,
}

impl Default for KiloOptions {
    /// No workspace, 10 s per answer, no credential store to check, the event path on the
    /// caller's runtime.
    fn default() -> Self {
        Self {
            workspace: None,
            directory: None,
            engine_timeout: Duration::from_secs(10),
            data_dir: None,
            events: None,
        }
    }
}

#[derive(Debug)]
struct Bound {
    client: KiloClient,
    /// The router, with the pump in its task (stopped when dropped).
    router: KiloRouterHandle,
}

/// The Kilo engine adapter.
#[derive(Debug)]
pub struct KiloAdapter {
    updates: InputSender,
    bound: Mutex<Option<Bound>>,
    /// An engine was bound before: the next bind is a restart.
    was_bound: Mutex<bool>,
    shared: Arc<Shared>,
    options: HttpOptions,
    settings: KiloOptions,
    /// What is wrong with the engine's setup, in words (`bb/connection` diagnostics).
    warnings: Mutex<Vec<String>>,
}

fn summary(session: &Session) -> SessionSummary {
    SessionSummary {
        session_id: session.id.clone(),
        title: Some(session.title.clone()).filter(|t| !t.is_empty()),
        status: None,
        // Milliseconds since the epoch fit an f64 exactly for the next 285 000 years.
        updated_at: session.time.updated.map(|ms| ms as f64),
        queued_prompts: None,
        parent_id: session.parent_id.clone().filter(|p| !p.is_empty()),
        pending_permission_count: None,
        folder: None,
    }
}

pub(crate) fn invalid_params(message: impl Into<String>) -> EngineError {
    EngineError::refused("invalid_params", message)
}

impl KiloAdapter {
    /// An unbound adapter without a workspace, and the receiver of its inputs.
    pub fn new() -> (Arc<Self>, InputReceiver) {
        Self::with_options(KiloOptions::default())
    }

    /// An unbound adapter with these settings, and the receiver of its inputs. The engine's
    /// credential store is checked now ([`credentials`]), when the settings name its data dir.
    pub fn with_options(settings: KiloOptions) -> (Arc<Self>, InputReceiver) {
        let (updates, rx) = input_channel();
        let shared = Shared::default();
        let mut warnings = Vec::new();
        if let Some(dir) = &settings.data_dir {
            let found = credentials::check(dir);
            if found.insecure() {
                shared.insecure_storage.store(1, Ordering::Relaxed);
            }
            warnings.extend(found.warning());
        }
        let adapter = Self {
            updates,
            bound: Mutex::new(None),
            was_bound: Mutex::new(false),
            shared: Arc::new(shared),
            options: HttpOptions::default(),
            settings,
            warnings: Mutex::new(warnings),
        };
        (Arc::new(adapter), rx)
    }

    /// `out_of_scope_path_attempt_count`: workspace paths refused so far.
    pub fn out_of_scope_count(&self) -> u64 {
        self.shared.out_of_scope.load(Ordering::Relaxed)
    }

    /// Binds to any transport (tests use in-memory ones) and starts the event router.
    pub fn bind(&self, transport: Arc<dyn EngineTransport>) {
        let client = match &self.settings.directory {
            Some(dir) => KiloClient::new(transport).with_directory(dir.clone()),
            None => KiloClient::new(transport),
        };
        // The router and the pump run where the settings say (`KiloOptions::events`).
        let entered = self.settings.events.as_ref().map(tokio::runtime::Handle::enter);
        // Never gives up while the engine is meant to run; refused credentials still stop it.
        let options = RouterOptions::default();
        let sse = SseClient::new(client.transport().clone(), client.event_request())
            .with_policy(options.policy);
        // A restarted engine's requests died with the old one: the runtime tells the host.
        let restarted = std::mem::replace(&mut *lock(&self.was_bound), true);
        let context =
            pump::PumpContext { shared: self.shared.clone(), client: client.clone(), restarted };
        // The pump runs in the router's task: an update goes from the stream to the host's
        // channel without a channel and a task of its own in between.
        let pump = pump::Pump::new(self.updates.clone(), context);
        let router = spawn_router_into(client.clone(), sse, pump);
        drop(entered);
        for id in self.shared.tracked() {
            router.track(id);
        }
        let bound = Bound { client, router };
        // The previous router and pump stop when dropped.
        *self.lock() = Some(bound);
    }

    fn lock(&self) -> MutexGuard<'_, Option<Bound>> {
        lock(&self.bound)
    }

    fn client(&self) -> Result<KiloClient, EngineError> {
        self.lock().as_ref().map(|b| b.client.clone()).ok_or_else(|| {
            EngineError::Unavailable("the engine is not running (starting or restarting)".into())
        })
    }

    /// Rebuild this session after reconnects.
    fn track(&self, session_id: &str) {
        if self.shared.track(session_id)
            && let Some(bound) = self.lock().as_ref()
        {
            bound.router.track(session_id);
        }
    }

    fn untrack(&self, session_id: &str) {
        self.shared.untrack(session_id);
        if let Some(bound) = self.lock().as_ref() {
            bound.router.untrack(session_id);
        }
    }

    /// Rebuilds a session now (Retry after a failed rebuild).
    fn rehydrate(&self, session_id: &str) -> Result<(), EngineError> {
        match self.lock().as_ref() {
            Some(bound) => {
                bound.router.rehydrate(session_id);
                Ok(())
            }
            None => Err(EngineError::Unavailable("the engine is not running".into())),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[async_trait]
impl EngineAdapter for KiloAdapter {
    fn name(&self) -> &'static str {
        "kilo"
    }

    fn kind(&self) -> EngineKind {
        EngineKind::Kilo
    }

    async fn init(&self) -> Result<InitResult, EngineError> {
        let capabilities = Capabilities {
            sessions: true,
            permissions: true,
            commands: true,
            files: true,
            diffs: true,
            artifacts: true,
            resume: false,
        };
        let (status, version) = match self.client() {
            Err(_) => (EngineStatus::Starting, None),
            Ok(client) => match client.health().await {
                Ok(health) if health.healthy => (EngineStatus::Ready, health.version),
                Ok(health) => (EngineStatus::Reconnecting, health.version),
                // Refused credentials will not heal by retrying: the engine is failed (the
                // reason goes out on `bb/connection`).
                Err(err) => match map(err, None) {
                    EngineError::Auth { .. } => (EngineStatus::Failed, None),
                    _ => (EngineStatus::Reconnecting, None),
                },
            },
        };
        let engine = EngineInfo { kind: EngineKind::Kilo, status, version };
        Ok(InitResult { protocol_version: 1, engine, capabilities, folders: None })
    }

    async fn create_session(
        &self,
        params: CreateSessionParams,
    ) -> Result<SessionSummary, EngineError> {
        let client = self.client()?;
        let session = answer::create_session(self, &client, params).await?;
        Ok(summary(&session))
    }

    async fn list_sessions(&self) -> Result<ListSessionsResult, EngineError> {
        let listed = self.client()?.list_sessions().await.map_err(|e| map(e, None))?;
        let mut sessions: Vec<SessionSummary> = listed.iter().map(summary).collect();
        // Scoped to a project directory (one of several folders): the engine may list other
        // folders' sessions too (projects without git share one), each says its directory.
        if self.settings.directory.is_some() {
            for (s, session) in sessions.iter_mut().zip(&listed) {
                s.folder.clone_from(&session.directory);
            }
        }
        sessions
            .sort_by(|a, b| b.updated_at.unwrap_or(0.0).total_cmp(&a.updated_at.unwrap_or(0.0)));
        Ok(ListSessionsResult { sessions })
    }

    async fn select_session(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        let id = checked_session_id(&params.session_id)?;
        let session = self.client()?.get_session(id).await.map_err(|e| map(e, Some(id)))?;
        self.track(&session.id);
        Ok(SessionAck { session_id: session.id })
    }

    async fn delete_session(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        let id = checked_session_id(&params.session_id)?;
        self.client()?.delete_session(id).await.map_err(|e| map(e, Some(id)))?;
        self.untrack(id);
        self.shared.remove(id);
        Ok(SessionAck { session_id: params.session_id })
    }

    async fn send_message(
        &self,
        params: SendMessageParams,
    ) -> Result<SendMessageResult, EngineError> {
        let client = self.client()?;
        answer::send_message(self, &client, params).await
    }

    async fn stop(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        let client = self.client()?;
        answer::stop(&client, params).await
    }

    async fn command(&self, params: CommandParams) -> Result<CommandResult, EngineError> {
        let client = self.client()?;
        commands::run(self, &client, params).await
    }

    /// The engine lists its open permission requests and questions: a saved one it does not
    /// list is forgotten (answered meanwhile, or the engine restarted). A failed listing
    /// forgets nothing (an answer finds out).
    async fn forgotten(&self, prompts: Vec<Prompt>) -> Vec<Prompt> {
        let Ok(client) = self.client() else { return Vec::new() };
        let (Ok(permissions), Ok(questions)) =
            (client.permissions().await, client.questions().await)
        else {
            return Vec::new();
        };
        let listed = |p: &Prompt| {
            permissions.iter().any(|x| x.id == p.request_id && x.session_id == p.session_id)
                || questions.iter().any(|x| x.id == p.request_id && x.session_id == p.session_id)
        };
        prompts.into_iter().filter(|p| !listed(p)).collect()
    }

    async fn answer(&self, answer: PromptAnswer) -> Result<(), EngineError> {
        let client = self.client()?;
        answer::answer(self, &client, answer).await
    }

    fn answers_prompt(&self, params: &CommandParams) -> Option<(String, Verdict)> {
        commands::answers_prompt(params)
    }

    async fn list_files(&self, params: ListFilesParams) -> Result<ListFilesResult, EngineError> {
        let root = self.root(&params.session_id).await?;
        files::list(self, root, params.path).await
    }

    async fn read_file_snippet(
        &self,
        params: ReadFileSnippetParams,
    ) -> Result<FileSnippetResult, EngineError> {
        let root = self.root(&params.session_id).await?;
        files::snippet(self, root, params).await
    }

    async fn open_diff(&self, params: OpenDiffParams) -> Result<SessionAck, EngineError> {
        let client = self.client()?;
        answer::open_diff(self, &client, params).await
    }

    async fn download_artifact(
        &self,
        params: DownloadArtifactParams,
    ) -> Result<DownloadArtifactResult, EngineError> {
        let root = self.root(&params.session_id).await?;
        files::download(self, root, params.artifact_path).await
    }

    async fn reconnect(&self, endpoint: Endpoint) -> Result<(), EngineError> {
        let Endpoint::Http { base_url, auth } = endpoint else {
            return Err(EngineError::InvalidRequest(
                "a Kilo server is reached over HTTP; this endpoint is not".into(),
            ));
        };
        if matches!(auth, EngineAuth::Bearer(_)) {
            return Err(EngineError::InvalidRequest(
                "a Kilo server takes Basic auth or none, not a bearer token".into(),
            ));
        }
        let transport = HttpTransport::new(&base_url, auth, self.options)
            .map_err(|e| EngineError::InvalidRequest(e.to_string()))?;
        self.bind(Arc::new(transport));
        Ok(())
    }

    fn diagnostics(&self) -> Vec<String> {
        lock(&self.warnings).clone()
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("security.out_of_scope_path_attempt_count", self.out_of_scope_count()),
            (
                "credentials.insecure_storage_detected",
                self.shared.insecure_storage.load(Ordering::Relaxed),
            ),
            ("events.unrouted_count", self.shared.unrouted.load(Ordering::Relaxed)),
            ("events.malformed_count", self.shared.malformed.load(Ordering::Relaxed)),
            ("bridge.rehydrations", self.shared.rehydrated.load(Ordering::Relaxed)),
        ]
    }

    async fn shutdown(&self) {
        self.lock().take();
    }
}

impl KiloAdapter {
    /// The workspace root for a session's files: `--workspace`, else the session's
    /// directory as the engine reports it.
    async fn root(&self, session_id: &str) -> Result<PathBuf, EngineError> {
        let id = checked_session_id(session_id)?;
        let client = self.client()?;
        let session = client.get_session(id).await.map_err(|e| map(e, Some(id)))?;
        match (&self.settings.workspace, session.directory) {
            (Some(root), _) => Ok(root.clone()),
            (None, Some(dir)) => Ok(PathBuf::from(dir)),
            (None, None) => Err(EngineError::refused(
                "workspace_unknown",
                "the workspace root is unknown: start the bridge with --workspace",
            )),
        }
    }
}
