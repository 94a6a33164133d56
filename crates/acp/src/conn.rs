//! One agent process and the ACP client connection over its stdio: the SDK's dispatch loop
//! in one task, the process watcher in another, and the tables both share (open, closed,
//! running and cancelled sessions, what waits for the user, why the connection closed).
//! The agent-to-client side lives in `client`, the capability checks in `caps`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, CloseSessionRequest, ContentBlock, DeleteSessionRequest, Implementation,
    InitializeRequest, InitializeResponse, ListSessionsRequest, LoadSessionRequest,
    NewSessionRequest, PromptRequest, PromptResponse, ResumeSessionRequest,
    SetSessionConfigOptionRequest,
};
use agent_client_protocol::{Agent, ByteStreams, JsonRpcRequest};
use bb_protocol::ws::{AcpRequestId, ElicitationActionKind, PermissionOutcome};
use bb_supervisor::{ProcessSpawner, SpawnSpec};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::AcpError;
use crate::asks::{ElicitationAsk, PermissionAsk, check_form, writes_files};
use crate::caps::{Optional, client_capabilities};
use crate::event::{AcpEvent, AcpEventKind};
use crate::gate::Gate;
use crate::terminal::{TerminalEnv, Terminals};

/// How long `initialize`, `session/new`, `session/load`, `session/resume` and the other
/// session calls may take (an agent may boot a project on its first session). Prompts are
/// not bounded: a turn takes as long as it takes and is ended with a cancel.
pub const SETUP_TIMEOUT: Duration = Duration::from_secs(120);
/// Pages of `session/list` read for one listing.
pub const MAX_LIST_PAGES: usize = 20;
/// Grace between SIGTERM and SIGKILL when a connection is closed.
pub const STOP_GRACE: Duration = Duration::from_secs(3);
/// How long a failed call waits for the process watcher to say why the agent is gone.
const EXIT_REPORT_WAIT: Duration = Duration::from_secs(2);

/// A session the connection has open: its config options as last reported.
#[derive(Debug, Default, Clone)]
pub(crate) struct OpenSession {
    pub(crate) config_options: Vec<Value>,
}

/// Counts of what the connection did on the agent's behalf, and what it dropped.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct AcpCounters {
    /// `session/update`s of closed sessions, dropped.
    pub dropped_after_close: u64,
    /// Files read for the agent.
    pub fs_reads: u64,
    /// Files written for the agent.
    pub fs_writes: u64,
    /// File requests refused (outside the workspace, untrusted, denied, failed).
    pub fs_refused: u64,
    /// Terminals started.
    pub terminals: u64,
    /// Terminal requests refused (untrusted, bad cwd or command).
    pub terminals_refused: u64,
    /// Elicitations raised.
    pub elicitations: u64,
}

#[derive(Default)]
pub(crate) struct Shared {
    pub(crate) asks: Vec<PermissionAsk>,
    pub(crate) elicitations: Vec<ElicitationAsk>,
    /// Sessions with a prompt in flight.
    pub(crate) running: HashSet<String>,
    /// Running sessions that were cancelled: later permission requests are answered
    /// `cancelled` at once.
    pub(crate) cancelled: HashSet<String>,
    /// Sessions this connection opened (new, load, resume) and has not closed.
    pub(crate) open: HashMap<String, OpenSession>,
    /// Sessions closed here: their late updates are dropped and counted.
    pub(crate) closed: HashSet<String>,
    /// `(session, path)` an approved edit covers: the agent's next write of it needs no
    /// second question.
    pub(crate) grants: Vec<(String, String)>,
    pub(crate) counters: AcpCounters,
    next_ask: u64,
}

impl Shared {
    /// A fresh id for a question the bridge asks itself (`bb-write-1`, …).
    pub(crate) fn next_ask_id(&mut self, what: &str) -> String {
        self.next_ask += 1;
        format!("bb-{what}-{}", self.next_ask)
    }
}

pub(crate) fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the agent's client-side requests may touch, and how to ask.
#[derive(Debug, Clone)]
pub(crate) struct ClientEnv {
    pub(crate) terminal: TerminalEnv,
    pub(crate) gate: Arc<dyn Gate>,
}

/// What the client handlers share with the connection.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    pub(crate) id: String,
    pub(crate) shared: Arc<Mutex<Shared>>,
    pub(crate) events: mpsc::Sender<AcpEvent>,
    pub(crate) env: ClientEnv,
    pub(crate) terminals: Arc<Terminals>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("open", &self.open.len()).finish_non_exhaustive()
    }
}

impl Ctx {
    pub(crate) async fn emit(&self, kind: AcpEventKind) {
        let _ = self.events.send(AcpEvent { connection_id: self.id.clone(), kind }).await;
    }
}

/// A live (or closed) connection to one agent.
pub(crate) struct Connection {
    pub(crate) id: String,
    cx: ConnectionTo<Agent>,
    ctx: Ctx,
    /// Why the connection closed; `None` while open.
    closed: watch::Receiver<Option<String>>,
    /// Dropping or sending stops the agent.
    stop: Mutex<Option<oneshot::Sender<()>>>,
    pub(crate) init: InitializeResponse,
    /// The agent's pid (also its process group id).
    pub(crate) pid: Option<u32>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("id", &self.id).finish_non_exhaustive()
    }
}

/// The config options of a `session/new`, `load`, `resume` or `set_config_option` answer.
fn config_options_of(answer: &Value) -> Option<Vec<Value>> {
    answer.get("configOptions").and_then(Value::as_array).cloned()
}

impl Connection {
    /// Spawns the agent, runs the connection, `initialize`s it and checks the protocol
    /// version it speaks.
    pub(crate) async fn start(
        id: String,
        spawner: &dyn ProcessSpawner,
        spec: SpawnSpec,
        events: mpsc::Sender<AcpEvent>,
        env: ClientEnv,
    ) -> Result<Self, AcpError> {
        let program = spec.program.display().to_string();
        let mut process = spawner
            .spawn_stdio(spec)
            .map_err(|e| AcpError::Spawn { program: program.clone(), reason: e.to_string() })?;
        let Some(stdio) = process.take_stdio() else {
            return Err(AcpError::Spawn {
                program,
                reason: "the spawner gave no stdio pipes".to_owned(),
            });
        };
        let pid = process.pid();
        let shared = Arc::new(Mutex::new(Shared::default()));
        let terminals = Arc::new(Terminals::new(env.terminal.clone(), id.clone(), events.clone()));
        let ctx = Ctx { id: id.clone(), shared, events, env, terminals };
        let (closed_tx, closed) = watch::channel(None);
        let (stop_tx, stop_rx) = oneshot::channel();
        let (cx_tx, cx_rx) = oneshot::channel();

        let client = crate::client::builder(ctx.clone());
        let transport = ByteStreams::new(stdio.stdin.compat_write(), stdio.stdout.compat());
        let conn_id = id.clone();
        tokio::spawn(async move {
            let (hold_tx, hold_rx) = oneshot::channel::<()>();
            let result = client
                .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
                    let _ = cx_tx.send((cx, hold_tx));
                    let _ = hold_rx.await;
                    Ok(())
                })
                .await;
            if let Err(err) = result {
                tracing::info!(connection = %conn_id, %err, "ACP connection ended");
            }
        });
        tokio::spawn(crate::watch::watch_process(process, stop_rx, closed_tx, ctx.clone()));

        let Ok((cx, hold)) = cx_rx.await else {
            return Err(AcpError::Closed { id, reason: "the connection did not start".to_owned() });
        };
        // The dispatch task holds the connection open until the watcher sees the end.
        let mut closed_for_hold = closed.clone();
        tokio::spawn(async move {
            let _ = closed_for_hold.wait_for(Option::is_some).await;
            drop(hold);
        });
        let mut conn = Self {
            id,
            cx,
            ctx,
            closed,
            stop: Mutex::new(Some(stop_tx)),
            init: InitializeResponse::new(ProtocolVersion::V1),
            pid,
        };
        let request = InitializeRequest::new(ProtocolVersion::V1)
            .client_capabilities(client_capabilities())
            .client_info(Implementation::new("bb-bridge", env!("CARGO_PKG_VERSION")));
        let result = match conn.call_bounded("initialize", request).await {
            Ok(init) if init.protocol_version == ProtocolVersion::V1 => Ok(init),
            Ok(init) => Err(AcpError::Protocol(format!(
                "the agent speaks ACP protocol version {}",
                serde_json::to_value(init.protocol_version)
                    .map(|v| v.to_string())
                    .unwrap_or_default()
            ))),
            // The SDK refuses an answer of another version before it reaches us.
            Err(AcpError::Agent { message, .. }) if message.contains("protocol version") => {
                Err(AcpError::Protocol(format!("the agent's initialize answer: {message}")))
            }
            Err(err) => Err(err),
        };
        match result {
            Ok(init) => {
                conn.init = init;
                Ok(conn)
            }
            Err(err) => {
                conn.close().await;
                Err(err)
            }
        }
    }

    /// Why the connection is closed, if it is.
    pub(crate) fn closed_reason(&self) -> Option<String> {
        self.closed.borrow().clone()
    }

    fn ensure_open(&self) -> Result<(), AcpError> {
        match self.closed_reason() {
            Some(reason) => Err(AcpError::Closed { id: self.id.clone(), reason }),
            None => Ok(()),
        }
    }

    /// Fails with `not_supported` unless the agent offers `what`.
    pub(crate) fn require(&self, what: Optional) -> Result<(), AcpError> {
        if what.offered(&self.init) { Ok(()) } else { Err(AcpError::NotSupported(what.method())) }
    }

    /// Whether the agent offers `what`.
    pub(crate) fn offers(&self, what: Optional) -> bool {
        what.offered(&self.init)
    }

    /// Sends one request and waits for its answer; a transport failure becomes
    /// [`AcpError::Closed`] with the watcher's reason.
    async fn call<Req: JsonRpcRequest>(
        &self,
        method: &'static str,
        request: Req,
    ) -> Result<Req::Response, AcpError> {
        self.ensure_open()?;
        match self.cx.send_request(request).block_task().await {
            Ok(response) => Ok(response),
            Err(err) => {
                let transport_gone = agent_client_protocol::is_incoming_transport_closed(&err)
                    || agent_client_protocol::is_connection_terminated(&err);
                if transport_gone || self.closed_reason().is_some() {
                    let mut closed = self.closed.clone();
                    let _ =
                        tokio::time::timeout(EXIT_REPORT_WAIT, closed.wait_for(Option::is_some))
                            .await;
                    let reason = self
                        .closed_reason()
                        .unwrap_or_else(|| "the agent closed its output".to_owned());
                    return Err(AcpError::Closed { id: self.id.clone(), reason });
                }
                // The SDK's own refusals say what is wrong in `data`.
                let detail = match &err.data {
                    Some(Value::String(d)) => format!(": {d}"),
                    _ => String::new(),
                };
                let message = format!("{}{detail} ({})", err.message, i32::from(err.code));
                Err(AcpError::Agent {
                    method,
                    message: bb_normalize::redact::redact_text(&message),
                })
            }
        }
    }

    async fn call_bounded<Req: JsonRpcRequest>(
        &self,
        method: &'static str,
        request: Req,
    ) -> Result<Req::Response, AcpError> {
        match tokio::time::timeout(SETUP_TIMEOUT, self.call(method, request)).await {
            Ok(result) => result,
            Err(_) => Err(AcpError::Agent {
                method,
                message: format!("no answer within {}s", SETUP_TIMEOUT.as_secs()),
            }),
        }
    }

    /// Records a session as open with the config options of `answer`, and reports them as a
    /// `config_option_update` so a client tracks one kind of update for them.
    async fn opened(&self, session_id: &str, answer: &Value) {
        let options = config_options_of(answer);
        {
            let mut s = lock(&self.ctx.shared);
            s.closed.remove(session_id);
            s.open.insert(
                session_id.to_owned(),
                OpenSession { config_options: options.clone().unwrap_or_default() },
            );
        }
        if let Some(options) = options {
            let update = json!({"sessionUpdate": "config_option_update", "configOptions": options});
            self.ctx
                .emit(AcpEventKind::SessionUpdate { session_id: session_id.to_owned(), update })
                .await;
        }
    }

    /// `session/new`; returns the answer as JSON.
    pub(crate) async fn new_session(
        &self,
        cwd: String,
        mcp_servers: Vec<Value>,
    ) -> Result<(String, Value), AcpError> {
        let request: NewSessionRequest = from_json(json!({"cwd": cwd, "mcpServers": mcp_servers}))?;
        let answer = self.call_bounded("session/new", request).await?;
        let id = answer.session_id.to_string();
        let answer = serde_json::to_value(&answer).unwrap_or(Value::Null);
        self.opened(&id, &answer).await;
        Ok((id, answer))
    }

    /// `session/load`; the history replays as session updates before the answer.
    pub(crate) async fn load_session(
        &self,
        session_id: &str,
        cwd: String,
        mcp_servers: Vec<Value>,
    ) -> Result<Value, AcpError> {
        self.reopen::<LoadSessionRequest>(Optional::Load, session_id, cwd, mcp_servers).await
    }

    /// `session/resume`: reopens a session without a replay.
    pub(crate) async fn resume_session(
        &self,
        session_id: &str,
        cwd: String,
        mcp_servers: Vec<Value>,
    ) -> Result<Value, AcpError> {
        self.reopen::<ResumeSessionRequest>(Optional::Resume, session_id, cwd, mcp_servers).await
    }

    /// `session/load` or `session/resume` (`Req`), when offered: the session is forwarded
    /// again from the request on (a load's replay included), and recorded as open.
    async fn reopen<Req>(
        &self,
        what: Optional,
        session_id: &str,
        cwd: String,
        mcp_servers: Vec<Value>,
    ) -> Result<Value, AcpError>
    where
        Req: JsonRpcRequest + serde::de::DeserializeOwned,
        Req::Response: serde::Serialize,
    {
        self.require(what)?;
        lock(&self.ctx.shared).closed.remove(session_id);
        let request: Req =
            from_json(json!({"sessionId": session_id, "cwd": cwd, "mcpServers": mcp_servers}))?;
        let answer = self.call_bounded(what.method(), request).await?;
        let answer = serde_json::to_value(&answer).unwrap_or(Value::Null);
        self.opened(session_id, &answer).await;
        Ok(answer)
    }

    /// Whether this connection has the session open.
    pub(crate) fn is_open(&self, session_id: &str) -> bool {
        lock(&self.ctx.shared).open.contains_key(session_id)
    }

    /// Stops forwarding a session's updates (its late ones are dropped and counted), answers
    /// what it holds open `cancelled`, kills its terminals; then `session/close` when the
    /// agent offers it. Returns whether the agent was asked to close it.
    pub(crate) async fn close_session(&self, session_id: &str) -> Result<bool, AcpError> {
        self.ensure_open()?;
        {
            let mut s = lock(&self.ctx.shared);
            s.open.remove(session_id);
            s.closed.insert(session_id.to_owned());
            s.grants.retain(|(sid, _)| sid != session_id);
        }
        self.settle_session(session_id).await;
        if !self.offers(Optional::Close) {
            if lock(&self.ctx.shared).running.contains(session_id) {
                self.cx
                    .send_notification(CancelNotification::new(session_id.to_owned()))
                    .map_err(|e| AcpError::Closed { id: self.id.clone(), reason: e.message })?;
            }
            return Ok(false);
        }
        self.call_bounded("session/close", CloseSessionRequest::new(session_id.to_owned())).await?;
        Ok(true)
    }

    /// `session/delete`.
    pub(crate) async fn delete_session(&self, session_id: &str) -> Result<(), AcpError> {
        self.require(Optional::Delete)?;
        self.call_bounded("session/delete", DeleteSessionRequest::new(session_id.to_owned()))
            .await?;
        let mut s = lock(&self.ctx.shared);
        s.open.remove(session_id);
        s.closed.insert(session_id.to_owned());
        Ok(())
    }

    /// The session's config options as last reported; `None` when it is not open here.
    pub(crate) fn config_options(&self, session_id: &str) -> Option<Vec<Value>> {
        lock(&self.ctx.shared).open.get(session_id).map(|s| s.config_options.clone())
    }

    /// `session/set_config_option`, checked against the session's options first.
    pub(crate) async fn set_config_option(
        &self,
        session_id: &str,
        config_id: &str,
        value: Value,
    ) -> Result<Value, AcpError> {
        self.ensure_open()?;
        let Some(options) = self.config_options(session_id) else {
            return Err(AcpError::InvalidParams(format!(
                "session {session_id} is not open on this connection; create, load or resume it first"
            )));
        };
        if options.is_empty() {
            return Err(AcpError::NotSupported("session/set_config_option"));
        }
        crate::caps::check_option_value(&options, config_id, &value)?;
        let mut params = json!({"sessionId": session_id, "configId": config_id, "value": value});
        if value.is_boolean() {
            params["type"] = "boolean".into();
        }
        let request: SetSessionConfigOptionRequest = from_json(params)?;
        let answer = self.call_bounded("session/set_config_option", request).await?;
        let answer = serde_json::to_value(&answer).unwrap_or(Value::Null);
        if let Some(options) = config_options_of(&answer) {
            if let Some(s) = lock(&self.ctx.shared).open.get_mut(session_id) {
                s.config_options.clone_from(&options);
            }
            let update = json!({"sessionUpdate": "config_option_update", "configOptions": options});
            self.ctx
                .emit(AcpEventKind::SessionUpdate { session_id: session_id.to_owned(), update })
                .await;
        }
        Ok(answer)
    }

    /// `session/list`, every page (at most [`MAX_LIST_PAGES`]); `None` when the agent does
    /// not offer it.
    pub(crate) async fn list_sessions(&self, cwd: String) -> Result<Option<Vec<Value>>, AcpError> {
        if !self.offers(Optional::List) {
            return Ok(None);
        }
        let mut sessions = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let request: ListSessionsRequest = from_json(json!({"cwd": cwd, "cursor": cursor}))?;
            let page = self.call_bounded("session/list", request).await?;
            sessions.extend(page.sessions.iter().filter_map(|s| serde_json::to_value(s).ok()));
            cursor = page.next_cursor;
            if cursor.is_none() {
                return Ok(Some(sessions));
            }
        }
        tracing::warn!(connection = %self.id, pages = MAX_LIST_PAGES, "session/list has more pages than read; the rest is not listed");
        Ok(Some(sessions))
    }

    /// `session/prompt`: resolves when the turn ends. Reports `running` then `idle`.
    pub(crate) async fn prompt(
        &self,
        session_id: &str,
        prompt: Vec<ContentBlock>,
    ) -> Result<PromptResponse, AcpError> {
        self.ensure_open()?;
        {
            let mut s = lock(&self.ctx.shared);
            s.running.insert(session_id.to_owned());
            s.cancelled.remove(session_id);
        }
        self.emit_state(Some(session_id), "running", Map::new()).await;
        let result =
            self.call("session/prompt", PromptRequest::new(session_id.to_owned(), prompt)).await;
        {
            let mut s = lock(&self.ctx.shared);
            s.running.remove(session_id);
            s.cancelled.remove(session_id);
            // What an approval granted ends with its turn.
            s.grants.retain(|(sid, _)| sid != session_id);
        }
        let mut detail = Map::new();
        match &result {
            Ok(r) => {
                detail.insert(
                    "stopReason".to_owned(),
                    serde_json::to_value(r.stop_reason).unwrap_or(Value::Null),
                );
                if let Some(usage) =
                    serde_json::to_value(r).ok().and_then(|v| v.get("usage").cloned())
                {
                    detail.insert("usage".to_owned(), usage);
                }
            }
            Err(e) => {
                detail.insert(
                    "error".to_owned(),
                    json!({"code": e.code(), "message": e.to_string()}),
                );
            }
        }
        self.emit_state(Some(session_id), "idle", detail).await;
        result
    }

    /// `session/cancel`, then everything the session holds open answered `cancelled` and
    /// its terminals killed.
    pub(crate) async fn cancel(&self, session_id: &str) -> Result<(), AcpError> {
        self.ensure_open()?;
        {
            let mut s = lock(&self.ctx.shared);
            if s.running.contains(session_id) {
                s.cancelled.insert(session_id.to_owned());
            }
        }
        self.cx
            .send_notification(CancelNotification::new(session_id.to_owned()))
            .map_err(|e| AcpError::Closed { id: self.id.clone(), reason: e.message })?;
        self.settle_session(session_id).await;
        Ok(())
    }

    /// Answers every permission request and elicitation of a session `cancelled` and kills
    /// its terminals.
    async fn settle_session(&self, session_id: &str) {
        let (asks, elicitations) = {
            let mut s = lock(&self.ctx.shared);
            let (mine, rest) =
                std::mem::take(&mut s.asks).into_iter().partition(|p| p.session_id == session_id);
            s.asks = rest;
            let (emine, erest) = std::mem::take(&mut s.elicitations)
                .into_iter()
                .partition(|e| e.session_id.as_deref() == Some(session_id));
            s.elicitations = erest;
            (mine, emine)
        };
        for p in asks {
            self.settle(p, &PermissionOutcome::Cancelled).await;
        }
        for e in elicitations {
            self.settle_elicitation(e, ElicitationActionKind::Cancel, None).await;
        }
        self.ctx.terminals.kill_session(session_id);
    }

    /// Answers one permission request (the agent's or the bridge's own).
    pub(crate) async fn reply_permission(
        &self,
        session_id: Option<&str>,
        request_id: &AcpRequestId,
        outcome: &PermissionOutcome,
    ) -> Result<(), AcpError> {
        self.ensure_open()?;
        let key = crate::event::id_value(request_id).to_string();
        let ask = {
            let mut s = lock(&self.ctx.shared);
            let Some(at) = s
                .asks
                .iter()
                .position(|p| p.key == key && session_id.is_none_or(|sid| sid == p.session_id))
            else {
                return Err(AcpError::PermissionNotPending(key));
            };
            if let PermissionOutcome::Selected { option_id } = outcome
                && !s.asks[at].options.iter().any(|(id, _)| id == option_id)
            {
                let offered: Vec<&str> =
                    s.asks[at].options.iter().map(|(id, _)| id.as_str()).collect();
                return Err(AcpError::InvalidParams(format!(
                    "option {option_id:?} is not one of the offered options {offered:?}"
                )));
            }
            let ask = s.asks.remove(at);
            // An approved edit covers the agent's write of the same paths in this turn.
            let allowed = match outcome {
                PermissionOutcome::Selected { option_id } => ask
                    .options
                    .iter()
                    .any(|(id, kind)| id == option_id && kind.starts_with("allow")),
                PermissionOutcome::Cancelled => false,
            };
            if allowed && writes_files(ask.kind.as_deref()) {
                for path in &ask.paths {
                    s.grants.push((ask.session_id.clone(), path.clone()));
                }
            }
            ask
        };
        self.settle(ask, outcome).await;
        Ok(())
    }

    /// Pending permission requests of a session.
    pub(crate) fn pending_count(&self, session_id: &str) -> usize {
        lock(&self.ctx.shared).asks.iter().filter(|p| p.session_id == session_id).count()
    }

    async fn settle(&self, p: PermissionAsk, outcome: &PermissionOutcome) {
        if let Err(err) = p.answer.send(outcome) {
            tracing::warn!(connection = %self.id, %err, "answering a permission request failed");
        }
        let kind = AcpEventKind::PermissionSettled {
            session_id: p.session_id,
            request_id: p.request_id,
            outcome: serde_json::to_value(outcome).unwrap_or(Value::Null),
        };
        self.ctx.emit(kind).await;
    }

    /// Answers an elicitation.
    pub(crate) async fn reply_elicitation(
        &self,
        request_id: &AcpRequestId,
        action: ElicitationActionKind,
        content: Option<Map<String, Value>>,
    ) -> Result<(), AcpError> {
        self.ensure_open()?;
        let key = crate::event::id_value(request_id).to_string();
        let ask = {
            let mut s = lock(&self.ctx.shared);
            let Some(at) = s.elicitations.iter().position(|e| e.key == key) else {
                return Err(AcpError::PermissionNotPending(key));
            };
            if action == ElicitationActionKind::Accept
                && let Some(schema) = &s.elicitations[at].schema
            {
                check_form(schema, content.as_ref().unwrap_or(&Map::new()))
                    .map_err(|why| AcpError::InvalidParams(format!("the form's answer: {why}")))?;
            }
            s.elicitations.remove(at)
        };
        self.settle_elicitation(ask, action, content).await;
        Ok(())
    }

    async fn settle_elicitation(
        &self,
        e: ElicitationAsk,
        action: ElicitationActionKind,
        content: Option<Map<String, Value>>,
    ) {
        let mut answer = json!({"action": action});
        if action == ElicitationActionKind::Accept && e.schema.is_some() {
            answer["content"] = Value::Object(content.unwrap_or_default());
        }
        let response = serde_json::from_value(answer.clone());
        let sent = match response {
            Ok(r) => e.responder.respond(r).map_err(|err| err.message),
            Err(err) => Err(err.to_string()),
        };
        if let Err(err) = sent {
            tracing::warn!(connection = %self.id, %err, "answering an elicitation failed");
        }
        let kind = AcpEventKind::ElicitationSettled {
            session_id: e.session_id,
            request_id: Some(e.request_id),
            outcome: answer,
        };
        self.ctx.emit(kind).await;
    }

    async fn emit_state(
        &self,
        session_id: Option<&str>,
        state: &'static str,
        detail: Map<String, Value>,
    ) {
        let kind = AcpEventKind::State { session_id: session_id.map(str::to_owned), state, detail };
        self.ctx.emit(kind).await;
    }

    /// What the connection counted.
    pub(crate) fn counters(&self) -> AcpCounters {
        lock(&self.ctx.shared).counters
    }

    /// Stops the agent (TERM to its group, KILL after [`STOP_GRACE`]) and waits until it is
    /// reaped. Idempotent.
    pub(crate) async fn close(&self) {
        let stop = self.stop.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(stop) = stop {
            let _ = stop.send(());
        }
        let mut closed = self.closed.clone();
        let _ = closed.wait_for(Option::is_some).await;
    }
}

pub(crate) fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, AcpError> {
    serde_json::from_value(value).map_err(|e| AcpError::InvalidParams(e.to_string()))
}
