//! The BreadBoard engine adapter: the v1 methods over the CLI bridge's `/v1` REST routes, and
//! one resumable event stream per session turned into engine updates.
//!
//! Each session the webview creates, selects or messages gets a stream task
//! ([`bb_engine_client::breadboard::SessionStream`]): it resumes with the last numeric `seq`,
//! reports gaps as `bb/connection {gapDetected: true}` plus a transcript `warning` event, and
//! records every delivered `seq` in the cursor store under the state dir (debounced, atomic),
//! so a restarted bridge resumes where it stopped.
//!
//! Choices: `bb.createSession` needs a config path (from the request or the bridge's default);
//! `model` is applied with `set_model` right after creation. `bb.deleteSession` sends `stop`,
//! denies pending permissions, then DELETEs with a bounded wait (the engine blocks DELETE
//! while a permission is pending). `bb.openDiff` has no engine route: it sends the latest
//! diff the session's `tool_call`/`tool_result` events showed for the file (inline
//! `diff_preview` / `display.diff_blocks`, or the `artifact_ref` / `detail_artifact` file
//! downloaded) as a `bridge.diff` event. `bb.downloadArtifact` saves the file under the state
//! dir and returns its path.

pub(crate) mod mapping;
mod pump;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use bb_engine_client::breadboard::{
    BbError, BreadboardClient, CreateSession, CursorStore, PermissionDecision as BbDecision,
    ReadMode, SnippetOptions, StreamOptions, write_atomic,
};
use bb_engine_client::transport::TransportError;
use bb_host::Clock;
use bb_protocol::v1::{
    ApprovePermissionParams, Capabilities, CommandParams, CommandResult, CreateSessionParams,
    DownloadArtifactParams, DownloadArtifactResult, EngineInfo, EngineKind, EngineStatus,
    FileEntry, FileKind, FileSnippetResult, InitResult, ListFilesParams, ListFilesResult,
    ListSessionsResult, OpenDiffParams, PermissionDecision, ReadFileSnippetParams,
    SendMessageParams, SendMessageResult, SessionAck, SessionParams, SessionSummary,
};
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::engine::{
    EngineAdapter, EngineError, EngineUpdate, UpdateReceiver, UpdateSender, update_channel,
};
use mapping::{DiffSource, States, diff_event, summary};

/// How the adapter is set up.
#[derive(Debug, Clone)]
pub struct BreadboardConfig {
    /// Config path for sessions created without one.
    pub default_config_path: Option<String>,
    /// Workspace sent with new sessions (the engine's own default otherwise).
    pub workspace: Option<PathBuf>,
    /// Where cursors, downloaded artifacts and diffs are kept.
    pub state_dir: PathBuf,
    /// Bound on DELETE (the engine awaits the running turn).
    pub delete_timeout: Duration,
    /// Reconnect policy of the event streams.
    pub stream: StreamOptions,
    /// Cursor writes happen at most once per this interval.
    pub cursor_debounce: Duration,
}

impl BreadboardConfig {
    /// Defaults with this state dir.
    pub fn new(state_dir: PathBuf) -> Self {
        Self {
            default_config_path: None,
            workspace: None,
            state_dir,
            delete_timeout: Duration::from_secs(10),
            stream: StreamOptions::default(),
            cursor_debounce: Duration::from_millis(500),
        }
    }
}

/// State shared with the stream tasks.
#[derive(Debug)]
struct Shared {
    store: Mutex<CursorStore>,
    states: Mutex<States>,
    streams: Mutex<HashMap<String, JoinHandle<()>>>,
    flusher: Mutex<Option<JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The BreadBoard engine adapter.
#[derive(Debug)]
pub struct BreadboardAdapter {
    client: BreadboardClient,
    updates: UpdateSender,
    config: BreadboardConfig,
    clock: Arc<dyn Clock>,
    shared: Arc<Shared>,
}

/// Maps a BreadBoard error to the adapter's error for an operation on `session`.
fn engine_error(error: BbError, session: &str) -> EngineError {
    match error {
        BbError::Unauthorized { status } => EngineError::Auth { status },
        BbError::NotFound { detail } if detail == "session not found" => {
            EngineError::SessionNotFound(session.to_owned())
        }
        BbError::NotFound { detail } | BbError::Conflict { detail } => {
            EngineError::InvalidRequest(detail)
        }
        BbError::InvalidRequest { detail, .. } => EngineError::InvalidRequest(detail),
        BbError::Transport(TransportError::Timeout) => EngineError::Timeout,
        BbError::Transport(TransportError::Connect(e)) => EngineError::Unavailable(e),
        other => EngineError::Engine(other.to_string()),
    }
}

impl BreadboardAdapter {
    /// An adapter over `client` and the receiver of its updates. A corrupt cursor file is
    /// replaced (the streams then replay the engine's ring).
    pub fn new(
        client: BreadboardClient,
        config: BreadboardConfig,
        clock: Arc<dyn Clock>,
    ) -> (Arc<Self>, UpdateReceiver) {
        let store =
            CursorStore::open(&config.state_dir, config.cursor_debounce).unwrap_or_else(|error| {
                tracing::warn!(%error, "starting with no saved stream positions");
                CursorStore::empty(&config.state_dir, config.cursor_debounce)
            });
        let (updates, rx) = update_channel();
        let shared = Arc::new(Shared {
            store: Mutex::new(store),
            states: Mutex::new(States::new()),
            streams: Mutex::new(HashMap::new()),
            flusher: Mutex::new(None),
        });
        let adapter = Arc::new(Self { client, updates, config, clock, shared });
        *lock(&adapter.shared.flusher) = Some(tokio::spawn(pump::flusher(
            Arc::clone(&adapter.shared),
            Arc::clone(&adapter.clock),
            adapter.config.cursor_debounce,
        )));
        (adapter, rx)
    }

    /// The REST client (tests).
    pub fn client(&self) -> &BreadboardClient {
        &self.client
    }

    /// Makes sure the session's event stream runs (a finished one is reopened: Retry).
    fn ensure_stream(&self, session: &str) {
        let mut streams = lock(&self.shared.streams);
        if streams.get(session).is_some_and(|h| !h.is_finished()) {
            return;
        }
        let task = tokio::spawn(pump::run(
            self.client.clone(),
            session.to_owned(),
            Arc::clone(&self.shared),
            self.updates.clone(),
            Arc::clone(&self.clock),
            self.config.stream,
        ));
        streams.insert(session.to_owned(), task);
    }

    fn drop_stream(&self, session: &str) {
        if let Some(task) = lock(&self.shared.streams).remove(session) {
            task.abort();
        }
        lock(&self.shared.states).remove(session);
        lock(&self.shared.store).forget(session, self.clock.now());
    }

    async fn summary_of(&self, session: &str) -> Result<SessionSummary, EngineError> {
        let s = self.client.get_session(session).await.map_err(|e| engine_error(e, session))?;
        Ok(summary(&s))
    }

    fn save(
        &self,
        dir: &str,
        session: &str,
        name: &str,
        bytes: &[u8],
    ) -> Result<PathBuf, EngineError> {
        let file = std::path::Path::new(name)
            .file_name()
            .map_or_else(|| "artifact".into(), |n| n.to_string_lossy().into_owned());
        let path = self.config.state_dir.join(dir).join(session).join(file);
        write_atomic(&path, bytes).map_err(|e| EngineError::Engine(e.to_string()))?;
        Ok(path)
    }
}

#[async_trait]
impl EngineAdapter for BreadboardAdapter {
    fn name(&self) -> &'static str {
        "breadboard"
    }

    fn kind(&self) -> EngineKind {
        EngineKind::Breadboard
    }

    async fn init(&self) -> Result<InitResult, EngineError> {
        let (status, version) = match self.client.health().await {
            Ok(health) => (EngineStatus::Ready, health.engine_version),
            Err(BbError::Unauthorized { status }) => return Err(EngineError::Auth { status }),
            Err(_) => (EngineStatus::Reconnecting, None),
        };
        Ok(InitResult {
            protocol_version: 1,
            engine: EngineInfo { kind: EngineKind::Breadboard, status, version },
            capabilities: Capabilities {
                sessions: true,
                permissions: true,
                commands: true,
                files: true,
                diffs: true,
                artifacts: true,
                resume: true,
            },
        })
    }

    async fn create_session(
        &self,
        params: CreateSessionParams,
    ) -> Result<SessionSummary, EngineError> {
        let config_path = params.config_path.or_else(|| self.config.default_config_path.clone()).ok_or_else(|| {
            EngineError::InvalidRequest(
                "configPath is required by the BreadBoard engine (or start the bridge with --engine-config)".into(),
            )
        })?;
        let request = CreateSession {
            config_path,
            task: params.task.unwrap_or_default(),
            workspace: self.config.workspace.as_ref().map(|w| w.display().to_string()),
            permission_mode: params.permission_mode,
            ..CreateSession::default()
        };
        let created =
            self.client.create_session(&request).await.map_err(|e| engine_error(e, ""))?;
        let id = created.session_id;
        self.ensure_stream(&id);
        if let Some(model) = params.model {
            self.client.set_model(&id, &model).await.map_err(|e| engine_error(e, &id))?;
        }
        let summary = self.summary_of(&id).await?;
        // The service learns of the session from the result; the list follows it too.
        let _ = self.updates.send(EngineUpdate::SessionUpserted(summary.clone())).await;
        Ok(summary)
    }

    async fn list_sessions(&self) -> Result<ListSessionsResult, EngineError> {
        let listed = self.client.list_sessions().await.map_err(|e| engine_error(e, ""))?;
        let mut sessions: Vec<SessionSummary> = listed.iter().map(summary).collect();
        sessions
            .sort_by(|a, b| b.updated_at.unwrap_or(0.0).total_cmp(&a.updated_at.unwrap_or(0.0)));
        Ok(ListSessionsResult { sessions })
    }

    async fn select_session(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        let summary = self.summary_of(&params.session_id).await?;
        self.ensure_stream(&summary.session_id);
        Ok(SessionAck { session_id: summary.session_id })
    }

    async fn delete_session(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        let id = params.session_id;
        let pending: Vec<String> = lock(&self.shared.states)
            .get(&id)
            .map(|s| s.pending().cloned().collect())
            .unwrap_or_default();
        // Best effort: a finished session refuses both with 409, and DELETE still works.
        let _ = self.client.stop(&id).await;
        for request_id in pending {
            let _ =
                self.client.permission_decision(&id, &request_id, BbDecision::DenyOnce, None).await;
        }
        self.client
            .delete_session(&id, self.config.delete_timeout)
            .await
            .map_err(|e| engine_error(e, &id))?;
        self.drop_stream(&id);
        let _ = self.updates.send(EngineUpdate::SessionRemoved(id.clone())).await;
        Ok(SessionAck { session_id: id })
    }

    async fn send_message(
        &self,
        params: SendMessageParams,
    ) -> Result<SendMessageResult, EngineError> {
        let id = params.session_id;
        self.ensure_stream(&id);
        let attachments = params.attachment_ids.unwrap_or_default();
        self.client
            .send_input(&id, &params.text, &attachments)
            .await
            .map_err(|e| engine_error(e, &id))?;
        Ok(SendMessageResult { session_id: id, message_id: None })
    }

    async fn stop(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        self.client
            .stop(&params.session_id)
            .await
            .map_err(|e| engine_error(e, &params.session_id))?;
        Ok(SessionAck { session_id: params.session_id })
    }

    async fn command(&self, params: CommandParams) -> Result<CommandResult, EngineError> {
        let id = params.session_id;
        let accepted = self
            .client
            .command(&id, &params.command, params.args)
            .await
            .map_err(|e| engine_error(e, &id))?;
        Ok(CommandResult { session_id: id, output: Some(accepted.detail) })
    }

    async fn approve_permission(
        &self,
        params: ApprovePermissionParams,
    ) -> Result<SessionAck, EngineError> {
        let id = params.session_id;
        let (decision, rule) = match params.decision {
            PermissionDecision::AllowOnce => (BbDecision::AllowOnce, None),
            PermissionDecision::Deny => (BbDecision::DenyOnce, None),
            PermissionDecision::AllowRule => {
                (BbDecision::AllowAlways, params.rule_update.map(Value::Object))
            }
        };
        self.client
            .permission_decision(&id, &params.request_id, decision, rule)
            .await
            .map_err(|e| engine_error(e, &id))?;
        Ok(SessionAck { session_id: id })
    }

    async fn list_files(&self, params: ListFilesParams) -> Result<ListFilesResult, EngineError> {
        let id = &params.session_id;
        let listed =
            self.client.list_files(id, &params.path).await.map_err(|e| engine_error(e, id))?;
        let entries = listed
            .into_iter()
            .map(|e| FileEntry {
                name: e.path.rsplit('/').next().unwrap_or(&e.path).to_owned(),
                kind: match e.kind.as_str() {
                    "directory" => FileKind::Dir,
                    "file" => FileKind::File,
                    _ => FileKind::Other,
                },
                size: e.size,
                path: e.path,
            })
            .collect();
        Ok(ListFilesResult { path: params.path, entries })
    }

    async fn read_file_snippet(
        &self,
        params: ReadFileSnippetParams,
    ) -> Result<FileSnippetResult, EngineError> {
        let id = &params.session_id;
        let clamp = |n: Option<u64>| n.map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        let options = SnippetOptions {
            head_lines: clamp(params.head_lines),
            tail_lines: clamp(params.tail_lines),
            max_bytes: params.max_bytes,
        };
        let read = self
            .client
            .read_file(id, &params.path, ReadMode::Snippet, options)
            .await
            .map_err(|e| engine_error(e, id))?;
        Ok(FileSnippetResult {
            path: read.path,
            content: read.content,
            truncated: read.truncated,
            total_bytes: read.total_bytes,
        })
    }

    async fn open_diff(&self, params: OpenDiffParams) -> Result<SessionAck, EngineError> {
        let id = params.session_id;
        let path = params.file_path.trim_start_matches("./").to_owned();
        let source = lock(&self.shared.states).get(&id).and_then(|s| s.diffs.get(&path).cloned());
        let (diff, origin) = match source {
            Some(DiffSource::Text(text)) => (text, "tool_event"),
            Some(DiffSource::Artifact(artifact)) => {
                let bytes =
                    self.client.download(&id, &artifact).await.map_err(|e| engine_error(e, &id))?;
                (String::from_utf8_lossy(&bytes).into_owned(), "artifact")
            }
            None => {
                return Err(EngineError::InvalidRequest(format!(
                    "no diff for {path} in this session's tool events (the engine has no diff route)"
                )));
            }
        };
        let event = diff_event(&path, &diff, origin);
        let _ = self
            .updates
            .send(EngineUpdate::Events { session_id: id.clone(), events: vec![event] })
            .await;
        Ok(SessionAck { session_id: id })
    }

    async fn download_artifact(
        &self,
        params: DownloadArtifactParams,
    ) -> Result<DownloadArtifactResult, EngineError> {
        let id = &params.session_id;
        let bytes = self
            .client
            .download(id, &params.artifact_path)
            .await
            .map_err(|e| engine_error(e, id))?;
        let saved = self.save("artifacts", id, &params.artifact_path, &bytes)?;
        Ok(DownloadArtifactResult {
            artifact_path: params.artifact_path,
            saved_path: Some(saved.display().to_string()),
        })
    }

    async fn shutdown(&self) {
        for (_, task) in lock(&self.shared.streams).drain() {
            task.abort();
        }
        if let Some(task) = lock(&self.shared.flusher).take() {
            task.abort();
        }
        if let Err(error) = lock(&self.shared.store).flush() {
            tracing::warn!(%error, "saving stream positions failed");
        }
    }
}
