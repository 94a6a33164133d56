//! `AcpHub`: the transport-neutral `acp_*` surface. One hub per client connection (a
//! WebSocket, the sidecar's adapter): its agents and its event receiver belong to that client
//! alone, and dropping the hub stops every agent it started.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::ContentBlock;
use bb_protocol::ws::{
    AcpConnectParams, AcpConnectionInfo, AcpConnectionStatus, AcpDisconnectParams,
    AcpElicitationReplyParams, AcpPermissionReplyParams, AcpPromptResult, AcpSessionCancelParams,
    AcpSessionList, AcpSessionListParams, AcpSessionLoadParams, AcpSessionNewParams,
    AcpSessionParams, AcpSessionPromptParams, AcpSessionSetup, AcpSetConfigOptionParams, AgentInfo,
};
use bb_supervisor::ProcessSpawner;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::caps::Optional;
use crate::conn::{AcpCounters, ClientEnv, Connection};
use crate::gate::{Gate, TrustFlag};
use crate::terminal::TerminalEnv;
use crate::{AcpError, AcpEvent, LaunchPolicy};

/// Events buffered per hub before the agents' readers wait (back-pressure, never a drop).
pub const EVENT_CAPACITY: usize = 1024;

struct Entry {
    conn: Arc<Connection>,
    cwd: PathBuf,
}

/// The `acp_*` calls of one client. Cheap to share behind an `Arc`.
pub struct AcpHub {
    policy: LaunchPolicy,
    spawner: Arc<dyn ProcessSpawner>,
    gate: Arc<dyn Gate>,
    conns: Mutex<HashMap<String, Entry>>,
    events: mpsc::Sender<AcpEvent>,
    next: AtomicU64,
}

impl std::fmt::Debug for AcpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpHub").field("policy", &self.policy).finish_non_exhaustive()
    }
}

impl AcpHub {
    /// A hub and the receiver of every event of its connections; the workspace is trusted
    /// for the agents' writes and terminals as `policy.trusted` says, for good.
    pub fn new(
        policy: LaunchPolicy,
        spawner: Arc<dyn ProcessSpawner>,
    ) -> (Self, mpsc::Receiver<AcpEvent>) {
        let gate = Arc::new(TrustFlag::new(policy.trusted));
        Self::with_gate(policy, spawner, gate)
    }

    /// As [`AcpHub::new`], with the trust of the agents' writes and terminals decided by
    /// `gate` each time.
    pub fn with_gate(
        policy: LaunchPolicy,
        spawner: Arc<dyn ProcessSpawner>,
        gate: Arc<dyn Gate>,
    ) -> (Self, mpsc::Receiver<AcpEvent>) {
        let (events, rx) = mpsc::channel(EVENT_CAPACITY);
        let hub = Self {
            policy,
            spawner,
            gate,
            conns: Mutex::default(),
            events,
            next: AtomicU64::new(1),
        };
        (hub, rx)
    }

    fn entry(&self, id: &str) -> Result<(Arc<Connection>, PathBuf), AcpError> {
        let conns = self.conns.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        conns
            .get(id)
            .map(|e| (e.conn.clone(), e.cwd.clone()))
            .ok_or_else(|| AcpError::NotFound(id.to_owned()))
    }

    fn new_id(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let r: u128 = rand::random();
        // A version-4 UUID layout; the counter keeps ids of one hub distinct even if the
        // random source repeats.
        let r = (r & !(0xf << 76) & !(0x3 << 62)) | (0x4 << 76) | (0x2 << 62);
        let r = r ^ u128::from(n);
        let h = format!("{r:032x}");
        format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
    }

    /// `acp_connect`: spawn the agent and `initialize` it.
    pub async fn connect(&self, params: AcpConnectParams) -> Result<AcpConnectionInfo, AcpError> {
        let spec = self.policy.spec(&params)?;
        let cwd = spec.cwd.clone();
        let id = self.new_id();
        let env = ClientEnv {
            terminal: TerminalEnv {
                spawner: self.spawner.clone(),
                workspace: self.policy.workspace.clone(),
                inherited_env: spec.env.clone(),
            },
            gate: self.gate.clone(),
        };
        let conn =
            Connection::start(id.clone(), self.spawner.as_ref(), spec, self.events.clone(), env)
                .await?;
        let info = connection_info(&conn);
        self.conns
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id, Entry { conn: Arc::new(conn), cwd });
        Ok(info)
    }

    /// The connection's `initialize` answer as JSON (capabilities, auth methods).
    pub fn agent_init(&self, connection_id: &str) -> Result<Value, AcpError> {
        let (conn, _) = self.entry(connection_id)?;
        Ok(serde_json::to_value(&conn.init).unwrap_or(Value::Null))
    }

    /// `acp_session_new`: the new session's id.
    pub async fn session_new(&self, params: AcpSessionNewParams) -> Result<String, AcpError> {
        Ok(self.session_new_full(params).await?.0)
    }

    /// As [`AcpHub::session_new`], with the whole `session/new` answer as JSON.
    pub async fn session_new_full(
        &self,
        params: AcpSessionNewParams,
    ) -> Result<(String, Value), AcpError> {
        let (conn, cwd) = self.entry(&params.connection_id)?;
        let cwd = self.session_cwd(params.cwd.as_deref(), cwd)?;
        conn.new_session(cwd, params.mcp_servers.unwrap_or_default()).await
    }

    /// The agent's own `session/list` for a directory (default: the connection's cwd), as
    /// JSON `SessionInfo` objects; `None` when the agent does not offer it.
    pub async fn list_sessions(
        &self,
        connection_id: &str,
        cwd: Option<&str>,
    ) -> Result<Option<Vec<Value>>, AcpError> {
        let (conn, default) = self.entry(connection_id)?;
        let cwd = self.session_cwd(cwd, default)?;
        conn.list_sessions(cwd).await
    }

    /// `acp_session_list`: the agent's sessions; `not_supported` unless it offers
    /// `session/list`.
    pub async fn session_list(
        &self,
        params: AcpSessionListParams,
    ) -> Result<AcpSessionList, AcpError> {
        let sessions = self.list_sessions(&params.connection_id, params.cwd.as_deref()).await?;
        sessions
            .map(|sessions| AcpSessionList { sessions })
            .ok_or(AcpError::NotSupported(Optional::List.method()))
    }

    /// `acp_session_load`: the agent replays the session as updates, then answers.
    pub async fn session_load(&self, params: AcpSessionLoadParams) -> Result<(), AcpError> {
        self.session_load_full(params).await.map(|_| ())
    }

    /// As [`AcpHub::session_load`], with the answer (config options, modes).
    pub async fn session_load_full(
        &self,
        params: AcpSessionLoadParams,
    ) -> Result<AcpSessionSetup, AcpError> {
        self.reopen(params, Optional::Load).await
    }

    /// `acp_session_resume`: reopens a session without a replay; `not_supported` unless the
    /// agent offers `session/resume`.
    pub async fn session_resume(
        &self,
        params: AcpSessionLoadParams,
    ) -> Result<AcpSessionSetup, AcpError> {
        self.reopen(params, Optional::Resume).await
    }

    async fn reopen(
        &self,
        params: AcpSessionLoadParams,
        how: Optional,
    ) -> Result<AcpSessionSetup, AcpError> {
        let (conn, cwd) = self.entry(&params.connection_id)?;
        let cwd = self.session_cwd(params.cwd.as_deref(), cwd)?;
        let mcp = params.mcp_servers.unwrap_or_default();
        let answer = match how {
            Optional::Resume => conn.resume_session(&params.session_id, cwd, mcp).await?,
            _ => conn.load_session(&params.session_id, cwd, mcp).await?,
        };
        Ok(setup(&answer))
    }

    /// Opens a session this connection does not have open: `session/resume` when the agent
    /// offers it (no replay), else `session/load` (the history replays as updates), else
    /// `not_supported`. Returns whether it was loaded (replayed).
    pub async fn session_open(
        &self,
        params: AcpSessionLoadParams,
    ) -> Result<(AcpSessionSetup, bool), AcpError> {
        let (conn, _) = self.entry(&params.connection_id)?;
        if conn.offers(Optional::Resume) {
            return Ok((self.session_resume(params).await?, false));
        }
        if conn.offers(Optional::Load) {
            return Ok((self.session_load_full(params).await?, true));
        }
        Err(AcpError::NotSupported("session/resume or session/load"))
    }

    /// Whether the connection has the session open.
    pub fn session_is_open(&self, connection_id: &str, session_id: &str) -> bool {
        self.entry(connection_id).is_ok_and(|(c, _)| c.is_open(session_id))
    }

    /// Whether the agent offers an optional method.
    pub fn offers(&self, connection_id: &str, what: Optional) -> bool {
        self.entry(connection_id).is_ok_and(|(c, _)| c.offers(what))
    }

    /// `acp_session_close`: stops forwarding the session's updates (late ones are dropped and
    /// counted), answers what it holds open `cancelled`, kills its terminals, then
    /// `session/close`; `not_supported` when the agent does not offer it (the session is
    /// still closed here, and a running turn cancelled).
    pub async fn session_close(&self, params: AcpSessionParams) -> Result<(), AcpError> {
        if self.session_close_local(&params).await? {
            Ok(())
        } else {
            Err(AcpError::NotSupported(Optional::Close.method()))
        }
    }

    /// As [`AcpHub::session_close`]; `Ok(false)` when the agent does not offer
    /// `session/close` (closed here only).
    pub async fn session_close_local(&self, params: &AcpSessionParams) -> Result<bool, AcpError> {
        let (conn, _) = self.entry(&params.connection_id)?;
        conn.close_session(&params.session_id).await
    }

    /// `acp_session_delete`; `not_supported` unless the agent offers `session/delete`.
    pub async fn session_delete(&self, params: AcpSessionParams) -> Result<(), AcpError> {
        let (conn, _) = self.entry(&params.connection_id)?;
        conn.delete_session(&params.session_id).await
    }

    /// `acp_session_set_config_option`: checked against the session's options, then sent.
    pub async fn session_set_config_option(
        &self,
        params: AcpSetConfigOptionParams,
    ) -> Result<AcpSessionSetup, AcpError> {
        let (conn, _) = self.entry(&params.connection_id)?;
        let answer =
            conn.set_config_option(&params.session_id, &params.config_id, params.value).await?;
        Ok(setup(&answer))
    }

    /// The session's config options as last reported (`None`: not open on the connection).
    pub fn config_options(&self, connection_id: &str, session_id: &str) -> Option<Vec<Value>> {
        self.entry(connection_id).ok().and_then(|(c, _)| c.config_options(session_id))
    }

    /// `acp_elicitation_reply`.
    pub async fn elicitation_reply(
        &self,
        params: AcpElicitationReplyParams,
    ) -> Result<(), AcpError> {
        let (conn, _) = self.entry(&params.connection_id)?;
        conn.reply_elicitation(&params.request_id, params.action, params.content).await
    }

    /// What the connection counted.
    pub fn counters(&self, connection_id: &str) -> AcpCounters {
        self.entry(connection_id).map(|(c, _)| c.counters()).unwrap_or_default()
    }

    /// `acp_session_prompt`: resolves with the turn's end.
    pub async fn session_prompt(
        &self,
        params: AcpSessionPromptParams,
    ) -> Result<AcpPromptResult, AcpError> {
        let (conn, _) = self.entry(&params.connection_id)?;
        crate::caps::check_prompt(&conn.init, &params.prompt)?;
        let prompt: Vec<ContentBlock> = serde_json::to_value(&params.prompt)
            .and_then(serde_json::from_value)
            .map_err(|e| AcpError::InvalidParams(format!("prompt: {e}")))?;
        let answer = conn.prompt(&params.session_id, prompt).await?;
        let stop_reason = serde_json::to_value(answer.stop_reason)
            .and_then(serde_json::from_value)
            .map_err(|e| AcpError::Agent {
                method: "session/prompt",
                message: format!("unknown stopReason: {e}"),
            })?;
        Ok(AcpPromptResult { stop_reason })
    }

    /// `acp_session_cancel`: cancels the turn; its pending permissions are answered
    /// `cancelled`.
    pub async fn session_cancel(&self, params: AcpSessionCancelParams) -> Result<(), AcpError> {
        let (conn, _) = self.entry(&params.connection_id)?;
        conn.cancel(&params.session_id).await
    }

    /// `acp_permission_reply`.
    pub async fn permission_reply(&self, params: AcpPermissionReplyParams) -> Result<(), AcpError> {
        let (conn, _) = self.entry(&params.connection_id)?;
        conn.reply_permission(params.session_id.as_deref(), &params.request_id, &params.outcome)
            .await
    }

    /// Permission requests of a session awaiting an answer.
    pub fn pending_permissions(&self, connection_id: &str, session_id: &str) -> usize {
        self.entry(connection_id).map_or(0, |(c, _)| c.pending_count(session_id))
    }

    /// `acp_disconnect`: stops the agent and waits until it is gone. The id stays known, so a
    /// later call on it says it is closed.
    pub async fn disconnect(&self, params: AcpDisconnectParams) -> Result<(), AcpError> {
        let (conn, _) = self.entry(&params.id)?;
        conn.close().await;
        Ok(())
    }

    /// The agent's process id (its process group id too), for diagnostics.
    pub fn agent_pid(&self, connection_id: &str) -> Result<Option<u32>, AcpError> {
        Ok(self.entry(connection_id)?.0.pid)
    }

    /// The error a call on this connection gets now, if it is closed (or unknown).
    pub fn closed_error(&self, connection_id: &str) -> Option<AcpError> {
        match self.entry(connection_id) {
            Err(err) => Some(err),
            Ok((conn, _)) => conn
                .closed_reason()
                .map(|reason| AcpError::Closed { id: connection_id.to_owned(), reason }),
        }
    }

    /// The connection's status (`ready` or `closed`).
    pub fn status(&self, connection_id: &str) -> Result<AcpConnectionStatus, AcpError> {
        let (conn, _) = self.entry(connection_id)?;
        Ok(if conn.closed_reason().is_some() {
            AcpConnectionStatus::Closed
        } else {
            AcpConnectionStatus::Ready
        })
    }

    /// Stops every agent of this hub (the client went away) and waits until they are gone.
    pub async fn close_all(&self) {
        let conns: Vec<Arc<Connection>> = self
            .conns
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .map(|e| e.conn.clone())
            .collect();
        for conn in conns {
            conn.close().await;
        }
    }

    fn session_cwd(&self, requested: Option<&str>, default: PathBuf) -> Result<String, AcpError> {
        let cwd = match requested {
            Some(c) if !c.is_empty() => self.policy.cwd(Some(c))?,
            _ => default,
        };
        Ok(cwd.to_string_lossy().into_owned())
    }
}

/// The setup part of a `session/load`, `resume` or `set_config_option` answer.
fn setup(answer: &Value) -> AcpSessionSetup {
    AcpSessionSetup {
        config_options: answer.get("configOptions").and_then(Value::as_array).cloned(),
        modes: answer.get("modes").filter(|m| !m.is_null()).cloned(),
    }
}

fn connection_info(conn: &Connection) -> AcpConnectionInfo {
    let protocol_version = serde_json::to_value(conn.init.protocol_version)
        .map(|v| match v {
            Value::String(s) => s,
            other => other.to_string(),
        })
        .unwrap_or_default();
    let agent_info = conn.init.agent_info.as_ref().map_or_else(
        || AgentInfo { name: "unknown".to_owned(), title: None, version: "unknown".to_owned() },
        |a| AgentInfo { name: a.name.clone(), title: a.title.clone(), version: a.version.clone() },
    );
    AcpConnectionInfo {
        id: conn.id.clone(),
        status: AcpConnectionStatus::Ready,
        protocol_version,
        agent_info,
    }
}
