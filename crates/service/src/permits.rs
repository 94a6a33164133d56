//! The runtime's permission table (`bb_host::permissions`), engine-wide and shared by every
//! webview connection, with the workspace trust flag and the per-session counts it publishes.
//!
//! Engine adapters feed it what the engine raises and re-lists, and ask it before answering:
//! it decides whether a request is shown (once), whether an answer may go (once, and only
//! with trust for writes/execs), and publishes `PendingPermissions` for the session whenever
//! its open set changes, so `pendingPermissionCount` always equals that set.
//!
//! With a deadline ([`Permits::with_pending_ttl`], `--permission-timeout`), a request nobody
//! answers in time is `expired` by [`Permits::expire_due`]: the adapter tells the engine
//! `reject` and publishes the count, and a late answer is `permission_not_pending`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bb_host::Clock;
use bb_host::permissions::{
    AnswerOutcome, Change, PermissionConfig, Permissions, RequestKey, RequestKind, RequestState,
};

use crate::engine::{EngineError, EngineUpdate};

/// Counters for the spec's telemetry (`kilo.cli.permissions.prompt_count`,
/// `kilo.cli.tools.write.allow_count` / `deny_count`).
#[derive(Debug, Default)]
pub struct PermitCounters {
    /// Requests shown.
    pub prompts: AtomicU64,
    /// Write/exec requests approved.
    pub write_allow: AtomicU64,
    /// Write/exec requests denied.
    pub write_deny: AtomicU64,
}

/// One engine's requests and the workspace trust.
#[derive(Debug)]
pub struct Permits {
    engine: &'static str,
    directory: String,
    table: Mutex<Permissions>,
    /// `--trusted`: cannot be revoked by a webview.
    cli_trusted: bool,
    /// The webview's `bb.init({workspaceTrusted})`.
    trusted: AtomicBool,
    clock: Arc<dyn Clock>,
    /// Unanswered requests expire after this.
    pending_ttl: Option<Duration>,
    /// Telemetry.
    pub counters: PermitCounters,
}

impl Permits {
    /// A table for `engine` serving `directory`; `trusted` from the command line.
    pub fn new(
        engine: &'static str,
        directory: String,
        trusted: bool,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            engine,
            directory,
            table: Mutex::new(Permissions::new(PermissionConfig::default())),
            cli_trusted: trusted,
            trusted: AtomicBool::new(false),
            clock,
            pending_ttl: None,
            counters: PermitCounters::default(),
        }
    }

    /// Requests nobody answers within `ttl` expire (`None`: they wait for the user).
    #[must_use]
    pub fn with_pending_ttl(self, ttl: Option<Duration>) -> Self {
        let config = PermissionConfig { pending_ttl: ttl, ..PermissionConfig::default() };
        Self { table: Mutex::new(Permissions::new(config)), pending_ttl: ttl, ..self }
    }

    /// The deadline of pending requests, if they have one.
    pub fn pending_ttl(&self) -> Option<Duration> {
        self.pending_ttl
    }

    /// Expires the pending requests past their deadline at the clock's now; the
    /// `(session, request)` of each (tell the engine `reject`, publish the session's count).
    pub fn expire_due(&self) -> Vec<(String, String)> {
        let now = self.clock.now();
        let changes = self.lock().handle_timeout(now);
        changes.into_iter().map(|c| (c.key.session, c.key.request)).collect()
    }

    /// What kind of request this is, while the table still holds it.
    pub fn kind(&self, session: &str, request: &str) -> Option<RequestKind> {
        self.lock().get(&self.key(session, request)).map(|e| e.kind)
    }

    fn lock(&self) -> MutexGuard<'_, Permissions> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The key of one request of this engine.
    pub fn key(&self, session: &str, request: &str) -> RequestKey {
        RequestKey {
            engine: self.engine.to_owned(),
            directory: self.directory.clone(),
            session: session.to_owned(),
            request: request.to_owned(),
        }
    }

    /// Whether the workspace is trusted: `--trusted`, or the webview's latest word.
    pub fn trusted(&self) -> bool {
        self.cli_trusted || self.trusted.load(Ordering::Relaxed)
    }

    /// The webview trusts (or no longer trusts) the workspace; `--trusted` stays.
    pub fn set_trusted(&self, trusted: bool) {
        self.trusted.store(trusted, Ordering::Relaxed);
    }

    /// The open requests of a session as the update the host counts.
    pub fn count_update(&self, session: &str) -> EngineUpdate {
        let count = self.lock().pending_count(Some((self.engine, &self.directory, session)));
        EngineUpdate::PendingPermissions { session_id: session.to_owned(), count }
    }

    /// The engine raised a request; `true` when it is new (show it).
    pub fn raised(&self, session: &str, request: &str, kind: RequestKind) -> bool {
        let now = self.clock.now();
        let shown = self.lock().raised(self.key(session, request), kind, now);
        if shown {
            self.counters.prompts.fetch_add(1, Ordering::Relaxed);
        }
        shown
    }

    /// The engine says the request was answered.
    pub fn replied(&self, session: &str, request: &str) -> Option<Change> {
        self.lock().replied(&self.key(session, request))
    }

    /// The engine's list for a session after a reconnect: the new requests (to show).
    pub fn relisted(&self, session: &str, listed: Vec<(String, RequestKind)>) -> Vec<String> {
        let now = self.clock.now();
        let (shown, _) = self.lock().relisted(self.engine, &self.directory, session, listed, now);
        self.counters.prompts.fetch_add(shown.len() as u64, Ordering::Relaxed);
        shown.into_iter().map(|k| k.request).collect()
    }

    /// The user answers: the right to tell the engine, or the refusal.
    pub fn begin(&self, session: &str, request: &str, approve: bool) -> Result<(), EngineError> {
        let key = self.key(session, request);
        let mut table = self.lock();
        table
            .begin_answer(&key, approve, self.trusted())
            .map_err(|e| EngineError::refused(e.code(), e.to_string()))?;
        if table.get(&key).is_some_and(|e| e.kind.needs_trust()) {
            let counter =
                if approve { &self.counters.write_allow } else { &self.counters.write_deny };
            counter.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// How the engine took the answer.
    pub fn done(&self, session: &str, request: &str, outcome: AnswerOutcome) -> Option<Change> {
        self.lock().answer_done(&self.key(session, request), outcome)
    }

    /// Withdraws a session's open requests; the ids that were pending (tell the engine).
    pub fn cancel_session(&self, session: &str) -> Vec<String> {
        let told = self.lock().cancel_session(self.engine, &self.directory, session);
        told.into_iter().map(|c| c.key.request).collect()
    }

    /// Withdraws every open request (the engine restarted).
    pub fn cancel_all(&self) -> Vec<String> {
        let mut sessions: Vec<String> =
            self.lock().cancel_engine(self.engine).into_iter().map(|c| c.key.session).collect();
        sessions.dedup();
        sessions
    }

    /// The state of one request.
    pub fn state(&self, session: &str, request: &str) -> Option<RequestState> {
        self.lock().get(&self.key(session, request)).map(|e| e.state)
    }

    /// The sessions with an open request.
    pub fn sessions_with_open(&self) -> Vec<String> {
        self.lock().sessions_with_open(self.engine, &self.directory)
    }

    /// Whether a session has an open request.
    pub fn has_open(&self, session: &str) -> bool {
        !self.lock().open_of(self.engine, &self.directory, session).is_empty()
    }
}
