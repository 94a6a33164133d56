//! `bb-sidecar --engine acp -- <agent command…>`: the v1 methods on any ACP agent.
//!
//! One agent per bridge, started at launch through an [`AcpHub`] (and restarted by
//! its `life` module after a crash). `bb.createSession` → `session/new` (then the remembered config
//! options and the params' `model` / `permissionMode` through `session/set_config_option`);
//! `bb.selectSession` of a session not open here → `session/resume` (preferred: no replay)
//! or `session/load`; `bb.sendMessage` → `session/prompt` (answered at once, the turn runs
//! in the background and streams; a message sent while the session's turn runs waits in the
//! bridge and is sent when that turn ends, as ACP runs one prompt per session at a time);
//! `bb.stop` → `session/cancel` of the running turn (pending permissions and questions
//! answered `cancelled`, terminals killed; the prompts queued behind it withdrawn, named in
//! a `prompts_withdrawn` event); `bb.deleteSession` → `session/close` +
//! `session/delete` when the agent offers delete, `not_supported` otherwise;
//! `bb.approvePermission` → the answer to the agent's `session/request_permission` (or to the
//! bridge's own question before an agent's write) once the host allowed it (the host owns
//! every prompt and the trust gate: the adapter raises each request as a prompt saying what
//! it lets the agent do); `bb.listSessions` → the sessions this bridge opened, then those the
//! agent's `session/list` names for the workspace; `bb.command` → its `commands` module.
//! Everything else is `not_supported`.
//!
//! Events: every `session/update` is one event whose `type` is its `sessionUpdate` kind
//! (payload = the update); the bridge adds the events listed in its `events` module and
//! `request_permission {requestId, toolCall, options}`, `permission_settled {requestId,
//! outcome}`. Ids are `acp-<n>`, counting per bridge. `bb_normalize::classify_acp` gives
//! their classes.
//!
//! Decisions map onto the offered options by kind: `allow_once` → `allow_once`,
//! `allow_rule` → `allow_always` (else `allow_once`), `deny` → `reject_once` (else
//! `reject_always`); a prompt the host withdraws is answered `cancelled` (a stopped turn)
//! or with the reject option (expired). The request's kind for trust comes from the tool
//! call's `kind`: `read`, `search`, `think` are reads, `fetch` reaches the network; `edit`,
//! `delete`, `move` write (the paths are its locations and raw input's paths); `execute`
//! runs a command; anything else is unknown (needs trust). Elicitations are question
//! prompts. The trust that gates an agent's own writes and terminals is the host's, as the
//! runtime reports it ([`EngineAdapter::trust_changed`]). A child session an agent
//! announces (`subagent_update`) is listed with its parent, so its prompts show on the
//! parent's tab.

mod commands;
pub(crate) mod config;
mod events;
mod life;
mod queue;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use async_trait::async_trait;
use bb_host::{EngineEvents, Input, Prompt, PromptKind, Verdict};
use bb_normalize::EventClass;
use bb_protocol::v1::{
    Capabilities, CommandParams, CommandResult, CreateSessionParams, EngineEvent, EngineInfo,
    EngineKind, EngineStatus, InitResult, ListSessionsResult, SendMessageParams, SendMessageResult,
    SessionAck, SessionParams, SessionSummary,
};
use bb_protocol::ws::{
    AcpConnectParams, AcpPermissionReplyParams, AcpRequestId, AcpSessionCancelParams,
    AcpSessionLoadParams, AcpSessionNewParams, AcpSessionParams, PermissionOutcome,
};
use bb_service::{
    AnswerReason, EngineAdapter, EngineError, InputReceiver, InputSender, PromptAnswer,
    input_channel,
};
use bb_supervisor::ProcessSpawner;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

pub use config::CONFIG_FILE;
pub use events::HELD_OUTPUT;
pub use queue::QUEUE_FILE;

use crate::asks::tool_call_paths;
use crate::caps::Optional;
use crate::gate::TrustFlag;
use crate::{AcpError, AcpEvent, AcpEventKind, AcpHub, LaunchPolicy};

const NAME: &str = "acp";

/// A permission request as the sidebar knows it.
#[derive(Debug, Clone)]
struct Asked {
    request_id: AcpRequestId,
    options: Vec<(String, String)>,
}

#[derive(Debug, Default)]
struct State {
    sessions: Vec<SessionSummary>,
    /// (session, request id as sent to the webview) → the agent's request.
    asked: HashMap<(String, String), Asked>,
    /// What [`events`] tracks of the agent's updates.
    tracked: events::Tracked,
    /// Sessions with a turn on its way (`session/prompt` sent, not answered yet) → the
    /// prompts queued behind it, sent one at a time as each turn ends (ACP runs one prompt
    /// per session at a time).
    turns: HashMap<String, std::collections::VecDeque<String>>,
}

/// What the adapter, its pump and its restarts share.
#[derive(Debug)]
pub(crate) struct Inner {
    hub: Arc<AcpHub>,
    /// The current connection (a restart replaces it).
    conn: RwLock<String>,
    /// How the agent is started (again).
    connect: AcpConnectParams,
    version: RwLock<String>,
    workspace: PathBuf,
    /// The host's workspace trust, as the runtime reports it: the ACP client's gate for an
    /// agent's writes and terminals.
    trust: TrustFlag,
    state: Mutex<State>,
    updates: InputSender,
    config: config::ConfigMemory,
    life: Mutex<life::Life>,
    seq: AtomicU64,
    /// Where the prompts queued behind turns are kept.
    queued: queue::QueueFile,
}

/// The ACP engine adapter.
#[derive(Debug)]
pub struct AcpAdapter {
    inner: Arc<Inner>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An [`AcpError`] as the v1 error.
fn engine_error(err: AcpError) -> EngineError {
    match err {
        AcpError::Closed { .. } | AcpError::Spawn { .. } => {
            EngineError::Unavailable(err.to_string())
        }
        AcpError::Agent { .. } => EngineError::Engine(err.to_string()),
        AcpError::NotSupported(what) => EngineError::NotSupported { method: what, engine: NAME },
        other => EngineError::refused(other.code(), other.to_string()),
    }
}

impl Inner {
    /// The current connection id.
    fn conn(&self) -> String {
        self.conn.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// One bridge-made or agent event of a session, with its class from the ACP table.
    fn classed(
        &self,
        session: &str,
        kind: &str,
        mut payload: Map<String, Value>,
    ) -> (EngineEvent, EventClass) {
        let n = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        payload.entry("sessionId").or_insert_with(|| session.into());
        let payload = Value::Object(payload);
        let class = bb_normalize::class::classify_acp(kind, &payload);
        let event = EngineEvent {
            id: format!("acp-{n}").into(),
            event_type: kind.to_owned().into(),
            turn: None,
            ts: None,
            payload: payload.into(),
        };
        (event, class)
    }

    /// One bridge-made or agent event of a session as the host's input.
    fn event(&self, session: &str, kind: &str, payload: Map<String, Value>) -> Input {
        let events = EngineEvents::one(self.classed(session, kind, payload));
        Input::Events { session_id: Arc::from(session), events }
    }

    async fn send(&self, update: Input) {
        let _ = self.updates.send(update).await;
    }

    /// The error a call gets while the agent is down (restarting, or the breaker open).
    fn unavailable(&self) -> Option<EngineError> {
        if let Some(why) = lock_life(&self.life).unavailable() {
            return Some(EngineError::Unavailable(why));
        }
        self.hub.closed_error(&self.conn()).map(engine_error)
    }

    fn known(&self, session: &str) -> bool {
        lock(&self.state).sessions.iter().any(|s| s.session_id == session)
    }

    /// The agent holds no request of `session` any more (its turn ended, the session was
    /// closed or deleted): forgotten here; the host closes those still open.
    fn forgotten(&self, session: &str) -> Input {
        let mut st = lock(&self.state);
        st.asked.retain(|(s, _), _| s != session);
        st.tracked.questions.retain(|(s, _), _| s != session);
        drop(st);
        Input::PromptsListed { session_id: session.to_owned(), prompts: Vec::new() }
    }

    /// Saves the prompts queued behind turns as they are now.
    fn save_queues(&self) {
        self.queued.save(|| {
            let st = lock(&self.state);
            st.turns
                .iter()
                .filter(|(_, q)| !q.is_empty())
                .map(|(s, q)| (s.clone(), q.iter().cloned().collect()))
                .collect()
        });
    }

    async fn forget_prompts(&self, session: &str) {
        self.send(self.forgotten(session)).await;
    }

    /// Makes sure the current connection has the session open: `session/resume` when the
    /// agent offers it, else `session/load`. Adds it to the known sessions.
    async fn ensure_open(&self, session: &str) -> Result<(), EngineError> {
        if let Some(err) = self.unavailable() {
            return Err(err);
        }
        let conn = self.conn();
        if self.hub.session_is_open(&conn, session) {
            return Ok(());
        }
        let (_, loaded) = self
            .hub
            .session_open(AcpSessionLoadParams {
                connection_id: conn,
                session_id: session.to_owned(),
                cwd: Some(self.workspace.display().to_string()),
                mcp_servers: None,
            })
            .await
            .map_err(|e| match e {
                AcpError::Agent { .. } if !self.known(session) => {
                    EngineError::SessionNotFound(session.to_owned())
                }
                other => engine_error(other),
            })?;
        tracing::info!(session, how = if loaded { "load" } else { "resume" }, "ACP session opened");
        let summary = SessionSummary {
            session_id: session.to_owned(),
            status: Some("idle".to_owned()),
            ..SessionSummary::default()
        };
        let fresh = {
            let mut st = lock(&self.state);
            match st.sessions.iter_mut().find(|s| s.session_id == session) {
                Some(s) => {
                    s.status = Some("idle".to_owned());
                    None
                }
                None => {
                    st.sessions.push(summary.clone());
                    Some(summary)
                }
            }
        };
        if let Some(summary) = fresh {
            self.send(Input::SessionUpserted(Box::new(summary))).await;
        }
        Ok(())
    }
}

fn lock_life(life: &Mutex<life::Life>) -> MutexGuard<'_, life::Life> {
    life.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl AcpAdapter {
    /// Starts the agent (`command[0]` with the rest as arguments, cwd = the workspace) and
    /// `initialize`s it; returns the adapter and its inputs. The config options a user picks
    /// are remembered under `state_dir` (not at all when `None`).
    pub async fn start(
        policy: LaunchPolicy,
        spawner: Arc<dyn ProcessSpawner>,
        command: Vec<String>,
        state_dir: Option<PathBuf>,
    ) -> Result<(Arc<Self>, InputReceiver), EngineError> {
        let Some((program, args)) = command.split_first() else {
            return Err(EngineError::InvalidRequest(
                "--engine acp needs the agent command after `--`, e.g. `-- kilo acp`".to_owned(),
            ));
        };
        let workspace = policy.workspace.clone();
        let trust = TrustFlag::new(policy.trusted);
        let (hub, events) = AcpHub::with_gate(policy, spawner, Arc::new(trust.clone()));
        let hub = Arc::new(hub);
        let connect = AcpConnectParams {
            command: program.clone(),
            args: Some(args.to_vec()),
            env: None,
            cwd: None,
        };
        let info = hub.connect(connect.clone()).await.map_err(engine_error)?;
        tracing::info!(agent = %info.agent_info.name, version = %info.agent_info.version, "ACP agent ready");
        let (updates, rx) = input_channel();
        let inner = Arc::new(Inner {
            queued: queue::QueueFile::new(state_dir.as_deref()),
            config: config::ConfigMemory::load(state_dir, &info.agent_info.name),
            hub,
            conn: RwLock::new(info.id),
            connect,
            version: RwLock::new(info.agent_info.version),
            workspace,
            trust,
            state: Mutex::default(),
            updates,
            life: Mutex::new(life::Life::default()),
            seq: AtomicU64::new(0),
        });
        // The agent answered `initialize`: `bb/connection` says so (a page stops saying
        // it is connecting).
        inner
            .send(Input::connection(bb_protocol::v1::ConnectionStatus::Connected, None, None))
            .await;
        // What a killed run left queued is named, not sent (the turn it waited behind died
        // with that run's agent).
        for (session, prompts) in inner.queued.take() {
            commands::withdrawn(&inner, &session, prompts, "a restart of the bridge").await;
        }
        tokio::spawn(pump(events, inner.clone()));
        Ok((Arc::new(Self { inner }), rx))
    }

    fn known(&self, session: &str) -> Result<(), EngineError> {
        if self.inner.known(session) {
            Ok(())
        } else {
            Err(EngineError::SessionNotFound(session.to_owned()))
        }
    }
}

#[async_trait]
impl EngineAdapter for AcpAdapter {
    fn name(&self) -> &'static str {
        NAME
    }

    fn kind(&self) -> EngineKind {
        EngineKind::Acp
    }

    async fn init(&self) -> Result<InitResult, EngineError> {
        let i = &self.inner;
        let status = match i.hub.status(&i.conn()) {
            Ok(bb_protocol::ws::AcpConnectionStatus::Ready) => EngineStatus::Ready,
            _ => EngineStatus::Failed,
        };
        let version = i.version.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        Ok(InitResult {
            protocol_version: 1,
            engine: EngineInfo { kind: EngineKind::Acp, status, version: Some(version) },
            capabilities: Capabilities {
                sessions: true,
                permissions: true,
                commands: true,
                ..Capabilities::default()
            },
            folders: None,
        })
    }

    async fn create_session(
        &self,
        params: CreateSessionParams,
    ) -> Result<SessionSummary, EngineError> {
        let i = &self.inner;
        if params.config_path.is_some() {
            return Err(EngineError::refused(
                "invalid_params",
                "the acp engine takes no configPath at session creation",
            ));
        }
        if let Some(err) = i.unavailable() {
            return Err(err);
        }
        let conn = i.conn();
        let (id, answer) = i
            .hub
            .session_new_full(AcpSessionNewParams {
                connection_id: conn.clone(),
                cwd: Some(i.workspace.display().to_string()),
                mcp_servers: None,
            })
            .await
            .map_err(engine_error)?;
        let summary = SessionSummary {
            session_id: id.clone(),
            title: params.task,
            status: Some("idle".to_owned()),
            ..SessionSummary::default()
        };
        lock(&i.state).sessions.push(summary.clone());
        i.send(Input::SessionUpserted(Box::new(summary.clone()))).await;
        let options = answer.get("configOptions").and_then(Value::as_array).cloned();
        if let Err(err) = commands::configure_new(
            i,
            &id,
            options.as_deref().unwrap_or_default(),
            params.model.as_deref(),
            params.permission_mode.as_deref(),
        )
        .await
        {
            // A session the user's choice cannot be applied to is not handed out.
            let _ = i
                .hub
                .session_close_local(&AcpSessionParams {
                    connection_id: conn,
                    session_id: id.clone(),
                })
                .await;
            lock(&i.state).sessions.retain(|s| s.session_id != id);
            i.send(Input::SessionRemoved(id)).await;
            return Err(err);
        }
        Ok(summary)
    }

    async fn list_sessions(&self) -> Result<ListSessionsResult, EngineError> {
        let i = &self.inner;
        let mut sessions = lock(&i.state).sessions.clone();
        if i.unavailable().is_some() {
            return Ok(ListSessionsResult { sessions });
        }
        let listed = i.hub.list_sessions(&i.conn(), None).await.map_err(engine_error)?;
        for info in listed.into_iter().flatten() {
            let Some(id) = info.get("sessionId").and_then(Value::as_str) else { continue };
            if sessions.iter().any(|s| s.session_id == id) {
                continue;
            }
            sessions.push(SessionSummary {
                session_id: id.to_owned(),
                title: info.get("title").and_then(Value::as_str).map(str::to_owned),
                ..SessionSummary::default()
            });
        }
        Ok(ListSessionsResult { sessions })
    }

    async fn select_session(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        self.inner.ensure_open(&params.session_id).await?;
        Ok(SessionAck { session_id: params.session_id })
    }

    async fn delete_session(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        let i = &self.inner;
        if let Some(err) = i.unavailable() {
            return Err(err);
        }
        let conn = i.conn();
        if !i.hub.offers(&conn, Optional::Delete) {
            return Err(engine_error(AcpError::NotSupported(Optional::Delete.method())));
        }
        let session = params.session_id.clone();
        if i.hub.session_is_open(&conn, &session) {
            i.hub
                .session_close_local(&AcpSessionParams {
                    connection_id: conn.clone(),
                    session_id: session.clone(),
                })
                .await
                .map_err(engine_error)?;
        }
        i.hub
            .session_delete(AcpSessionParams { connection_id: conn, session_id: session.clone() })
            .await
            .map_err(engine_error)?;
        i.forget_prompts(&session).await;
        {
            let mut st = lock(&i.state);
            st.sessions.retain(|s| s.session_id != session);
            // Prompts queued behind its turn go with it (the turn itself ends with the
            // session).
            if let Some(queue) = st.turns.get_mut(&session) {
                queue.clear();
            }
        }
        i.save_queues();
        i.send(Input::SessionRemoved(session.clone())).await;
        Ok(SessionAck { session_id: session })
    }

    async fn send_message(
        &self,
        params: SendMessageParams,
    ) -> Result<SendMessageResult, EngineError> {
        let i = &self.inner;
        if params.attachment_ids.as_ref().is_some_and(|a| !a.is_empty()) {
            return Err(EngineError::refused(
                "invalid_params",
                "the acp engine takes no attachmentIds",
            ));
        }
        self.known(&params.session_id)?;
        i.ensure_open(&params.session_id).await?;
        commands::prompt(&self.inner, &params.session_id, params.text);
        Ok(SendMessageResult { session_id: params.session_id, message_id: None })
    }

    async fn stop(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        let i = &self.inner;
        self.known(&params.session_id)?;
        if let Some(err) = i.unavailable() {
            return Err(err);
        }
        // The runtime withdraws the session's prompts (each answered `cancelled`); the
        // prompts queued behind the turn are withdrawn too, as Kilo drops its queue.
        commands::withdraw_queued(i, &params.session_id, "bb.stop").await;
        i.hub
            .session_cancel(AcpSessionCancelParams {
                connection_id: i.conn(),
                session_id: params.session_id.clone(),
            })
            .await
            .map_err(engine_error)?;
        Ok(SessionAck { session_id: params.session_id })
    }

    async fn command(&self, params: CommandParams) -> Result<CommandResult, EngineError> {
        commands::command(&self.inner, params).await
    }

    /// The agent is a child of this bridge: a request a previous run of the bridge saved
    /// died with that run's agent, whatever its id.
    async fn forgotten(&self, prompts: Vec<Prompt>) -> Vec<Prompt> {
        prompts
    }

    fn closes_sessions(&self) -> bool {
        true
    }

    async fn answer(&self, answer: PromptAnswer) -> Result<(), EngineError> {
        let i = &self.inner;
        let session = answer.prompt.session_id.clone();
        let key = (session.clone(), answer.prompt.request_id.clone());
        if answer.prompt.kind == PromptKind::Question {
            return commands::answer_question(i, &key, answer.verdict, answer.reason).await;
        }
        let asked = lock(&i.state).asked.get(&key).cloned();
        let Some(asked) = asked else {
            // A withdrawal of a request the agent no longer holds has nothing to tell.
            if answer.reason != AnswerReason::User {
                return Ok(());
            }
            return Err(EngineError::refused(
                "permission_not_pending",
                format!("no permission request {} is waiting in session {session}", key.1),
            ));
        };
        let outcome = match (answer.verdict, answer.remember, answer.reason) {
            // A stopped turn's requests are cancelled, as ACP asks of a cancel.
            (_, _, AnswerReason::Cancelled) => PermissionOutcome::Cancelled,
            (verdict, remember, _) => {
                let wanted: &[&str] = match (verdict, remember) {
                    (Verdict::Deny, _) => &["reject_once", "reject_always"],
                    (_, true) => &["allow_always", "allow_once"],
                    (_, false) => &["allow_once"],
                };
                let option = pick_option(&asked.options, wanted).ok_or_else(|| {
                    let message = format!("the agent offered no option of {wanted:?}");
                    EngineError::refused("invalid_params", message)
                })?;
                PermissionOutcome::Selected { option_id: option }
            }
        };
        let result = i
            .hub
            .permission_reply(AcpPermissionReplyParams {
                connection_id: i.conn(),
                session_id: Some(session),
                request_id: asked.request_id,
                outcome,
            })
            .await;
        match result {
            Ok(()) => {
                lock(&i.state).asked.remove(&key);
                Ok(())
            }
            Err(err @ AcpError::PermissionNotPending(_)) => {
                lock(&i.state).asked.remove(&key);
                Err(EngineError::refused("permission_not_pending", err.to_string()))
            }
            Err(err) => Err(engine_error(err)),
        }
    }

    fn answers_prompt(&self, params: &CommandParams) -> Option<(String, Verdict)> {
        commands::answers_prompt(params)
    }

    fn trust_changed(&self, trusted: bool) {
        self.inner.trust.set(trusted);
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let i = &self.inner;
        let c = i.hub.counters(&i.conn());
        let unrouted = lock(&i.state).tracked.unrouted;
        vec![
            ("acp.updates_dropped_after_close", c.dropped_after_close),
            ("acp.fs.read_count", c.fs_reads),
            ("acp.fs.write_count", c.fs_writes),
            ("acp.fs.refused_count", c.fs_refused),
            ("acp.terminal.count", c.terminals),
            ("acp.terminal.refused_count", c.terminals_refused),
            ("acp.elicitation_count", c.elicitations),
            ("acp.restart_count", lock_life(&i.life).restarts),
            ("events.unrouted_count", unrouted),
        ]
    }

    async fn shutdown(&self) {
        lock_life(&self.inner.life).shutting_down = true;
        self.inner.hub.close_all().await;
    }
}

/// The first offered option of the `wanted` kinds, in that order.
fn pick_option(options: &[(String, String)], wanted: &[&str]) -> Option<String> {
    wanted.iter().find_map(|k| options.iter().find(|(_, kind)| kind == k).map(|(id, _)| id.clone()))
}

/// The prompt a permission request raises: what approving would let the agent do (from the
/// tool call's `kind`) and the paths it names.
fn prompt(session: &str, request: &str, tool_call: &Value) -> Prompt {
    let kind = match tool_call.get("kind").and_then(Value::as_str) {
        Some("read" | "search" | "think") => PromptKind::Read,
        Some("fetch") => PromptKind::Network,
        Some("edit" | "delete" | "move") => PromptKind::Write,
        Some("execute") => PromptKind::Exec,
        _ => PromptKind::Unknown,
    };
    let mut prompt = Prompt::new(session, request, kind);
    prompt.paths = tool_call_paths(tool_call);
    prompt
}

fn request_key(id: &AcpRequestId) -> String {
    match id {
        AcpRequestId::Text(s) => s.clone(),
        AcpRequestId::Number(n) => n.to_string(),
    }
}

/// Hub events → host inputs, in order.
async fn pump(mut events: mpsc::Receiver<AcpEvent>, inner: Arc<Inner>) {
    while let Some(ev) = events.recv().await {
        let mut out = Vec::new();
        match ev.kind {
            AcpEventKind::PermissionRequest { session_id, request_id, tool_call, options } => {
                let key = request_key(&request_id);
                let offered: Vec<(String, String)> = options
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|o| {
                        Some((
                            o.get("optionId")?.as_str()?.to_owned(),
                            o.get("kind")?.as_str()?.to_owned(),
                        ))
                    })
                    .collect();
                lock(&inner.state).asked.insert(
                    (session_id.clone(), key.clone()),
                    Asked { request_id, options: offered },
                );
                let raised = prompt(&session_id, &key, &tool_call);
                let payload = Map::from_iter([
                    ("requestId".to_owned(), json!(key)),
                    ("toolCall".to_owned(), tool_call),
                    ("options".to_owned(), options),
                ]);
                // The host shows it once (a repeat is dropped there).
                let shows = inner.classed(&session_id, "request_permission", payload);
                out.push(Input::PromptRaised {
                    prompt: Box::new(raised),
                    event: Some(Box::new(shows)),
                });
            }
            AcpEventKind::PermissionSettled { session_id, request_id, outcome } => {
                let key = request_key(&request_id);
                lock(&inner.state).asked.remove(&(session_id.clone(), key.clone()));
                let payload = Map::from_iter([
                    ("requestId".to_owned(), json!(key.clone())),
                    ("outcome".to_owned(), outcome),
                ]);
                let says = inner.classed(&session_id, "permission_settled", payload);
                out.push(Input::PromptSettled {
                    session_id,
                    request_id: key,
                    event: Some(Box::new(says)),
                });
            }
            AcpEventKind::State { session_id: None, detail, .. } => {
                // The connection closed: a crash of the current agent restarts it.
                let reason =
                    detail.get("reason").and_then(Value::as_str).unwrap_or("closed").to_owned();
                if ev.connection_id == inner.conn() {
                    out.extend(life::agent_gone(&inner, &reason));
                }
            }
            other => out.extend(events::map(&inner, other)),
        }
        for update in out {
            if inner.updates.send(update).await.is_err() {
                return;
            }
        }
    }
}
