//! One agent process and the ACP client connection over its stdio: the SDK's dispatch loop
//! in one task, the process watcher in another, and the tables both share (pending
//! permissions, running and cancelled sessions, why the connection closed).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, LoadSessionRequest, LoadSessionResponse,
    NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SelectedPermissionOutcome,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, ByteStreams, Client, JsonRpcRequest};
use bb_protocol::ws::{AcpRequestId, PermissionOutcome};
use bb_supervisor::{EngineProcess, ProcessSpawner, SpawnSpec};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::AcpError;
use crate::event::{AcpEvent, AcpEventKind};

/// How long `initialize`, `session/new` and `session/load` may take (an agent may boot a
/// project on its first session). Prompts are not bounded: a turn takes as long as it takes
/// and is ended with a cancel.
pub const SETUP_TIMEOUT: Duration = Duration::from_secs(120);
/// Pages of `session/list` read for one listing.
pub const MAX_LIST_PAGES: usize = 20;
/// Grace between SIGTERM and SIGKILL when a connection is closed.
pub const STOP_GRACE: Duration = Duration::from_secs(3);
/// How long a failed call waits for the process watcher to say why the agent is gone.
const EXIT_REPORT_WAIT: Duration = Duration::from_secs(2);

/// `session/update` taken raw, so an update kind the SDK's typed enum does not know is
/// still forwarded rather than rejected.
#[derive(Debug, Clone, Serialize, Deserialize, agent_client_protocol::JsonRpcNotification)]
#[notification(method = "session/update")]
#[serde(rename_all = "camelCase")]
struct RawSessionUpdate {
    session_id: String,
    update: Value,
}

/// A permission request awaiting the user's answer.
struct Pending {
    key: String,
    request_id: AcpRequestId,
    session_id: String,
    option_ids: Vec<String>,
    responder: Responder<RequestPermissionResponse>,
}

#[derive(Default)]
struct Shared {
    pending: Vec<Pending>,
    /// Sessions with a prompt in flight.
    running: HashSet<String>,
    /// Running sessions that were cancelled: later permission requests are answered
    /// `cancelled` at once.
    cancelled: HashSet<String>,
}

/// A live (or closed) connection to one agent.
pub(crate) struct Connection {
    pub(crate) id: String,
    cx: ConnectionTo<Agent>,
    shared: Arc<Mutex<Shared>>,
    events: mpsc::Sender<AcpEvent>,
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

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The ACP outcome for a wire outcome.
fn sdk_outcome(outcome: &PermissionOutcome) -> RequestPermissionOutcome {
    match outcome {
        PermissionOutcome::Cancelled => RequestPermissionOutcome::Cancelled,
        PermissionOutcome::Selected { option_id } => {
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option_id.clone()))
        }
    }
}

fn outcome_json(outcome: &PermissionOutcome) -> Value {
    serde_json::to_value(outcome).unwrap_or(Value::Null)
}

impl Connection {
    /// Spawns the agent, runs the connection and `initialize`s it.
    pub(crate) async fn start(
        id: String,
        spawner: &dyn ProcessSpawner,
        spec: SpawnSpec,
        events: mpsc::Sender<AcpEvent>,
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
        let (closed_tx, closed) = watch::channel(None);
        let (stop_tx, stop_rx) = oneshot::channel();
        let (cx_tx, cx_rx) = oneshot::channel();

        let client = client_builder(id.clone(), shared.clone(), events.clone());
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
        tokio::spawn(watch_process(
            process,
            stop_rx,
            closed_tx,
            shared.clone(),
            events.clone(),
            id.clone(),
        ));

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
            shared,
            events,
            closed,
            stop: Mutex::new(Some(stop_tx)),
            init: InitializeResponse::new(ProtocolVersion::V1),
            pid,
        };
        let request = InitializeRequest::new(ProtocolVersion::V1)
            .client_capabilities(ClientCapabilities::default())
            .client_info(Implementation::new("bb-bridge", env!("CARGO_PKG_VERSION")));
        match conn.call_bounded("initialize", request).await {
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
                Err(AcpError::Agent {
                    method,
                    message: format!("{} ({})", err.message, i32::from(err.code)),
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

    /// `session/new`.
    pub(crate) async fn new_session(
        &self,
        cwd: String,
        mcp_servers: Vec<Value>,
    ) -> Result<NewSessionResponse, AcpError> {
        let request: NewSessionRequest = from_json(json!({"cwd": cwd, "mcpServers": mcp_servers}))?;
        self.call_bounded("session/new", request).await
    }

    /// `session/load`; the history replays as session updates before the answer.
    pub(crate) async fn load_session(
        &self,
        session_id: &str,
        cwd: String,
        mcp_servers: Vec<Value>,
    ) -> Result<LoadSessionResponse, AcpError> {
        if !self.init.agent_capabilities.load_session {
            return Err(AcpError::NotSupported("session/load"));
        }
        let request: LoadSessionRequest =
            from_json(json!({"sessionId": session_id, "cwd": cwd, "mcpServers": mcp_servers}))?;
        self.call_bounded("session/load", request).await
    }

    /// `session/list`, every page (at most [`MAX_LIST_PAGES`]), when the agent offers it;
    /// `None` when it does not.
    pub(crate) async fn list_sessions(&self, cwd: String) -> Result<Option<Vec<Value>>, AcpError> {
        if self.init.agent_capabilities.session_capabilities.list.is_none() {
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
            let mut s = lock(&self.shared);
            s.running.insert(session_id.to_owned());
            s.cancelled.remove(session_id);
        }
        self.emit_state(Some(session_id), "running", Map::new()).await;
        let result =
            self.call("session/prompt", PromptRequest::new(session_id.to_owned(), prompt)).await;
        {
            let mut s = lock(&self.shared);
            s.running.remove(session_id);
            s.cancelled.remove(session_id);
        }
        let mut detail = Map::new();
        match &result {
            Ok(r) => {
                detail.insert(
                    "stopReason".to_owned(),
                    serde_json::to_value(r.stop_reason).unwrap_or(Value::Null),
                );
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

    /// `session/cancel`, then every pending permission of the session answered `cancelled`.
    pub(crate) async fn cancel(&self, session_id: &str) -> Result<(), AcpError> {
        self.ensure_open()?;
        {
            let mut s = lock(&self.shared);
            if s.running.contains(session_id) {
                s.cancelled.insert(session_id.to_owned());
            }
        }
        self.cx
            .send_notification(CancelNotification::new(session_id.to_owned()))
            .map_err(|e| AcpError::Closed { id: self.id.clone(), reason: e.message })?;
        let settled: Vec<Pending> = {
            let mut s = lock(&self.shared);
            let (mine, rest) = std::mem::take(&mut s.pending)
                .into_iter()
                .partition(|p| p.session_id == session_id);
            s.pending = rest;
            mine
        };
        for p in settled {
            self.settle(p, &PermissionOutcome::Cancelled).await;
        }
        Ok(())
    }

    /// Answers one permission request.
    pub(crate) async fn reply_permission(
        &self,
        session_id: Option<&str>,
        request_id: &AcpRequestId,
        outcome: &PermissionOutcome,
    ) -> Result<(), AcpError> {
        self.ensure_open()?;
        let key = crate::event::id_value(request_id).to_string();
        let pending = {
            let mut s = lock(&self.shared);
            let Some(at) = s
                .pending
                .iter()
                .position(|p| p.key == key && session_id.is_none_or(|sid| sid == p.session_id))
            else {
                return Err(AcpError::PermissionNotPending(key));
            };
            if let PermissionOutcome::Selected { option_id } = outcome
                && !s.pending[at].option_ids.contains(option_id)
            {
                return Err(AcpError::InvalidParams(format!(
                    "option {option_id:?} is not one of the offered options {:?}",
                    s.pending[at].option_ids
                )));
            }
            s.pending.remove(at)
        };
        self.settle(pending, outcome).await;
        Ok(())
    }

    /// Pending permission requests of a session.
    pub(crate) fn pending_count(&self, session_id: &str) -> usize {
        lock(&self.shared).pending.iter().filter(|p| p.session_id == session_id).count()
    }

    async fn settle(&self, p: Pending, outcome: &PermissionOutcome) {
        if let Err(err) = p.responder.respond(RequestPermissionResponse::new(sdk_outcome(outcome)))
        {
            tracing::warn!(connection = %self.id, %err, "answering a permission request failed");
        }
        let kind = AcpEventKind::PermissionSettled {
            session_id: p.session_id,
            request_id: p.request_id,
            outcome: outcome_json(outcome),
        };
        let _ = self.events.send(AcpEvent { connection_id: self.id.clone(), kind }).await;
    }

    async fn emit_state(
        &self,
        session_id: Option<&str>,
        state: &'static str,
        detail: Map<String, Value>,
    ) {
        let kind = AcpEventKind::State { session_id: session_id.map(str::to_owned), state, detail };
        let _ = self.events.send(AcpEvent { connection_id: self.id.clone(), kind }).await;
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

fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, AcpError> {
    serde_json::from_value(value).map_err(|e| AcpError::InvalidParams(e.to_string()))
}

/// The SDK client: session updates and permission requests go to the event channel; every
/// other agent request is answered "method not found" by the SDK.
fn client_builder(
    id: String,
    shared: Arc<Mutex<Shared>>,
    events: mpsc::Sender<AcpEvent>,
) -> agent_client_protocol::v1::Builder<Client, impl agent_client_protocol::HandleDispatchFrom<Agent>>
{
    let updates = events.clone();
    let update_id = id.clone();
    Client
        .v1()
        .name("bb-bridge")
        .on_receive_notification(
            async move |n: RawSessionUpdate, _cx| {
                let kind =
                    AcpEventKind::SessionUpdate { session_id: n.session_id, update: n.update };
                let _ = updates.send(AcpEvent { connection_id: update_id.clone(), kind }).await;
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        _cx| {
                let session_id = req.session_id.to_string();
                let raw_id = serde_json::to_value(responder.id()).unwrap_or(Value::Null);
                let request_id = match &raw_id {
                    Value::Number(n) => AcpRequestId::Number(n.as_i64().unwrap_or_default()),
                    other => AcpRequestId::Text(
                        other.as_str().map_or_else(|| other.to_string(), str::to_owned),
                    ),
                };
                let cancelled = lock(&shared).cancelled.contains(&session_id);
                if cancelled {
                    return responder.respond(RequestPermissionResponse::new(
                        RequestPermissionOutcome::Cancelled,
                    ));
                }
                let options = serde_json::to_value(&req.options).unwrap_or(Value::Null);
                let option_ids = req.options.iter().map(|o| o.option_id.to_string()).collect();
                lock(&shared).pending.push(Pending {
                    key: raw_id.to_string(),
                    request_id: request_id.clone(),
                    session_id: session_id.clone(),
                    option_ids,
                    responder,
                });
                let kind = AcpEventKind::PermissionRequest {
                    session_id,
                    request_id,
                    tool_call: serde_json::to_value(&req.tool_call).unwrap_or(Value::Null),
                    options,
                };
                let _ = events.send(AcpEvent { connection_id: id.clone(), kind }).await;
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
}

/// Owns the process: reaps it when it exits on its own, or stops it when told (or when the
/// connection is dropped). Then records why, drops the pending permissions (the agent can no
/// longer take an answer) and reports `closed`.
async fn watch_process(
    mut process: Box<dyn EngineProcess>,
    stop: oneshot::Receiver<()>,
    closed: watch::Sender<Option<String>>,
    shared: Arc<Mutex<Shared>>,
    events: mpsc::Sender<AcpEvent>,
    id: String,
) {
    let reason = tokio::select! {
        exit = process.wait() => match exit {
            Ok(info) => format!("the agent exited ({info})"),
            Err(err) => format!("the agent's exit could not be read: {err}"),
        },
        _ = stop => {
            if let Err(err) = process.terminate(STOP_GRACE).await {
                tracing::warn!(connection = %id, %err, "stopping the agent failed");
            }
            "disconnected".to_owned()
        }
    };
    tracing::info!(connection = %id, %reason, "ACP agent gone");
    let dropped = {
        let mut s = lock(&shared);
        s.running.clear();
        std::mem::take(&mut s.pending)
    };
    drop(dropped);
    let _ = closed.send(Some(reason.clone()));
    let mut detail = Map::new();
    detail.insert("reason".to_owned(), reason.into());
    let kind = AcpEventKind::State { session_id: None, state: "closed", detail };
    let _ = events.send(AcpEvent { connection_id: id, kind }).await;
}
