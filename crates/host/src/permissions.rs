//! The engine-neutral permission (and question) state machine: one entry per request, keyed
//! by engine, directory, session and request id, moving
//! `pending → answering → settled | stale | expired | cancelled`. Pure: time is passed in.
//!
//! # Rules
//!
//! * **Shown once.** [`Permissions::raised`] says `show: true` only the first time a key is
//!   seen; a repeat (the engine's event after a re-list, a reconnect, a second connection)
//!   is not shown again.
//! * **Answered at most once.** [`Permissions::begin_answer`] moves `pending → answering`
//!   and hands out the one right to tell the engine; anything not `pending` (unknown,
//!   answering, settled, stale, expired, cancelled) is [`AnswerError::NotPending`]
//!   (`permission_not_pending`).
//! * **Trust.** While the workspace is untrusted, approving a request whose
//!   [`RequestKind::needs_trust`] is true is [`AnswerError::Untrusted`]
//!   (`workspace_untrusted`) and the request stays `pending`; denying always works.
//! * **The pending set** is every entry in `pending` or `answering` (both still block the
//!   engine); [`Permissions::pending_count`] is its size, per session or in total.
//! * **Re-list.** After a reconnect the engine's list is the truth for a session: listed keys
//!   not known yet are raised (and shown); `pending` keys it no longer lists are `stale`,
//!   `answering` ones it no longer lists are `settled` (the answer landed).
//! * **Expiry** is optional ([`PermissionConfig::pending_ttl`]): a `pending` entry older than
//!   it becomes `expired` at [`Permissions::handle_timeout`].
//! * Finished entries are kept (bounded, oldest first out) so a late answer gets
//!   `permission_not_pending` naming what happened.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

/// Identity of one request.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestKey {
    /// The engine (`kilo`, `breadboard`, `acp`).
    pub engine: String,
    /// The workspace directory the engine instance serves.
    pub directory: String,
    /// The engine session.
    pub session: String,
    /// The engine's request id (`per_…`, `que_…`).
    pub request: String,
}

/// What a request would let the engine do: decides whether approving needs trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    /// Reads only (read, glob, grep, list, fetch).
    Read,
    /// Writes files (edit, write, patch).
    Write,
    /// Runs commands (bash, shell).
    Exec,
    /// A question to the user; answering changes nothing in the workspace.
    Question,
    /// Anything else: treated like a write (fail closed).
    Other,
}

impl RequestKind {
    /// Whether approving it needs a trusted workspace.
    pub fn needs_trust(self) -> bool {
        matches!(self, Self::Write | Self::Exec | Self::Other)
    }
}

/// Where a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestState {
    /// Waiting for the user.
    Pending,
    /// An answer is on its way to the engine.
    Answering {
        /// Whether the answer approves.
        approve: bool,
    },
    /// The engine took an answer.
    Settled,
    /// The engine no longer knows the request.
    Stale,
    /// Nobody answered within the deadline.
    Expired,
    /// Withdrawn by the bridge (stop, session deleted, engine restarted).
    Cancelled,
}

impl RequestState {
    /// Still blocking the engine (`pending` or `answering`).
    pub fn is_open(self) -> bool {
        matches!(self, Self::Pending | Self::Answering { .. })
    }

    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Answering { .. } => "being answered",
            Self::Settled => "already answered",
            Self::Stale => "no longer known to the engine",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
        }
    }
}

/// Why an answer may not go to the engine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// Not pending (`permission_not_pending`).
    #[error("request {request} is not pending ({why})")]
    NotPending {
        /// The request id.
        request: String,
        /// What it is instead.
        why: &'static str,
    },
    /// Approving a write or exec request in an untrusted workspace (`workspace_untrusted`).
    #[error(
        "the workspace is not trusted: approving request {request} would let the engine write \
         or run commands; trust the workspace (bb.init workspaceTrusted, or --trusted) or deny it"
    )]
    Untrusted {
        /// The request id.
        request: String,
    },
}

impl AnswerError {
    /// The stable wire code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotPending { .. } => "permission_not_pending",
            Self::Untrusted { .. } => "workspace_untrusted",
        }
    }
}

/// How the engine took an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerOutcome {
    /// Accepted.
    Accepted,
    /// The engine does not know the request (404): stale.
    Unknown,
    /// It failed otherwise (timeout, 5xx, connection): pending again, the user may retry.
    Failed,
}

/// Tunables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PermissionConfig {
    /// A pending request older than this expires (`None`: it waits for the user).
    pub pending_ttl: Option<Duration>,
    /// Finished entries kept to answer late replies precisely.
    pub keep_finished: usize,
}

impl Default for PermissionConfig {
    /// No expiry, 1024 finished entries kept.
    fn default() -> Self {
        Self { pending_ttl: None, keep_finished: 1024 }
    }
}

/// One request's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Where it is.
    pub state: RequestState,
    /// What it would allow.
    pub kind: RequestKind,
    /// When it was raised.
    pub raised_at: Instant,
}

/// A state change the caller acts on (counts to publish, engines to tell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The request.
    pub key: RequestKey,
    /// Its new state.
    pub state: RequestState,
}

/// Every request of every session of every engine the runtime drives.
#[derive(Debug, Clone, Default)]
pub struct Permissions {
    config: PermissionConfig,
    entries: BTreeMap<RequestKey, Request>,
    finished: VecDeque<RequestKey>,
}

impl Permissions {
    /// An empty table.
    pub fn new(config: PermissionConfig) -> Self {
        Self { config, entries: BTreeMap::new(), finished: VecDeque::new() }
    }

    /// The entry of `key`.
    pub fn get(&self, key: &RequestKey) -> Option<&Request> {
        self.entries.get(key)
    }

    /// The engine raised a request. `true` when it is new and must be shown.
    pub fn raised(&mut self, key: RequestKey, kind: RequestKind, now: Instant) -> bool {
        if self.entries.contains_key(&key) {
            return false;
        }
        self.entries.insert(key, Request { state: RequestState::Pending, kind, raised_at: now });
        true
    }

    /// The user answers: `pending → answering`, or why not.
    pub fn begin_answer(
        &mut self,
        key: &RequestKey,
        approve: bool,
        trusted: bool,
    ) -> Result<(), AnswerError> {
        let request = key.request.clone();
        let Some(entry) = self.entries.get_mut(key) else {
            return Err(AnswerError::NotPending { request, why: "unknown" });
        };
        if entry.state != RequestState::Pending {
            return Err(AnswerError::NotPending { request, why: entry.state.name() });
        }
        if approve && !trusted && entry.kind.needs_trust() {
            return Err(AnswerError::Untrusted { request });
        }
        entry.state = RequestState::Answering { approve };
        Ok(())
    }

    /// The engine's answer to [`Self::begin_answer`]'s call.
    pub fn answer_done(&mut self, key: &RequestKey, outcome: AnswerOutcome) -> Option<Change> {
        let entry = self.entries.get(key)?;
        if !matches!(entry.state, RequestState::Answering { .. }) {
            return None;
        }
        let state = match outcome {
            AnswerOutcome::Accepted => RequestState::Settled,
            AnswerOutcome::Unknown => RequestState::Stale,
            AnswerOutcome::Failed => RequestState::Pending,
        };
        Some(self.set(key, state))
    }

    /// The engine says the request was answered (its own event, whoever answered).
    pub fn replied(&mut self, key: &RequestKey) -> Option<Change> {
        self.close(key, RequestState::Settled)
    }

    /// Withdraws every open request of a session; returns those that were `pending` (the
    /// engine must be told `reject`; an `answering` one already has its answer on the way).
    pub fn cancel_session(&mut self, engine: &str, directory: &str, session: &str) -> Vec<Change> {
        let keys: Vec<RequestKey> = self
            .open_keys()
            .filter(|k| k.engine == engine && k.directory == directory && k.session == session)
            .collect();
        let mut told = Vec::new();
        for key in keys {
            let was_pending =
                self.entries.get(&key).map(|e| e.state) == Some(RequestState::Pending);
            let change = self.set(&key, RequestState::Cancelled);
            if was_pending {
                told.push(change);
            }
        }
        told
    }

    /// Withdraws every open request of an engine (it restarted: its requests died with it).
    pub fn cancel_engine(&mut self, engine: &str) -> Vec<Change> {
        let keys: Vec<RequestKey> = self.open_keys().filter(|k| k.engine == engine).collect();
        keys.iter().map(|k| self.set(k, RequestState::Cancelled)).collect()
    }

    /// The engine's current list for one session (after a reconnect). Returns the keys to
    /// show (new) and the changes made.
    pub fn relisted(
        &mut self,
        engine: &str,
        directory: &str,
        session: &str,
        listed: Vec<(String, RequestKind)>,
        now: Instant,
    ) -> (Vec<RequestKey>, Vec<Change>) {
        let key = |request: String| RequestKey {
            engine: engine.to_owned(),
            directory: directory.to_owned(),
            session: session.to_owned(),
            request,
        };
        let listed: BTreeMap<RequestKey, RequestKind> =
            listed.into_iter().map(|(r, kind)| (key(r), kind)).collect();
        let gone: Vec<RequestKey> = self
            .open_keys()
            .filter(|k| k.engine == engine && k.directory == directory && k.session == session)
            .filter(|k| !listed.contains_key(k))
            .collect();
        let mut changes = Vec::new();
        for k in gone {
            let state = match self.entries.get(&k).map(|e| e.state) {
                Some(RequestState::Answering { .. }) => RequestState::Settled,
                _ => RequestState::Stale,
            };
            changes.push(self.set(&k, state));
        }
        let mut shown = Vec::new();
        for (k, kind) in listed {
            if self.raised(k.clone(), kind, now) {
                shown.push(k);
            }
        }
        (shown, changes)
    }

    /// Expires pending requests past their deadline.
    pub fn handle_timeout(&mut self, now: Instant) -> Vec<Change> {
        let Some(ttl) = self.config.pending_ttl else { return Vec::new() };
        let due: Vec<RequestKey> = self
            .entries
            .iter()
            .filter(|(_, e)| e.state == RequestState::Pending && e.raised_at + ttl <= now)
            .map(|(k, _)| k.clone())
            .collect();
        due.iter().map(|k| self.set(k, RequestState::Expired)).collect()
    }

    /// The next expiry, if any.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let ttl = self.config.pending_ttl?;
        self.entries
            .values()
            .filter(|e| e.state == RequestState::Pending)
            .map(|e| e.raised_at + ttl)
            .min()
    }

    /// Open requests: of one session (`Some`) or of all.
    pub fn pending_count(&self, session: Option<(&str, &str, &str)>) -> u64 {
        let n = self
            .open_keys()
            .filter(|k| {
                session.is_none_or(|(e, d, s)| k.engine == e && k.directory == d && k.session == s)
            })
            .count();
        u64::try_from(n).unwrap_or(u64::MAX)
    }

    /// The sessions of an engine instance with an open request.
    pub fn sessions_with_open(&self, engine: &str, directory: &str) -> Vec<String> {
        let mut sessions: Vec<String> = self
            .open_keys()
            .filter(|k| k.engine == engine && k.directory == directory)
            .map(|k| k.session)
            .collect();
        sessions.dedup();
        sessions
    }

    /// The open requests of one session, in key order.
    pub fn open_of(&self, engine: &str, directory: &str, session: &str) -> Vec<RequestKey> {
        self.open_keys()
            .filter(|k| k.engine == engine && k.directory == directory && k.session == session)
            .collect()
    }

    fn open_keys(&self) -> impl Iterator<Item = RequestKey> + '_ {
        self.entries.iter().filter(|(_, e)| e.state.is_open()).map(|(k, _)| k.clone())
    }

    fn close(&mut self, key: &RequestKey, state: RequestState) -> Option<Change> {
        let open = self.entries.get(key)?.state.is_open();
        open.then(|| self.set(key, state))
    }

    fn set(&mut self, key: &RequestKey, state: RequestState) -> Change {
        if let Some(entry) = self.entries.get_mut(key) {
            let was_open = entry.state.is_open();
            entry.state = state;
            if was_open && !state.is_open() {
                self.finished.push_back(key.clone());
                while self.finished.len() > self.config.keep_finished {
                    if let Some(old) = self.finished.pop_front()
                        && self.entries.get(&old).is_some_and(|e| !e.state.is_open())
                    {
                        self.entries.remove(&old);
                    }
                }
            }
        }
        Change { key: key.clone(), state }
    }
}
