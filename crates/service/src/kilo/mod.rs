//! The Kilo CLI server adapter: the v1 methods over `bb-engine-client`'s Kilo REST client,
//! and its one-`GET /event`-stream router turned into engine updates.
//!
//! The adapter starts unbound; [`EngineAdapter::reconnect`] binds it to an engine endpoint
//! (the supervisor's freshly started engine, or the URL given with `--engine-url`) and
//! (re)starts the event router. While unbound, calls answer `engine_unavailable` and
//! `bb.init` reports the engine as `starting`.
//!
//! # Choices
//!
//! * `bb.createSession` passes `task` as the session title (Kilo has no separate task field;
//!   the first message carries the task); `configPath`, `model` and `permissionMode` have no
//!   counterpart in Kilo's session API and are rejected with `invalid_request` rather than
//!   silently ignored, as is `bb.sendMessage` with `attachmentIds`.
//! * `bb.stop` checks the session exists first: Kilo answers `true` to an abort of any id.
//! * `sync` events are not forwarded: each repeats the previous event under the same id (the
//!   webview would see a duplicate id); their per-session `seq` is checked instead and a jump
//!   reports a gap. Events of no session (`server.*`, instance noise) are not forwarded.
//! * After a reconnect, each session the adapter has touched is rebuilt from REST by the
//!   router; the snapshot reaches the webview as a bridge-made `bb.session.rehydrated` event
//!   (`payload: {sessionID, status, messages, permissions}`, id `bb-rehydrate-N`) ahead of
//!   the live events, and `bb/connection` carries `gapDetected`.

mod errors;
pub(crate) mod events;
mod probe;
mod pump;
mod stamp;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use bb_engine_client::kilo::{
    CreateSession, KiloClient, KiloRouterHandle, PromptRequest, RouterOptions, Session,
    spawn_router,
};
use bb_engine_client::transport::{EngineAuth, EngineTransport, HttpOptions, HttpTransport};
use bb_protocol::v1::{
    Capabilities, ConnectionStatus, CreateSessionParams, EngineInfo, EngineKind, EngineStatus,
    InitResult, ListSessionsResult, SendMessageParams, SendMessageResult, SessionAck,
    SessionParams, SessionSummary,
};
use tokio::task::JoinHandle;

pub use probe::KiloProbe;
pub use pump::REHYDRATED_EVENT;

use crate::Endpoint;
use crate::engine::{EngineAdapter, EngineError, UpdateReceiver, UpdateSender, update_channel};
use errors::{checked_session_id, map};

#[derive(Debug)]
struct Bound {
    client: KiloClient,
    router: KiloRouterHandle,
    pump: JoinHandle<()>,
}

impl Drop for Bound {
    fn drop(&mut self) {
        self.pump.abort();
    }
}

/// The Kilo engine adapter.
#[derive(Debug)]
pub struct KiloAdapter {
    updates: UpdateSender,
    bound: Mutex<Option<Bound>>,
    /// Sessions the webview touched: rebuilt after every reconnect, also of a restarted engine.
    tracked: Mutex<BTreeSet<String>>,
    options: HttpOptions,
}

fn summary(session: &Session) -> SessionSummary {
    SessionSummary {
        session_id: session.id.clone(),
        title: Some(session.title.clone()).filter(|t| !t.is_empty()),
        status: None,
        // Milliseconds since the epoch fit an f64 exactly for the next 285 000 years.
        updated_at: session.time.updated.map(|ms| ms as f64),
    }
}

fn rejected(what: &str) -> EngineError {
    EngineError::InvalidRequest(format!("{what} is not supported by the Kilo engine"))
}

impl KiloAdapter {
    /// An unbound adapter and the receiver of its updates.
    pub fn new() -> (Arc<Self>, UpdateReceiver) {
        let (updates, rx) = update_channel();
        let adapter = Self {
            updates,
            bound: Mutex::new(None),
            tracked: Mutex::new(BTreeSet::new()),
            options: HttpOptions::default(),
        };
        (Arc::new(adapter), rx)
    }

    /// Binds to any transport (tests use in-memory ones) and starts the event router.
    pub fn bind(&self, transport: Arc<dyn EngineTransport>) {
        let client = KiloClient::new(transport);
        let (router, router_updates) = spawn_router(client.clone(), RouterOptions::default());
        let updates = self.updates.clone();
        let pump = tokio::spawn(async move {
            let _ = updates.try_send(pump::connection(ConnectionStatus::Connecting, None, None));
            pump::run(router_updates, updates).await;
        });
        for id in self.lock_tracked().iter() {
            router.track(id.clone());
        }
        let bound = Bound { client, router, pump };
        // The previous router and pump stop when dropped.
        *self.lock() = Some(bound);
    }

    fn lock(&self) -> MutexGuard<'_, Option<Bound>> {
        self.bound.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_tracked(&self) -> MutexGuard<'_, BTreeSet<String>> {
        self.tracked.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn client(&self) -> Result<KiloClient, EngineError> {
        self.lock().as_ref().map(|b| b.client.clone()).ok_or_else(|| {
            EngineError::Unavailable("the engine is not running (starting or restarting)".into())
        })
    }

    /// Rebuild this session after reconnects.
    fn track(&self, session_id: &str) {
        if self.lock_tracked().insert(session_id.to_owned())
            && let Some(bound) = self.lock().as_ref()
        {
            bound.router.track(session_id);
        }
    }

    fn untrack(&self, session_id: &str) {
        self.lock_tracked().remove(session_id);
        if let Some(bound) = self.lock().as_ref() {
            bound.router.untrack(session_id);
        }
    }
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
        Ok(InitResult { protocol_version: 1, engine, capabilities })
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
        let request = CreateSession { title: params.task, parent_id: None };
        let session = self.client()?.create_session(&request).await.map_err(|e| map(e, None))?;
        self.track(&session.id);
        Ok(summary(&session))
    }

    async fn list_sessions(&self) -> Result<ListSessionsResult, EngineError> {
        let listed = self.client()?.list_sessions().await.map_err(|e| map(e, None))?;
        let mut sessions: Vec<SessionSummary> = listed.iter().map(summary).collect();
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
        Ok(SessionAck { session_id: params.session_id })
    }

    async fn send_message(
        &self,
        params: SendMessageParams,
    ) -> Result<SendMessageResult, EngineError> {
        if params.attachment_ids.as_ref().is_some_and(|a| !a.is_empty()) {
            return Err(rejected("attachmentIds"));
        }
        let id = checked_session_id(&params.session_id)?;
        let prompt = PromptRequest::text(params.text);
        self.client()?.prompt_async(id, &prompt).await.map_err(|e| map(e, Some(id)))?;
        self.track(id);
        Ok(SendMessageResult { session_id: params.session_id, message_id: None })
    }

    async fn stop(&self, params: SessionParams) -> Result<SessionAck, EngineError> {
        let id = checked_session_id(&params.session_id)?;
        let client = self.client()?;
        client.get_session(id).await.map_err(|e| map(e, Some(id)))?;
        client.abort(id).await.map_err(|e| map(e, Some(id)))?;
        Ok(SessionAck { session_id: params.session_id })
    }

    async fn reconnect(&self, endpoint: Endpoint) -> Result<(), EngineError> {
        let Endpoint::Http { base_url, auth } = endpoint;
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

    async fn shutdown(&self) {
        self.lock().take();
    }
}
