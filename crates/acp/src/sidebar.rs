//! `bb-sidecar --engine acp -- <agent command…>`: the v1 methods on any ACP agent.
//!
//! One agent per bridge, started at launch through an [`AcpHub`] (and restarted by
//! its `life` module after a crash). `bb.createSession` → `session/new` (then the remembered config
//! options and the params' `model` / `permissionMode` through `session/set_config_option`);
//! `bb.selectSession` of a session not open here → `session/resume` (preferred: no replay)
//! or `session/load`; `bb.sendMessage` → `session/prompt` (answered at once, the turn runs
//! in the background and streams); `bb.stop` → `session/cancel` (pending permissions and
//! questions answered `cancelled`, terminals killed); `bb.deleteSession` → `session/close` +
//! `session/delete` when the agent offers delete, `not_supported` otherwise;
//! `bb.approvePermission` → the answer to the agent's `session/request_permission` (or to the
//! bridge's own question before an agent's write), through the runtime's permission table
//! and workspace trust (`bb_service::permits`); `bb.listSessions` → the sessions this bridge
//! opened, then those the agent's `session/list` names for the workspace; `bb.command` →
//! its `commands` module. Everything else is `not_supported`.
//!
//! Events: every `session/update` is one event whose `type` is its `sessionUpdate` kind
//! (payload = the update); the bridge adds the events listed in its `events` module and
//! `request_permission {requestId, toolCall, options}`, `permission_settled {requestId,
//! outcome}`. Ids are `acp-<n>`, counting per bridge. `bb_normalize::classify_acp` gives
//! their classes.
//!
//! Decisions map onto the offered options by kind: `allow_once` → `allow_once`,
//! `allow_rule` → `allow_always` (else `allow_once`), `deny` → `reject_once` (else
//! `reject_always`). The request's kind for trust comes from the tool call's `kind`: `read`,
//! `search`, `fetch`, `think` are reads; `edit`, `delete`, `move` writes; `execute` runs a
//! command; anything else is treated as a write. The trust that gates an agent's own
//! writes and terminals is the same table's ([`PermitsGate`]).

mod commands;
pub(crate) mod config;
mod events;
mod life;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use async_trait::async_trait;
use bb_host::permissions::{AnswerOutcome, RequestKind};
use bb_protocol::v1::{
    ApprovePermissionParams, Capabilities, CommandParams, CommandResult, CreateSessionParams,
    EngineEvent, EngineInfo, EngineKind, EngineStatus, InitResult, ListSessionsResult,
    PermissionDecision, SendMessageParams, SendMessageResult, SessionAck, SessionParams,
    SessionSummary,
};
use bb_protocol::ws::{
    AcpConnectParams, AcpPermissionReplyParams, AcpRequestId, AcpSessionCancelParams,
    AcpSessionLoadParams, AcpSessionNewParams, AcpSessionParams, PermissionOutcome,
};
use bb_service::permits::Permits;
use bb_service::{
    EngineAdapter, EngineError, EngineUpdate, SystemClock, UpdateReceiver, UpdateSender,
    update_channel,
};
use bb_supervisor::ProcessSpawner;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

pub use config::CONFIG_FILE;
pub use events::HELD_OUTPUT;

use crate::caps::Optional;
use crate::gate::Gate;
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
}

/// The workspace trust of the runtime's permission table, as the ACP client's [`Gate`]: an
/// agent's writes and terminals are refused until the workspace is trusted.
#[derive(Debug)]
pub struct PermitsGate(Arc<Permits>);

impl Gate for PermitsGate {
    fn trusted(&self) -> bool {
        self.0.trusted()
    }
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
    permits: Arc<Permits>,
    state: Mutex<State>,
    updates: UpdateSender,
    config: config::ConfigMemory,
    life: Mutex<life::Life>,
    seq: AtomicU64,
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

    /// One bridge-made or agent event of a session as an update.
    fn event(&self, session: &str, kind: &str, mut payload: Map<String, Value>) -> EngineUpdate {
        let n = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        payload.entry("sessionId").or_insert_with(|| session.into());
        EngineUpdate::Events {
            session_id: session.to_owned(),
            events: vec![EngineEvent {
                id: format!("acp-{n}"),
                event_type: kind.to_owned(),
                turn: None,
                ts: None,
                payload: payload.into(),
            }],
        }
    }

    async fn send(&self, update: EngineUpdate) {
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
            title: None,
            status: Some("idle".to_owned()),
            updated_at: None,
            queued_prompts: None,
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
            self.send(EngineUpdate::SessionUpserted(summary)).await;
        }
        Ok(())
    }
}

fn lock_life(life: &Mutex<life::Life>) -> MutexGuard<'_, life::Life> {
    life.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl AcpAdapter {
    /// Starts the agent (`command[0]` with the rest as arguments, cwd = the workspace) and
    /// `initialize`s it; returns the adapter and its updates. The config options a user picks
    /// are remembered under `state_dir` (not at all when `None`).
    pub async fn start(
        policy: LaunchPolicy,
        spawner: Arc<dyn ProcessSpawner>,
        command: Vec<String>,
        state_dir: Option<PathBuf>,
    ) -> Result<(Arc<Self>, UpdateReceiver), EngineError> {
        let Some((program, args)) = command.split_first() else {
            return Err(EngineError::InvalidRequest(
                "--engine acp needs the agent command after `--`, e.g. `-- kilo acp`".to_owned(),
            ));
        };
        let workspace = policy.workspace.clone();
        let directory = workspace.display().to_string();
        let permits =
            Arc::new(Permits::new(NAME, directory, policy.trusted, Arc::new(SystemClock)));
        let gate = Arc::new(PermitsGate(permits.clone()));
        let (hub, events) = AcpHub::with_gate(policy, spawner, gate);
        let hub = Arc::new(hub);
        let connect = AcpConnectParams {
            command: program.clone(),
            args: Some(args.to_vec()),
            env: None,
            cwd: None,
        };
        let info = hub.connect(connect.clone()).await.map_err(engine_error)?;
        tracing::info!(agent = %info.agent_info.name, version = %info.agent_info.version, "ACP agent ready");
        let (updates, rx) = update_channel();
        let inner = Arc::new(Inner {
            config: config::ConfigMemory::load(state_dir, &info.agent_info.name),
            hub,
            conn: RwLock::new(info.id),
            connect,
            version: RwLock::new(info.agent_info.version),
            workspace,
            permits,
            state: Mutex::default(),
            updates,
            life: Mutex::new(life::Life::default()),
            seq: AtomicU64::new(0),
        });
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
            updated_at: None,
            queued_prompts: None,
        };
        lock(&i.state).sessions.push(summary.clone());
        i.send(EngineUpdate::SessionUpserted(summary.clone())).await;
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
            i.send(EngineUpdate::SessionRemoved(id)).await;
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
                status: None,
                updated_at: None,
                queued_prompts: None,
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
        i.permits.cancel_session(&session);
        lock(&i.state).sessions.retain(|s| s.session_id != session);
        i.send(EngineUpdate::SessionRemoved(session.clone())).await;
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
        commands::prompt(i, &params.session_id, params.text);
        Ok(SendMessageResult { session_id: params.session_id, message_id: None })
    }

    async fn stop(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        let i = &self.inner;
        self.known(&params.session_id)?;
        if let Some(err) = i.unavailable() {
            return Err(err);
        }
        i.permits.cancel_session(&params.session_id);
        i.hub
            .session_cancel(AcpSessionCancelParams {
                connection_id: i.conn(),
                session_id: params.session_id.clone(),
            })
            .await
            .map_err(engine_error)?;
        i.send(i.permits.count_update(&params.session_id)).await;
        Ok(SessionAck { session_id: params.session_id })
    }

    async fn command(&self, params: CommandParams) -> Result<CommandResult, EngineError> {
        commands::command(&self.inner, params).await
    }

    async fn approve_permission(
        &self,
        params: ApprovePermissionParams,
    ) -> Result<SessionAck, EngineError> {
        let i = &self.inner;
        let session = params.session_id.clone();
        let key = (session.clone(), params.request_id.clone());
        let asked = lock(&i.state).asked.get(&key).cloned();
        let Some(asked) = asked else {
            let question = lock(&i.state).tracked.questions.contains_key(&key);
            let why = if question {
                format!(
                    "{} is a question: answer it with bb.command question.reply or question.reject",
                    params.request_id
                )
            } else {
                format!(
                    "no permission request {} is waiting in session {session}",
                    params.request_id
                )
            };
            return Err(EngineError::refused("permission_not_pending", why));
        };
        let option = pick_option(&asked.options, params.decision).ok_or_else(|| {
            EngineError::refused(
                "invalid_params",
                format!("the agent offered no option for {:?}", params.decision),
            )
        })?;
        let approve = params.decision != PermissionDecision::Deny;
        i.permits.begin(&session, &params.request_id, approve)?;
        let result = i
            .hub
            .permission_reply(AcpPermissionReplyParams {
                connection_id: i.conn(),
                session_id: Some(session.clone()),
                request_id: asked.request_id,
                outcome: PermissionOutcome::Selected { option_id: option },
            })
            .await;
        let outcome = match &result {
            Ok(()) => AnswerOutcome::Accepted,
            Err(AcpError::PermissionNotPending(_)) => AnswerOutcome::Unknown,
            Err(_) => AnswerOutcome::Failed,
        };
        i.permits.done(&session, &params.request_id, outcome);
        if result.is_ok() {
            lock(&i.state).asked.remove(&key);
        }
        i.send(i.permits.count_update(&session)).await;
        result.map_err(engine_error)?;
        Ok(SessionAck { session_id: session })
    }

    fn set_workspace_trusted(&self, trusted: bool) {
        self.inner.permits.set_trusted(trusted);
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

/// The option for a decision, by kind.
fn pick_option(options: &[(String, String)], decision: PermissionDecision) -> Option<String> {
    let wanted: &[&str] = match decision {
        PermissionDecision::AllowOnce => &["allow_once"],
        PermissionDecision::AllowRule => &["allow_always", "allow_once"],
        PermissionDecision::Deny => &["reject_once", "reject_always"],
    };
    wanted.iter().find_map(|k| options.iter().find(|(_, kind)| kind == k).map(|(id, _)| id.clone()))
}

/// What approving would let the agent do, from the tool call's `kind`.
fn request_kind(tool_call: &Value) -> RequestKind {
    match tool_call.get("kind").and_then(Value::as_str) {
        Some("read" | "search" | "fetch" | "think") => RequestKind::Read,
        Some("edit" | "delete" | "move") => RequestKind::Write,
        Some("execute") => RequestKind::Exec,
        _ => RequestKind::Other,
    }
}

fn request_key(id: &AcpRequestId) -> String {
    match id {
        AcpRequestId::Text(s) => s.clone(),
        AcpRequestId::Number(n) => n.to_string(),
    }
}

/// Hub events → engine updates, in order.
async fn pump(mut events: mpsc::Receiver<AcpEvent>, inner: Arc<Inner>) {
    let permits = inner.permits.clone();
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
                if permits.raised(&session_id, &key, request_kind(&tool_call)) {
                    let payload = Map::from_iter([
                        ("requestId".to_owned(), json!(key)),
                        ("toolCall".to_owned(), tool_call),
                        ("options".to_owned(), options),
                    ]);
                    out.push(inner.event(&session_id, "request_permission", payload));
                }
                out.push(permits.count_update(&session_id));
            }
            AcpEventKind::PermissionSettled { session_id, request_id, outcome } => {
                let key = request_key(&request_id);
                permits.replied(&session_id, &key);
                lock(&inner.state).asked.remove(&(session_id.clone(), key.clone()));
                let payload = Map::from_iter([
                    ("requestId".to_owned(), json!(key)),
                    ("outcome".to_owned(), outcome),
                ]);
                out.push(inner.event(&session_id, "permission_settled", payload));
                out.push(permits.count_update(&session_id));
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
