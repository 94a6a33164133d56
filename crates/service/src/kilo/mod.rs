//! The Kilo CLI server adapter: the v1 methods over Kilo's REST routes, and one `GET /event`
//! stream per workspace turned into engine updates.
//!
//! The adapter starts unbound; [`EngineAdapter::reconnect`] binds it to an engine endpoint
//! (the supervisor's freshly started engine, or the URL given with `--engine-url`) and
//! (re)starts the event stream. While unbound, calls answer `engine_unavailable` and
//! `bb.init` reports the engine as `starting`.
//!
//! Choices: `bb.createSession` passes `task` as the session title (Kilo has no separate task
//! field; the first message carries the task); `configPath`, `model` and `permissionMode`
//! are not supported by this engine's session API and are rejected with `invalid_request`
//! rather than silently ignored. `bb.sendMessage` with `attachmentIds` is rejected the same
//! way. `sync` events are not forwarded (they repeat the previous event under the same id);
//! their sequence numbers detect gaps.

mod events;
mod probe;
mod rest;
mod stream;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bb_engine_client::transport::{EngineTransport, HttpOptions};
use bb_protocol::v1::{
    Capabilities, CreateSessionParams, EngineInfo, EngineKind, EngineStatus, InitResult,
    ListSessionsResult, SendMessageParams, SendMessageResult, SessionAck, SessionParams,
    SessionSummary,
};
use bb_supervisor::kilo::EngineEndpoint;
use tokio::task::JoinHandle;

pub use probe::KiloProbe;

use crate::engine::{EngineAdapter, EngineError, UpdateReceiver, UpdateSender, update_channel};
use events::session_summary;
use stream::StreamPolicy;

#[derive(Debug)]
struct Bound {
    transport: Arc<dyn EngineTransport>,
    stream: JoinHandle<()>,
}

/// The Kilo engine adapter.
#[derive(Debug)]
pub struct KiloAdapter {
    updates: UpdateSender,
    bound: Mutex<Option<Bound>>,
    version: Mutex<Option<String>>,
    options: HttpOptions,
    policy: StreamPolicy,
}

impl KiloAdapter {
    /// An unbound adapter and the receiver of its updates.
    pub fn new() -> (Arc<Self>, UpdateReceiver) {
        let (tx, rx) = update_channel();
        let adapter = Self {
            updates: tx,
            bound: Mutex::new(None),
            version: Mutex::new(None),
            options: HttpOptions::default(),
            policy: StreamPolicy::default(),
        };
        (Arc::new(adapter), rx)
    }

    /// Binds to any transport (tests use in-memory ones) and starts the event stream.
    pub fn bind(&self, transport: Arc<dyn EngineTransport>) {
        let stream =
            tokio::spawn(stream::run(transport.clone(), self.updates.clone(), self.policy));
        let previous = self.lock_bound().replace(Bound { transport, stream });
        if let Some(old) = previous {
            old.stream.abort();
        }
        *self.version.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    fn lock_bound(&self) -> std::sync::MutexGuard<'_, Option<Bound>> {
        self.bound.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn transport(&self) -> Result<Arc<dyn EngineTransport>, EngineError> {
        self.lock_bound()
            .as_ref()
            .map(|b| b.transport.clone())
            .ok_or_else(|| EngineError::Unavailable("the engine is starting".into()))
    }
}

fn rejected(what: &str) -> EngineError {
    EngineError::InvalidRequest(format!("{what} is not supported by the Kilo engine"))
}

fn summary_of(value: &serde_json::Value) -> Result<SessionSummary, EngineError> {
    session_summary(value)
        .ok_or_else(|| EngineError::Engine("the engine answered a session without an id".into()))
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
        let capabilities = Capabilities { sessions: true, ..Capabilities::default() };
        let (status, version) = match self.transport() {
            Err(_) => (EngineStatus::Starting, None),
            Ok(transport) => match rest::health(transport.as_ref()).await {
                Ok(version) => {
                    *self.version.lock().unwrap_or_else(|p| p.into_inner()) = Some(version.clone());
                    (EngineStatus::Ready, Some(version))
                }
                Err(EngineError::Auth { status }) => return Err(EngineError::Auth { status }),
                Err(_) => (
                    EngineStatus::Reconnecting,
                    self.version.lock().unwrap_or_else(|p| p.into_inner()).clone(),
                ),
            },
        };
        Ok(InitResult {
            protocol_version: 1,
            engine: EngineInfo { kind: EngineKind::Kilo, status, version },
            capabilities,
        })
    }

    async fn create_session(
        &self,
        params: CreateSessionParams,
    ) -> Result<SessionSummary, EngineError> {
        if params.config_path.is_some() {
            return Err(rejected("configPath"));
        }
        if params.model.is_some() {
            return Err(rejected("model"));
        }
        if params.permission_mode.is_some() {
            return Err(rejected("permissionMode"));
        }
        let transport = self.transport()?;
        summary_of(&rest::create_session(transport.as_ref(), params.task.as_deref()).await?)
    }

    async fn list_sessions(&self) -> Result<ListSessionsResult, EngineError> {
        let transport = self.transport()?;
        let mut sessions: Vec<SessionSummary> = rest::list_sessions(transport.as_ref())
            .await?
            .iter()
            .filter_map(session_summary)
            .collect();
        sessions
            .sort_by(|a, b| b.updated_at.unwrap_or(0.0).total_cmp(&a.updated_at.unwrap_or(0.0)));
        Ok(ListSessionsResult { sessions })
    }

    async fn select_session(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        let transport = self.transport()?;
        let session = rest::get_session(transport.as_ref(), &params.session_id).await?;
        Ok(SessionAck { session_id: summary_of(&session)?.session_id })
    }

    async fn delete_session(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        let transport = self.transport()?;
        rest::delete_session(transport.as_ref(), &params.session_id).await?;
        Ok(SessionAck { session_id: params.session_id })
    }

    async fn send_message(
        &self,
        params: SendMessageParams,
    ) -> Result<SendMessageResult, EngineError> {
        if params.attachment_ids.as_ref().is_some_and(|a| !a.is_empty()) {
            return Err(rejected("attachmentIds"));
        }
        let transport = self.transport()?;
        rest::prompt_async(transport.as_ref(), &params.session_id, &params.text).await?;
        Ok(SendMessageResult { session_id: params.session_id, message_id: None })
    }

    async fn stop(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        let transport = self.transport()?;
        // Kilo answers `true` for unknown ids too: check the session exists first.
        rest::get_session(transport.as_ref(), &params.session_id).await?;
        rest::abort(transport.as_ref(), &params.session_id).await?;
        Ok(SessionAck { session_id: params.session_id })
    }

    async fn reconnect(&self, endpoint: EngineEndpoint) -> Result<(), EngineError> {
        let transport = probe::transport_for(&endpoint, self.options)
            .map_err(|e| EngineError::InvalidRequest(e.to_string()))?;
        self.bind(Arc::new(transport));
        Ok(())
    }

    async fn shutdown(&self) {
        if let Some(bound) = self.lock_bound().take() {
            bound.stream.abort();
        }
    }
}
