//! The BreadBoard engine, in one crate: its REST client and resumable per-session event
//! stream ([`client`]), and the adapter that serves the v1 methods over the CLI bridge's `/v1`
//! REST routes and maps each session's events into host inputs. Its fake (the offline demo
//! engine) is `bb-fake-engine`.
//!
//! IO contract: network IO to the engine through `bb-engine-client`'s transport; stream
//! positions, downloaded artifacts and diffs are written under the state dir.
//!
//! Each session the webview creates, selects or messages, and each session with a saved
//! position the engine still holds when the bridge starts, gets a stream task
//! ([`crate::client::SessionStream`]): it resumes with the last numeric `seq`
//! (a `seq` jump is refilled, not a loss), reports a real gap once as
//! `bb/connection {gapDetected: true}` plus one transcript `warning` event, and marks every
//! `seq` it hands over. A position moves only past events the runtime confirmed as written
//! (`EngineAdapter::delivered`; see `cursors`) and is saved within a second (at exit in
//! full), so a restarted bridge resumes where the webview stopped (a killed one at most a
//! second's events earlier). A health monitor (`monitor`) lists the
//! engine's sessions at start and after every recovery, resumes saved streams, and marks
//! sessions a restarted engine lost as ended with a reason.
//!
//! Choices: ids are checked before any request (the bridge's own `invalid_request`, the
//! connection untouched); `bb.stop` reports the request, `running` turns false only on the
//! engine's `completion` / `run_finished` (no escalation; the host then withdraws the turn's
//! pending permission requests, which the adapter denies, so a turn blocked on one ends);
//! permission requests are the host's prompts (the adapter says what each lets the engine do
//! from its `category`/`kind`/`tool`, and the files its items name); a decision the engine
//! answers with 409 `no permission request is active` settles the request as stale
//! (`permission_not_pending`); `allow_rule` sends a string rule and its scope; a
//! `task_event` naming a `child_session_id` lists that sub-agent session with its parent
//! and follows its stream; the
//! `user_message` of an input the bridge sent shows the typed text. `bb.createSession` needs a
//! config path (from the request or the bridge's default); `model` is applied with `set_model`
//! right after creation, and a refused model deletes the half-made session. Without a
//! workspace the engine's files routes answer 409, said as "start the bridge with
//! `--workspace`". `bb.deleteSession` sends `stop`,
//! denies pending permissions, then DELETEs with a bounded wait (the engine blocks DELETE
//! while a permission is pending). `bb.openDiff` has no engine route: it sends the latest
//! diff the session's `tool_call`/`tool_result` events showed for the file (inline
//! `diff_preview` / `display.diff_blocks`, or the `artifact_ref` / `detail_artifact` file
//! downloaded) as a `bridge.diff` event. `bb.downloadArtifact` saves the file under the state
//! dir and returns its path.

pub mod client;
pub(crate) mod cursors;
mod errors;
mod ingest;
pub(crate) mod mapping;
mod monitor;
mod pump;
#[cfg(test)]
mod tests;

pub use ingest::Mapping;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::client::{
    BbError, BreadboardClient, CreateSession, PermissionDecision as BbDecision, PermissionRule,
    ReadMode, SnippetOptions, StreamOptions, write_atomic,
};
use async_trait::async_trait;
use bb_engine_client::transport::is_path_segment;
use bb_host::{Clock, Prompt};
use bb_protocol::v1::{
    Capabilities, CommandParams, CommandResult, CreateSessionParams, DownloadArtifactParams,
    DownloadArtifactResult, EngineInfo, EngineKind, EngineStatus, FileEntry, FileKind,
    FileSnippetResult, InitResult, ListFilesParams, ListFilesResult, ListSessionsResult,
    OpenDiffParams, ReadFileSnippetParams, SendMessageParams, SendMessageResult, SessionAck,
    SessionParams, SessionSummary,
};
use serde_json::Value;
use tokio::task::JoinHandle;

use bb_host::{EngineEvents, Input, Verdict};
use bb_service::engine::{
    EngineAdapter, EngineError, InputReceiver, InputSender, PromptAnswer, input_channel,
};
use cursors::Cursors;
use errors::engine_error;
use mapping::{DiffSource, SessionState, SharedStates, diff_event, summary};

/// How the adapter is set up.
#[derive(Debug, Clone)]
pub struct BreadboardConfig {
    /// Config path for sessions created without one.
    pub default_config_path: Option<String>,
    /// Workspace sent with new sessions. Without one the engine answers the files routes
    /// with 409 `workspace not ready` (the bridge says to start it with `--workspace`).
    pub workspace: Option<PathBuf>,
    /// Where cursors, downloaded artifacts and diffs are kept.
    pub state_dir: PathBuf,
    /// Bound on DELETE (the engine awaits the running turn).
    pub delete_timeout: Duration,
    /// Reconnect policy of the event streams.
    pub stream: StreamOptions,
    /// How often `/health` is polled (idle streams are silent, so this is how a dead or
    /// restarted engine is noticed).
    pub health_interval: Duration,
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
            health_interval: Duration::from_secs(2),
        }
    }
}

/// State shared with the stream tasks and the monitor.
#[derive(Debug)]
struct Shared {
    client: BreadboardClient,
    updates: InputSender,
    config: BreadboardConfig,
    cursors: Cursors,
    /// Each session's state, shared by its stream task (which holds its own handle, taken
    /// once) and the REST paths (which look it up). A state removed from the table (the
    /// session dropped or gone, its task aborted) is the session's no more.
    states: Mutex<SharedStates>,
    streams: Mutex<HashMap<String, JoinHandle<()>>>,
    /// Sessions whose stream failed for good: the monitor resumes them while the engine
    /// answers.
    lost: Mutex<HashSet<String>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    /// The session's state, when it has one.
    fn state_of(&self, session: &str) -> Option<Arc<Mutex<SessionState>>> {
        lock(&self.states).get(session).map(Arc::clone)
    }

    /// The session's state, made empty when it has none yet.
    fn state(&self, session: &str) -> Arc<Mutex<SessionState>> {
        let mut states = lock(&self.states);
        // The session's name is copied only the first time.
        if let Some(state) = states.get(session) {
            return Arc::clone(state);
        }
        Arc::clone(states.entry(session.to_owned()).or_default())
    }
}

/// Makes sure the session's event stream runs (a finished one is reopened from its saved
/// position: re-selecting an ended stream resumes, it never replays the history).
fn ensure_stream(shared: &Arc<Shared>, session: &str) {
    let mut streams = lock(&shared.streams);
    if streams.get(session).is_some_and(|h| !h.is_finished()) {
        return;
    }
    let task = tokio::spawn(pump::run(Arc::clone(shared), session.to_owned()));
    streams.insert(session.to_owned(), task);
}

/// The bridge's own check of a session id, before any request: the engine's ids are single
/// path segments (UUIDs). A refusal is the bridge's, and leaves the connection alone.
fn checked(id: &str) -> Result<&str, EngineError> {
    if is_path_segment(id) {
        Ok(id)
    } else {
        let shown: String = id.chars().take(128).collect();
        Err(EngineError::refused(
            "invalid_request",
            format!(
                "the bridge refused the request: {shown:?} is not a session id (ids are single path segments); nothing was sent to the engine"
            ),
        ))
    }
}

/// The BreadBoard engine adapter.
#[derive(Debug)]
pub struct BreadboardAdapter {
    shared: Arc<Shared>,
    monitor: Mutex<Option<JoinHandle<()>>>,
}

impl BreadboardAdapter {
    /// An adapter over `client` and the receiver of its updates. A corrupt cursor file is
    /// replaced (the streams then replay the engine's ring). The health monitor starts at
    /// once: as soon as the engine answers, its sessions are listed and saved streams resume.
    pub fn new(
        client: BreadboardClient,
        config: BreadboardConfig,
        clock: Arc<dyn Clock>,
    ) -> (Arc<Self>, InputReceiver) {
        let (updates, rx) = input_channel();
        let cursors = Cursors::open(&config.state_dir, clock);
        let shared = Arc::new(Shared {
            client,
            updates,
            config,
            cursors,
            states: Mutex::new(SharedStates::default()),
            streams: Mutex::new(HashMap::new()),
            lost: Mutex::new(HashSet::new()),
        });
        let monitor = tokio::spawn(monitor::run(Arc::clone(&shared)));
        (Arc::new(Self { shared, monitor: Mutex::new(Some(monitor)) }), rx)
    }

    /// The REST client (tests).
    pub fn client(&self) -> &BreadboardClient {
        &self.shared.client
    }

    fn ensure_stream(&self, session: &str) {
        ensure_stream(&self.shared, session);
    }

    fn drop_stream(&self, session: &str) {
        if let Some(task) = lock(&self.shared.streams).remove(session) {
            task.abort();
        }
        lock(&self.shared.states).remove(session);
        self.shared.cursors.forget(session);
    }

    async fn summary_of(&self, session: &str) -> Result<SessionSummary, EngineError> {
        let s =
            self.shared.client.get_session(session).await.map_err(|e| engine_error(e, session))?;
        Ok(summary(&s))
    }

    async fn send(&self, update: Input) {
        // The service loop may be gone at exit; nothing else to tell.
        let _ = self.shared.updates.send(update).await;
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
        let path = self.shared.config.state_dir.join(dir).join(session).join(file);
        write_atomic(&path, bytes).map_err(|e| EngineError::Engine(e.to_string()))?;
        Ok(path)
    }

    /// The rule `allow_rule` sends: a string the engine persists, with its scope. From
    /// `ruleUpdate` (`rule`/`pattern`, `scope`), else from the request itself.
    fn rule_for(
        &self,
        session: &str,
        request_id: &str,
        update: Option<&serde_json::Map<String, Value>>,
    ) -> Option<PermissionRule> {
        let text =
            |key: &str| update.and_then(|u| u.get(key)).and_then(Value::as_str).map(str::to_owned);
        let state = self.shared.state_of(session);
        let state = state.as_deref().map(lock);
        let pending = state.as_deref().and_then(|s| s.pending_request(request_id));
        let rule = text("rule")
            .or_else(|| text("pattern"))
            .or_else(|| pending.and_then(|p| p.pattern.clone()))?;
        let scope = text("scope")
            .or_else(|| pending.and_then(|p| p.scope.clone()))
            .unwrap_or_else(|| "project".to_owned());
        Some(PermissionRule { rule, scope })
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
        let (status, version) = match self.shared.client.health().await {
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
            folders: None,
        })
    }

    async fn create_session(
        &self,
        params: CreateSessionParams,
    ) -> Result<SessionSummary, EngineError> {
        let config = &self.shared.config;
        let config_path = params.config_path.or_else(|| config.default_config_path.clone()).ok_or_else(|| {
            EngineError::InvalidRequest(
                "configPath is required by the BreadBoard engine (or start the bridge with --engine-config)".into(),
            )
        })?;
        let request = CreateSession {
            config_path,
            task: params.task.unwrap_or_default(),
            workspace: config.workspace.as_ref().map(|w| w.display().to_string()),
            permission_mode: params.permission_mode,
            ..CreateSession::default()
        };
        let client = &self.shared.client;
        let created = client.create_session(&request).await.map_err(|e| engine_error(e, ""))?;
        let id = created.session_id;
        if let Some(model) = params.model
            && let Err(error) = client.set_model(&id, &model).await
        {
            // The engine created the session before refusing the model: remove the half-made
            // session rather than leave it behind.
            if let Err(cleanup) = client.delete_session(&id, config.delete_timeout).await {
                tracing::warn!(%cleanup, session = %id, "removing a half-made session failed");
            }
            return Err(engine_error(error, &id));
        }
        self.ensure_stream(&id);
        let summary = self.summary_of(&id).await?;
        // The service learns of the session from the result; the list follows it too.
        self.send(Input::SessionUpserted(Box::new(summary.clone()))).await;
        Ok(summary)
    }

    async fn list_sessions(&self) -> Result<ListSessionsResult, EngineError> {
        let listed = self.shared.client.list_sessions().await.map_err(|e| engine_error(e, ""))?;
        let mut sessions: Vec<SessionSummary> = listed.iter().map(summary).collect();
        sessions
            .sort_by(|a, b| b.updated_at.unwrap_or(0.0).total_cmp(&a.updated_at.unwrap_or(0.0)));
        Ok(ListSessionsResult { sessions })
    }

    async fn select_session(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        let summary = self.summary_of(checked(&params.session_id)?).await?;
        self.ensure_stream(&summary.session_id);
        Ok(SessionAck { session_id: summary.session_id })
    }

    async fn delete_session(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        let id = checked(&params.session_id)?.to_owned();
        let client = &self.shared.client;
        let pending: Vec<String> = self
            .shared
            .state_of(&id)
            .map(|s| lock(&s).pending().cloned().collect())
            .unwrap_or_default();
        // Best effort: a finished session refuses both with 409, and DELETE still works.
        let _ = client.stop(&id).await;
        for request_id in pending {
            let _ = client.permission_decision(&id, &request_id, BbDecision::DenyOnce, None).await;
        }
        client
            .delete_session(&id, self.shared.config.delete_timeout)
            .await
            .map_err(|e| engine_error(e, &id))?;
        self.drop_stream(&id);
        self.send(Input::SessionRemoved(id.clone())).await;
        Ok(SessionAck { session_id: id })
    }

    async fn send_message(
        &self,
        params: SendMessageParams,
    ) -> Result<SendMessageResult, EngineError> {
        let id = checked(&params.session_id)?.to_owned();
        self.ensure_stream(&id);
        let attachments = params.attachment_ids.unwrap_or_default();
        lock(&self.shared.state(&id)).sent(&params.text);
        self.shared
            .client
            .send_input(&id, &params.text, &attachments)
            .await
            .map_err(|e| engine_error(e, &id))?;
        Ok(SendMessageResult { session_id: id, message_id: None })
    }

    /// Stop is a request, not a fact: the engine ends an agent turn at its next step
    /// boundary, loses a stop sent before the first step, and does not interrupt a
    /// replay-fed turn. The answer says the request was accepted; `running` turns false
    /// only on the turn's `completion` / `run_finished`.
    async fn stop(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        let id = checked(&params.session_id)?;
        self.shared.client.stop(id).await.map_err(|e| engine_error(e, id))?;
        Ok(SessionAck { session_id: params.session_id })
    }

    async fn command(&self, params: CommandParams) -> Result<CommandResult, EngineError> {
        let id = checked(&params.session_id)?.to_owned();
        let accepted = self
            .shared
            .client
            .command(&id, &params.command, params.args)
            .await
            .map_err(|e| engine_error(e, &id))?;
        Ok(CommandResult { session_id: id, output: Some(accepted.detail) })
    }

    /// An answer the host allowed, as the engine's `permission_decision`. A 409 `no
    /// permission request is active` (a replay-fed request never blocked, or it was answered
    /// elsewhere) is `permission_not_pending`: the host settles the request as stale.
    async fn answer(&self, answer: PromptAnswer) -> Result<(), EngineError> {
        let id = checked(&answer.prompt.session_id)?.to_owned();
        let request_id = answer.prompt.request_id;
        let (decision, rule) = match (answer.verdict, answer.remember) {
            (Verdict::Deny, _) => (BbDecision::DenyOnce, None),
            (_, true) => (
                BbDecision::AllowAlways,
                self.rule_for(&id, &request_id, answer.rule_update.as_ref()),
            ),
            (_, false) => (BbDecision::AllowOnce, None),
        };
        let answered =
            self.shared.client.permission_decision(&id, &request_id, decision, rule.as_ref()).await;
        match answered {
            Ok(_) => Ok(()),
            Err(BbError::Conflict { detail }) if detail.contains("no permission request") => {
                if let Some(state) = self.shared.state_of(&id) {
                    lock(&state).forget(&request_id);
                }
                Err(EngineError::refused(
                    "permission_not_pending",
                    format!(
                        "permission request {request_id} is no longer waiting on the engine (it did not block, e.g. it came from a replay, or it was answered elsewhere); it is settled as stale and nothing was decided"
                    ),
                ))
            }
            Err(error) => Err(engine_error(error, &id)),
        }
    }

    /// A saved request is forgotten when its session is gone from the engine (404: deleted,
    /// or the engine restarted, its sessions live in memory) or its run is over
    /// (`completed`, `failed`, `stopped`). Otherwise it may still block the engine: it
    /// stays shown, and an answer the engine refuses makes it stale.
    async fn forgotten(&self, prompts: Vec<Prompt>) -> Vec<Prompt> {
        let mut gone: std::collections::BTreeMap<String, bool> = Default::default();
        for prompt in &prompts {
            if gone.contains_key(&prompt.session_id) {
                continue;
            }
            let over = match self.shared.client.get_session(&prompt.session_id).await {
                Err(BbError::NotFound { .. }) => true,
                Ok(s) => matches!(s.status.as_str(), "completed" | "failed" | "stopped"),
                Err(_) => false,
            };
            gone.insert(prompt.session_id.clone(), over);
        }
        prompts.into_iter().filter(|p| gone.get(&p.session_id) == Some(&true)).collect()
    }

    async fn list_files(&self, params: ListFilesParams) -> Result<ListFilesResult, EngineError> {
        let id = checked(&params.session_id)?;
        let listed = self
            .shared
            .client
            .list_files(id, &params.path)
            .await
            .map_err(|e| engine_error(e, id))?;
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
        let id = checked(&params.session_id)?;
        let clamp = |n: Option<u64>| n.map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        let options = SnippetOptions {
            head_lines: clamp(params.head_lines),
            tail_lines: clamp(params.tail_lines),
            max_bytes: params.max_bytes,
        };
        let read = self
            .shared
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
        let id = checked(&params.session_id)?.to_owned();
        let path = params.file_path.trim_start_matches("./").to_owned();
        let source = self.shared.state_of(&id).and_then(|s| lock(&s).diffs.get(&path).cloned());
        let (diff, origin) = match source {
            Some(DiffSource::Text(text)) => (text, "tool_event"),
            Some(DiffSource::Artifact(artifact)) => {
                let bytes = self
                    .shared
                    .client
                    .download(&id, &artifact)
                    .await
                    .map_err(|e| engine_error(e, &id))?;
                (String::from_utf8_lossy(&bytes).into_owned(), "artifact")
            }
            None => {
                return Err(EngineError::InvalidRequest(format!(
                    "no diff for {path} in this session's tool events (the engine has no diff route)"
                )));
            }
        };
        let event = diff_event(&path, &diff, origin);
        let events = EngineEvents::one(mapping::classed(event));
        self.send(Input::Events { session_id: Arc::from(id.as_str()), events }).await;
        Ok(SessionAck { session_id: id })
    }

    async fn download_artifact(
        &self,
        params: DownloadArtifactParams,
    ) -> Result<DownloadArtifactResult, EngineError> {
        let id = checked(&params.session_id)?;
        let bytes = self
            .shared
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

    fn delivered(&self, session_id: &str, event_id: &str) {
        self.shared.cursors.delivered(session_id, event_id);
    }

    fn reports_deliveries(&self) {
        self.shared.cursors.strict();
    }

    async fn shutdown(&self) {
        if let Some(task) = lock(&self.monitor).take() {
            task.abort();
        }
        for (_, task) in lock(&self.shared.streams).drain() {
            task.abort();
        }
        self.shared.cursors.close();
    }
}
