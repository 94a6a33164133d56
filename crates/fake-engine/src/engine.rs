//! The engine: shared state (sessions, faults), the axum router with bearer auth, and the
//! handle that serves it on a loopback listener.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use secrecy::ExposeSecret;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::config::{EngineConfig, Faults, ScriptSource};
use crate::error::ApiError;
use crate::session::Session;
use crate::util::wall_now;
use crate::{files, routes, sse};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// State shared by every route.
#[derive(Debug)]
pub(crate) struct EngineState {
    pub(crate) config: EngineConfig,
    faults: Mutex<Faults>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    pub(crate) started_at: Duration,
    script_cursor: AtomicUsize,
    streams: Mutex<Vec<StreamRequest>>,
    /// Permission decisions held by [`crate::DecisionFault::Hold`] right now.
    pub(crate) held_decisions: AtomicUsize,
}

/// One request of a session's event stream, as the engine saw it (for tests of resumes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamRequest {
    /// The session in the path.
    pub session_id: String,
    /// The `Last-Event-ID` header, if any.
    pub last_event_id: Option<String>,
    /// The `replay` query value, if any.
    pub replay: Option<String>,
}

impl EngineState {
    pub(crate) fn log_stream(&self, request: StreamRequest) {
        lock(&self.streams).push(request);
    }

    pub(crate) fn faults(&self) -> Faults {
        lock(&self.faults).clone()
    }

    /// The cut point of a new connection (consumes one entry of the cut plan).
    pub(crate) fn connection_cut(&self) -> Option<usize> {
        lock(&self.faults).take_connection_cut()
    }

    pub(crate) fn session(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.sessions).get(id).cloned()
    }

    pub(crate) fn sessions(&self) -> Vec<Arc<Session>> {
        let mut all: Vec<_> = lock(&self.sessions).values().cloned().collect();
        all.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        all
    }

    pub(crate) fn insert(&self, session: Arc<Session>) {
        lock(&self.sessions).insert(session.id.clone(), session);
    }

    pub(crate) fn remove(&self, id: &str) {
        lock(&self.sessions).remove(id);
    }

    /// The next configured turn script, in rotation.
    pub(crate) fn next_script(&self) -> Option<ScriptSource> {
        let scripts = &self.config.scripts;
        if scripts.is_empty() {
            return None;
        }
        let index = self.script_cursor.fetch_add(1, Ordering::Relaxed) % scripts.len();
        scripts.get(index).cloned()
    }
}

/// A fake BreadBoard engine. Cheap to clone; clones share state.
#[derive(Debug, Clone)]
pub struct FakeEngine {
    state: Arc<EngineState>,
}

impl FakeEngine {
    /// An engine with this configuration (not yet serving).
    pub fn new(config: EngineConfig) -> Self {
        let faults = config.faults.clone();
        Self {
            state: Arc::new(EngineState {
                config,
                faults: Mutex::new(faults),
                sessions: Mutex::new(HashMap::new()),
                started_at: wall_now(),
                script_cursor: AtomicUsize::new(0),
                streams: Mutex::new(Vec::new()),
                held_decisions: AtomicUsize::new(0),
            }),
        }
    }

    /// Changes the faults in force for new connections and events.
    pub fn update_faults(&self, change: impl FnOnce(&mut Faults)) {
        change(&mut lock(&self.state.faults));
    }

    /// The last `seq` a session published, `None` for an unknown session.
    pub fn last_seq(&self, session_id: &str) -> Option<u64> {
        self.state.session(session_id).map(|s| s.last_seq())
    }

    /// Every event-stream request so far, in order.
    pub fn stream_requests(&self) -> Vec<StreamRequest> {
        lock(&self.state.streams).clone()
    }

    /// How many events a session's ring holds.
    pub fn ring_len(&self, session_id: &str) -> Option<usize> {
        self.state.session(session_id).map(|s| s.ring_len())
    }

    /// How many permission decisions [`crate::DecisionFault::Hold`] holds right now (their
    /// senders waiting, nothing decided).
    pub fn held_decisions(&self) -> usize {
        self.state.held_decisions.load(Ordering::SeqCst)
    }

    /// Whether a session has a permission request waiting for an answer.
    pub fn has_pending_permission(&self, session_id: &str) -> bool {
        self.state.session(session_id).is_some_and(|s| s.has_pending_permission())
    }

    /// The HTTP routes of the engine.
    pub fn router(&self) -> Router {
        let state = Arc::clone(&self.state);
        Router::new()
            .route("/health", get(routes::health))
            .route("/ready", get(routes::ready))
            .route("/status", get(routes::status))
            .route("/v1/status", get(routes::status))
            .route("/v1/models", get(routes::models))
            .route("/v1/sessions", post(routes::create).get(routes::list))
            .route("/v1/sessions/{id}", get(routes::get_one).delete(routes::delete))
            .route("/v1/sessions/{id}/input", post(routes::input))
            .route("/v1/sessions/{id}/command", post(routes::command))
            .route("/v1/sessions/{id}/events", get(sse::events))
            .route("/v1/sessions/{id}/files", get(files::list))
            .route("/v1/sessions/{id}/files/content", get(files::content))
            .route("/v1/sessions/{id}/download", get(files::download))
            .route("/v1/sessions/{id}/attachments", post(files::attachments))
            .route("/v1/sessions/{id}/skills", get(routes::skills))
            .route("/v1/sessions/{id}/ctrees", get(routes::ctrees))
            .route("/v1/sessions/{id}/records", get(routes::records))
            .fallback(not_found_route)
            .layer(middleware::from_fn_with_state(Arc::clone(&state), auth))
            .with_state(state)
    }

    /// Serves the engine on `addr` (port 0 picks a free port) until the handle is dropped.
    pub async fn serve(self, addr: SocketAddr) -> std::io::Result<RunningEngine> {
        let listener = TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let app = self.router();
        let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async {
                // A dropped sender (the handle aborted instead) also ends the wait.
                let _ = stopped.await;
            });
            if let Err(error) = serve.await {
                tracing::warn!(%error, "fake engine server stopped");
            }
        });
        Ok(RunningEngine {
            url: format!("http://{local}"),
            engine: self,
            task: Some(task),
            shutdown: Some(shutdown),
        })
    }
}

/// A serving fake engine; stops serving when dropped.
#[derive(Debug)]
pub struct RunningEngine {
    url: String,
    engine: FakeEngine,
    task: Option<JoinHandle<()>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl RunningEngine {
    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The engine, to change faults or inspect sessions.
    pub fn engine(&self) -> &FakeEngine {
        &self.engine
    }

    /// Serves until the server task ends (it does not on its own).
    pub async fn wait(mut self) {
        if let Some(task) = self.task.take() {
            // The server task only ends on an IO error, already logged.
            let _ = task.await;
        }
    }
}

impl RunningEngine {
    /// Stops like a killed engine process: the sessions (which live in memory) are gone,
    /// every open event stream ends, the listener closes and so does every idle connection.
    /// The port may then be served again by a new engine (an engine restart).
    pub fn stop(mut self) {
        for session in self.engine.state.sessions() {
            session.close_inputs();
            session.end_log();
            self.engine.state.remove(&session.id);
        }
        if let Some(shutdown) = self.shutdown.take() {
            // The server may already have stopped on an IO error.
            let _ = shutdown.send(());
        }
        // Detached, not aborted: the graceful shutdown closes the open connections.
        drop(self.task.take());
    }
}

impl Drop for RunningEngine {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

async fn auth(State(state): State<Arc<EngineState>>, request: Request, next: Next) -> Response {
    if let Some(token) = &state.config.token {
        // Compared in place: no copy of the token outlives its `SecretString`.
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if given != Some(token.expose_secret()) {
            return ApiError::unauthorized().into_response();
        }
    }
    next.run(request).await
}

async fn not_found_route() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"detail":"Not Found"}"#,
    )
        .into_response()
}
