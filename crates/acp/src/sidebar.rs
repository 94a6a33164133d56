//! `bb-sidecar --engine acp -- <agent command…>`: the v1 methods on any ACP agent.
//!
//! One agent per bridge, started at launch through an [`AcpHub`]. `bb.createSession` →
//! `session/new`; `bb.sendMessage` → `session/prompt` (answered at once, the turn runs in
//! the background and streams); `bb.stop` → `session/cancel`; `bb.approvePermission` → the
//! answer to the agent's `session/request_permission` once the host allowed it (the host
//! owns the prompt and the trust gate); `bb.listSessions` → the sessions this
//! bridge opened, then those the agent's `session/list` names for the workspace (when it
//! offers it; at most 20 pages). Everything else is `not_supported`.
//!
//! Events: every `session/update` is one event whose `type` is its `sessionUpdate` kind
//! (payload = the update); the bridge adds `request_permission {requestId, toolCall,
//! options}`, `permission_settled {requestId, outcome}`, `turn_started`, `turn_ended
//! {stopReason}`, `turn_error {code, message}`. Ids are `acp-<n>`, counting per bridge.
//! `bb_normalize::classify_acp` gives their classes.
//!
//! Decisions map onto the offered options by kind: `allow_once` → `allow_once`,
//! `allow_rule` → `allow_always` (else `allow_once`), `deny` → `reject_once` (else
//! `reject_always`). The request's kind for trust comes from the tool call's `kind`: `read`,
//! `search`, `think` are reads, `fetch` reaches the network; `edit`, `delete`, `move` write
//! (the paths are its `locations`); `execute` runs a command; anything else is unknown
//! (needs trust). An update or request of a session this bridge did not open comes from a
//! sub-agent: it is listed under the one session whose turn runs, so its prompts show on
//! that session's tab.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use bb_host::{Input, Prompt, PromptKind, Verdict};
use bb_normalize::EventClass;
use bb_protocol::v1::{
    Capabilities, ConnectionStatus, CreateSessionParams, EngineEvent, EngineInfo, EngineKind,
    EngineStatus, InitResult, ListSessionsResult, SendMessageParams, SendMessageResult, SessionAck,
    SessionParams, SessionSummary,
};
use bb_protocol::ws::{
    AcpConnectParams, AcpPermissionReplyParams, AcpRequestId, AcpSessionCancelParams,
    AcpSessionNewParams, AcpSessionPromptParams, ContentBlock, PermissionOutcome,
};
use bb_service::{
    EngineAdapter, EngineError, InputReceiver, InputSender, PromptAnswer, input_channel,
};
use bb_supervisor::ProcessSpawner;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

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
}

/// The ACP engine adapter.
#[derive(Debug)]
pub struct AcpAdapter {
    hub: Arc<AcpHub>,
    conn: String,
    version: String,
    workspace: PathBuf,
    state: Arc<Mutex<State>>,
    updates: InputSender,
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

impl AcpAdapter {
    /// Starts the agent (`command[0]` with the rest as arguments, cwd = the workspace) and
    /// `initialize`s it; returns the adapter and its updates.
    pub async fn start(
        policy: LaunchPolicy,
        spawner: Arc<dyn ProcessSpawner>,
        command: Vec<String>,
    ) -> Result<(Arc<Self>, InputReceiver), EngineError> {
        let Some((program, args)) = command.split_first() else {
            return Err(EngineError::InvalidRequest(
                "--engine acp needs the agent command after `--`, e.g. `-- kilo acp`".to_owned(),
            ));
        };
        let workspace = policy.workspace.clone();
        let (hub, events) = AcpHub::new(policy, spawner);
        let hub = Arc::new(hub);
        let info = hub
            .connect(AcpConnectParams {
                command: program.clone(),
                args: Some(args.to_vec()),
                env: None,
                cwd: None,
            })
            .await
            .map_err(engine_error)?;
        tracing::info!(agent = %info.agent_info.name, version = %info.agent_info.version, "ACP agent ready");
        let (updates, rx) = input_channel();
        let adapter = Arc::new(Self {
            hub,
            conn: info.id,
            version: info.agent_info.version,
            workspace,
            state: Arc::default(),
            updates: updates.clone(),
        });
        tokio::spawn(pump(events, updates, adapter.state.clone()));
        Ok((adapter, rx))
    }

    fn known(&self, session: &str) -> Result<(), EngineError> {
        if lock(&self.state).sessions.iter().any(|s| s.session_id == session) {
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
        let status = match self.hub.status(&self.conn) {
            Ok(bb_protocol::ws::AcpConnectionStatus::Ready) => EngineStatus::Ready,
            _ => EngineStatus::Failed,
        };
        Ok(InitResult {
            protocol_version: 1,
            engine: EngineInfo {
                kind: EngineKind::Acp,
                status,
                version: Some(self.version.clone()),
            },
            capabilities: Capabilities {
                sessions: true,
                permissions: true,
                ..Capabilities::default()
            },
        })
    }

    async fn create_session(
        &self,
        params: CreateSessionParams,
    ) -> Result<SessionSummary, EngineError> {
        if params.config_path.is_some()
            || params.model.is_some()
            || params.permission_mode.is_some()
        {
            return Err(EngineError::refused(
                "invalid_params",
                "the acp engine takes no configPath, model or permissionMode at session creation",
            ));
        }
        let (id, _answer) = self
            .hub
            .session_new_full(AcpSessionNewParams {
                connection_id: self.conn.clone(),
                cwd: Some(self.workspace.display().to_string()),
                mcp_servers: None,
            })
            .await
            .map_err(engine_error)?;
        let summary = SessionSummary {
            session_id: id,
            title: params.task,
            status: Some("idle".to_owned()),
            updated_at: None,
            queued_prompts: None,
            parent_id: None,
            pending_permission_count: None,
        };
        lock(&self.state).sessions.push(summary.clone());
        let _ = self.updates.send(Input::SessionUpserted(summary.clone())).await;
        Ok(summary)
    }

    async fn list_sessions(&self) -> Result<ListSessionsResult, EngineError> {
        let listed = self.hub.list_sessions(&self.conn, None).await.map_err(engine_error)?;
        let mut sessions = lock(&self.state).sessions.clone();
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
                parent_id: None,
                pending_permission_count: None,
            });
        }
        Ok(ListSessionsResult { sessions })
    }

    async fn delete_session(&self, _params: SessionParams) -> Result<SessionAck, EngineError> {
        Err(EngineError::NotSupported { method: "bb.deleteSession", engine: NAME })
    }

    async fn send_message(
        &self,
        params: SendMessageParams,
    ) -> Result<SendMessageResult, EngineError> {
        if params.attachment_ids.as_ref().is_some_and(|a| !a.is_empty()) {
            return Err(EngineError::refused(
                "invalid_params",
                "the acp engine takes no attachmentIds",
            ));
        }
        self.known(&params.session_id)?;
        if let Some(err) = self.hub.closed_error(&self.conn) {
            return Err(engine_error(err));
        }
        let hub = self.hub.clone();
        let prompt = AcpSessionPromptParams {
            connection_id: self.conn.clone(),
            session_id: params.session_id.clone(),
            prompt: vec![ContentBlock::Text { text: params.text, annotations: None }],
        };
        // The turn runs on; its end arrives as `turn_ended` (or `turn_error`).
        tokio::spawn(async move {
            if let Err(err) = hub.session_prompt(prompt).await {
                tracing::info!(%err, "ACP prompt failed");
            }
        });
        Ok(SendMessageResult { session_id: params.session_id, message_id: None })
    }

    async fn stop(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        self.known(&params.session_id)?;
        self.hub
            .session_cancel(AcpSessionCancelParams {
                connection_id: self.conn.clone(),
                session_id: params.session_id.clone(),
            })
            .await
            .map_err(engine_error)?;
        Ok(SessionAck { session_id: params.session_id })
    }

    async fn answer(&self, answer: PromptAnswer) -> Result<(), EngineError> {
        let session = answer.prompt.session_id.clone();
        let key = (session.clone(), answer.prompt.request_id.clone());
        let asked = lock(&self.state).asked.get(&key).cloned();
        let Some(asked) = asked else {
            return Err(EngineError::refused(
                "permission_not_pending",
                format!("no permission request {} is waiting in session {session}", key.1),
            ));
        };
        let wanted: &[&str] = match (answer.verdict, answer.remember) {
            (Verdict::Deny, _) => &["reject_once", "reject_always"],
            (_, true) => &["allow_always", "allow_once"],
            (_, false) => &["allow_once"],
        };
        let option = pick_option(&asked.options, wanted).ok_or_else(|| {
            let message = format!("the agent offered no option of {wanted:?}");
            EngineError::refused("invalid_params", message)
        })?;
        let result = self
            .hub
            .permission_reply(AcpPermissionReplyParams {
                connection_id: self.conn.clone(),
                session_id: Some(session),
                request_id: asked.request_id,
                outcome: PermissionOutcome::Selected { option_id: option },
            })
            .await;
        match result {
            Ok(()) => {
                lock(&self.state).asked.remove(&key);
                Ok(())
            }
            Err(err @ AcpError::PermissionNotPending(_)) => {
                lock(&self.state).asked.remove(&key);
                Err(EngineError::refused("permission_not_pending", err.to_string()))
            }
            Err(err) => Err(engine_error(err)),
        }
    }

    async fn shutdown(&self) {
        self.hub.close_all().await;
    }
}

/// The first offered option of the `wanted` kinds, in that order.
fn pick_option(options: &[(String, String)], wanted: &[&str]) -> Option<String> {
    wanted.iter().find_map(|k| options.iter().find(|(_, kind)| kind == k).map(|(id, _)| id.clone()))
}

/// The prompt a permission request raises: what approving would let the agent do (from the
/// tool call's `kind`) and the paths it names (its `locations`).
fn prompt(session: &str, request: &str, tool_call: &Value) -> Prompt {
    let kind = match tool_call.get("kind").and_then(Value::as_str) {
        Some("read" | "search" | "think") => PromptKind::Read,
        Some("fetch") => PromptKind::Network,
        Some("edit" | "delete" | "move") => PromptKind::Write,
        Some("execute") => PromptKind::Exec,
        _ => PromptKind::Unknown,
    };
    let mut prompt = Prompt::new(session, request, kind);
    let locations = tool_call.get("locations").and_then(Value::as_array).into_iter().flatten();
    prompt.paths = locations.filter_map(|l| l.get("path")?.as_str().map(str::to_owned)).collect();
    prompt
}

fn request_key(id: &AcpRequestId) -> String {
    match id {
        AcpRequestId::Text(s) => s.clone(),
        AcpRequestId::Number(n) => n.to_string(),
    }
}

/// One event of `session` as the host's input, with its class from the ACP table.
fn event(
    session: &str,
    id: String,
    kind: &str,
    mut payload: Map<String, Value>,
) -> (EngineEvent, EventClass) {
    payload.entry("sessionId").or_insert_with(|| session.into());
    let payload = Value::Object(payload);
    let class = bb_normalize::class::classify_acp(kind, &payload);
    let payload = payload.into();
    (EngineEvent { id, event_type: kind.to_owned(), turn: None, ts: None, payload }, class)
}

/// Hub events → host inputs, in order.
async fn pump(
    mut events: mpsc::Receiver<AcpEvent>,
    updates: InputSender,
    state: Arc<Mutex<State>>,
) {
    let seq = AtomicU64::new(0);
    let next = || format!("acp-{}", seq.fetch_add(1, Ordering::Relaxed) + 1);
    let shown = |session: &str, kind: &str, payload: Map<String, Value>| Input::Events {
        session_id: session.to_owned(),
        events: vec![event(session, next(), kind, payload)],
    };
    let mut running: Vec<String> = Vec::new();
    while let Some(ev) = events.recv().await {
        let mut out = Vec::new();
        if let Some(session) = ev.kind.session_id()
            && let Some(child) = sub_agent(&state, &running, session)
        {
            out.push(child);
        }
        match ev.kind {
            AcpEventKind::SessionUpdate { session_id, update } => {
                let kind = update
                    .get("sessionUpdate")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown_update")
                    .to_owned();
                let payload = match update {
                    Value::Object(map) => map,
                    other => Map::from_iter([("update".to_owned(), other)]),
                };
                out.push(shown(&session_id, &kind, payload));
            }
            AcpEventKind::State { session_id: Some(session), state: s, detail } => {
                let is_running = s == "running";
                let kind = match (s, detail.contains_key("error")) {
                    ("running", _) => "turn_started",
                    (_, true) => "turn_error",
                    _ => "turn_ended",
                };
                let payload = match detail.get("error") {
                    Some(Value::Object(e)) => e.clone(),
                    _ => detail,
                };
                out.push(shown(&session, kind, payload));
                running.retain(|r| *r != session);
                if is_running {
                    running.push(session.clone());
                } else {
                    // A turn that ended leaves no request of it open.
                    lock(&state).asked.retain(|(s, _), _| *s != session);
                    let listed = Vec::new();
                    out.push(Input::PromptsListed { session_id: session.clone(), prompts: listed });
                }
                out.push(Input::SessionRunning { session_id: session, running: is_running });
            }
            AcpEventKind::State { session_id: None, detail, .. } => {
                let reason = detail.get("reason").and_then(Value::as_str).unwrap_or("closed");
                let why = format!("the ACP agent is gone: {reason}");
                out.push(Input::connection(ConnectionStatus::Error, None, Some(why)));
                let sessions: Vec<String> =
                    lock(&state).sessions.iter().map(|s| s.session_id.clone()).collect();
                for session in sessions {
                    let payload = Map::from_iter([("reason".to_owned(), json!(reason))]);
                    out.push(shown(&session, "agent_exited", payload));
                }
            }
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
                lock(&state).asked.insert(
                    (session_id.clone(), key.clone()),
                    Asked { request_id, options: offered },
                );
                let raised = prompt(&session_id, &key, &tool_call);
                let payload = Map::from_iter([
                    ("requestId".to_owned(), json!(key)),
                    ("toolCall".to_owned(), tool_call),
                    ("options".to_owned(), options),
                ]);
                let shows = event(&session_id, next(), "request_permission", payload);
                out.push(Input::PromptRaised { prompt: raised, event: Some(shows) });
            }
            AcpEventKind::PermissionSettled { session_id, request_id, outcome } => {
                let key = request_key(&request_id);
                lock(&state).asked.remove(&(session_id.clone(), key.clone()));
                let payload = Map::from_iter([
                    ("requestId".to_owned(), json!(key.clone())),
                    ("outcome".to_owned(), outcome),
                ]);
                let says = event(&session_id, next(), "permission_settled", payload);
                out.push(Input::PromptSettled { session_id, request_id: key, event: Some(says) });
            }
        }
        for update in out {
            if updates.send(update).await.is_err() {
                return;
            }
        }
    }
}

/// A session this bridge did not open, seen for the first time while exactly one of its
/// sessions runs a turn: a sub-agent of that session, listed with it as parent.
fn sub_agent(state: &Mutex<State>, running: &[String], session: &str) -> Option<Input> {
    let mut state = lock(state);
    if state.sessions.iter().any(|s| s.session_id == session) {
        return None;
    }
    let [parent] = running else { return None };
    let child = SessionSummary {
        session_id: session.to_owned(),
        parent_id: Some(parent.clone()),
        ..SessionSummary::default()
    };
    state.sessions.push(child.clone());
    Some(Input::SessionUpserted(child))
}
