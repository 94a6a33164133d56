//! The prompt table: every permission request and question of the engine, one entry per
//! (session, request id), moving `pending → answering → settled | stale | expired |
//! cancelled`, with the one trust gate. Pure: time is passed in. The host core drives it
//! from its inputs; this module holds the rules.
//!
//! # Rules
//!
//! * **Shown once.** [`Prompts::raise`] answers [`Raised::New`] the first time a request is
//!   seen and [`Raised::Repeat`] while it is open (a repeated engine event, a re-list): a
//!   repeat is not shown again.
//! * **A reused id is a new prompt.** An engine that numbers its requests per turn
//!   (BreadBoard's `permission_1`) raises an id whose earlier request has closed: that is a
//!   new prompt, shown, answered and counted on its own; unless it comes with the very event
//!   that showed the closed one (a stream resumed after a restart replaying it): the same
//!   request again, not shown.
//! * **Answered at most once.** [`Prompts::begin`] moves `pending → answering` and hands out
//!   the one right to tell the engine; anything not `pending` is
//!   [`AnswerError::NotPending`] (`permission_not_pending`), naming what it is instead.
//! * **Trust.** While the workspace is untrusted, approving a request whose
//!   [`PromptKind::needs_trust`] (writes, commands, and any kind the adapter cannot name) is
//!   [`AnswerError::Untrusted`] (`workspace_untrusted`, saying how to grant trust) and the
//!   request stays `pending`; denying always works.
//! * **Open** is `pending` or `answering` (both still block the engine);
//!   [`Prompts::open_count`] is their number.
//! * **Re-list.** After a reconnect the engine's list is the truth for a session: listed
//!   requests not known are raised; open ones it no longer lists close (`pending` as
//!   `stale`, `answering` as `settled`: the answer landed); closed ones are not shown again.
//! * **Expiry** is optional ([`PromptConfig::pending_ttl`]): a `pending` request older than it
//!   is `expired` at [`Prompts::handle_timeout`] (the caller tells the engine to deny it).
//! * **Cancel.** A stopped turn's pending requests are `cancelled` (the caller tells the
//!   engine to deny them; an `answering` one already has its answer on the way); an engine
//!   restart cancels every open request (they died with it).
//! * Closed entries are kept (bounded, oldest first out) so a late answer gets
//!   `permission_not_pending` naming what happened.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use bb_protocol::v1::AnsweredBy;

/// What approving a request lets the engine do, as its adapter reads the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PromptKind {
    /// Reads only (read, glob, grep, list).
    Read,
    /// Writes files (edit, write, patch, delete, move).
    Write,
    /// Runs commands (bash, shell, sub-agents that do).
    Exec,
    /// Reaches the network (fetch, search).
    Network,
    /// A question to the user: answering changes nothing in the workspace.
    Question,
    /// Anything the adapter cannot name: treated as a write (fail closed).
    Unknown,
}

impl PromptKind {
    /// Whether approving it needs a trusted workspace: writes, commands and unknown kinds
    /// (the spec's "write/exec actions", failing closed); reads, network and questions not.
    pub fn needs_trust(self) -> bool {
        matches!(self, Self::Write | Self::Exec | Self::Unknown)
    }

    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write files",
            Self::Exec => "run commands",
            Self::Network => "reach the network",
            Self::Question => "question",
            Self::Unknown => "an action the bridge cannot name",
        }
    }
}

/// A request the engine raised, as its adapter describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The engine session that asks (a sub-agent's own session, not its parent's).
    pub session_id: String,
    /// The engine's request id (`per_…`, `que_…`, `permission_1`, an ACP JSON-RPC id).
    pub request_id: String,
    /// What approving it lets the engine do.
    pub kind: PromptKind,
    /// The paths it touches, where the engine names them (shown in a refusal).
    pub paths: Vec<String>,
}

impl Prompt {
    /// A prompt with no paths.
    pub fn new(
        session_id: impl Into<String>,
        request_id: impl Into<String>,
        kind: PromptKind,
    ) -> Self {
        Self {
            session_id: session_id.into(),
            request_id: request_id.into(),
            kind,
            paths: Vec::new(),
        }
    }
}

/// Where a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptState {
    /// Waiting for the user.
    Pending,
    /// An answer is on its way to the engine.
    Answering {
        /// Whether the answer approves.
        approve: bool,
    },
    /// The engine took an answer (the user's, or one given elsewhere).
    Settled,
    /// The engine no longer knows the request.
    Stale,
    /// Nobody answered within the deadline; the engine was told to deny it.
    Expired,
    /// Withdrawn by the bridge (stop, failed turn, session deleted, engine restarted).
    Cancelled,
}

impl PromptState {
    /// Still blocking the engine (`pending` or `answering`).
    pub fn is_open(self) -> bool {
        matches!(self, Self::Pending | Self::Answering { .. })
    }

    /// Its name in messages and in the bridge's own closing event.
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

/// What an answer says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Approve (`allow_once`, `allow_rule`): needs trust for writes, commands and unknown
    /// kinds; a question is not approved, it is replied to.
    Allow,
    /// Deny (reject a question): always allowed.
    Deny,
    /// Reply to a question with its answers: needs no trust; only a question takes it.
    Reply,
}

impl Verdict {
    /// Whether the engine is let go on (allowed, or a question answered).
    pub fn goes_on(self) -> bool {
        !matches!(self, Verdict::Deny)
    }
}

/// Why an answer may not go to the engine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// Not pending (`permission_not_pending`).
    #[error("request {request} is not pending ({why}{})", answered_text(answered.as_ref()))]
    NotPending {
        /// The request id.
        request: String,
        /// What it is instead.
        why: &'static str,
        /// How it was answered and by which webview, when one answered it first.
        answered: Option<(String, AnsweredBy)>,
    },
    /// Approving a request that needs trust in an untrusted workspace
    /// (`workspace_untrusted`).
    #[error(
        "the workspace is not trusted: approving request {request} would let the engine {}{}; \
         trust the workspace (bb.init {{\"workspaceTrusted\": true}}, or start the bridge with \
         --trusted) or deny it",
        kind.name(),
        paths_text(paths)
    )]
    Untrusted {
        /// The request id.
        request: String,
        /// What it would allow.
        kind: PromptKind,
        /// The paths it names.
        paths: Vec<String>,
    },
    /// A question approved through `bb.approvePermission` (`invalid_params`): a question is
    /// answered with its answers, or denied.
    #[error(
        "request {request} is a question: answer it with bb.command question.reply \
         {{requestId, answers}}; bb.approvePermission can only deny (reject) it"
    )]
    Question {
        /// The request id.
        request: String,
    },
    /// Answers given to a request that is not a question (`invalid_params`).
    #[error(
        "request {request} is a permission request, not a question: answer it with \
         bb.approvePermission"
    )]
    NotAQuestion {
        /// The request id.
        request: String,
    },
}

/// `; answered allow_once from tab t (connection 2)` for a late answer's refusal.
fn answered_text(answered: Option<&(String, AnsweredBy)>) -> String {
    let Some((decision, by)) = answered else {
        return String::new();
    };
    let tab = by.tab_id.as_deref().map(|t| format!("tab {t} of ")).unwrap_or_default();
    format!(
        "; the first answer won: {decision} from {tab}connection {}, and the engine was told once",
        by.connection
    )
}

fn paths_text(paths: &[String]) -> String {
    match paths {
        [] => String::new(),
        [one] => format!(" ({one})"),
        [first, rest @ ..] => format!(" ({first} and {} more)", rest.len()),
    }
}

impl AnswerError {
    /// The stable wire code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotPending { .. } => "permission_not_pending",
            Self::Untrusted { .. } => "workspace_untrusted",
            Self::Question { .. } | Self::NotAQuestion { .. } => "invalid_params",
        }
    }
}

/// How the engine took an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerOutcome {
    /// Accepted.
    Accepted,
    /// The engine does not know the request (a 404, "no permission request is active"):
    /// stale.
    Unknown,
    /// It failed otherwise (timeout, 5xx, connection): pending again, the user may retry.
    Failed,
}

/// Tunables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptConfig {
    /// A pending request older than this expires (`None`: it waits for the user).
    pub pending_ttl: Option<Duration>,
    /// Closed entries kept to answer late replies precisely.
    pub keep_finished: usize,
}

impl Default for PromptConfig {
    /// No expiry, 1024 closed entries kept.
    fn default() -> Self {
        Self { pending_ttl: None, keep_finished: 1024 }
    }
}

/// One request's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Where it is.
    pub state: PromptState,
    /// What it would allow.
    pub kind: PromptKind,
    /// The paths it names.
    pub paths: Vec<String>,
    /// When it was raised.
    pub raised_at: Instant,
    /// The ancestor session whose tab shows it (a sub-agent's prompt no tab of its own
    /// session shows), if any.
    pub shown_on: Option<String>,
    /// The answer the host allowed: how, and which webview gave it.
    pub answer: Option<(String, AnsweredBy)>,
    /// Every window was told who answered (once).
    pub announced: bool,
    /// The id of the engine event that showed it, when it had one.
    pub shown_by: Option<String>,
}

/// Whether a raise is a new prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Raised {
    /// New (never seen, or its id's earlier request closed): show it.
    New,
    /// Open already: not shown again.
    Repeat,
}

/// A change the caller acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The request, as raised.
    pub prompt: Prompt,
    /// Its new state.
    pub state: PromptState,
    /// Where an ancestor shows it.
    pub shown_on: Option<String>,
}

/// The key of an entry: session, then request id.
type Key = (String, String);

/// Every request of every session the engine raised.
#[derive(Debug, Clone, Default)]
pub struct Prompts {
    config: PromptConfig,
    entries: BTreeMap<Key, Entry>,
    finished: VecDeque<Key>,
    /// Counts every change of the open set (a raise, a state change): what the host saves
    /// is taken again when it moved.
    changes: u64,
}

impl Prompts {
    /// An empty table.
    pub fn new(config: PromptConfig) -> Self {
        Self { config, entries: BTreeMap::new(), finished: VecDeque::new(), changes: 0 }
    }

    /// A count that moves whenever a request is raised or changes state.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// The open requests, in key order, as raised.
    pub fn open(&self) -> impl Iterator<Item = Prompt> + '_ {
        self.entries.iter().filter(|(_, e)| e.state.is_open()).map(|((s, r), e)| Prompt {
            session_id: s.clone(),
            request_id: r.clone(),
            kind: e.kind,
            paths: e.paths.clone(),
        })
    }

    /// The engine no longer knows an open request (it restarted, or its session is gone):
    /// a `pending` one is `stale`, one being answered `settled` (as in a re-list: the engine
    /// took an answer, or lost the request with its session); `None` when it was not open.
    pub fn forget(&mut self, session: &str, request: &str) -> Option<Change> {
        let key = (session.to_owned(), request.to_owned());
        let state = self.entries.get(&key).filter(|e| e.state.is_open())?.state;
        let to = match state {
            PromptState::Answering { .. } => PromptState::Settled,
            _ => PromptState::Stale,
        };
        Some(self.set(&key, to))
    }

    /// The entry of a request.
    pub fn get(&self, session: &str, request: &str) -> Option<&Entry> {
        self.entries.get(&(session.to_owned(), request.to_owned()))
    }

    /// The engine raised `prompt` at `now`.
    pub fn raise(&mut self, prompt: &Prompt, now: Instant) -> Raised {
        let key = (prompt.session_id.clone(), prompt.request_id.clone());
        if self.entries.get(&key).is_some_and(|e| e.state.is_open()) {
            return Raised::Repeat;
        }
        let entry = Entry {
            state: PromptState::Pending,
            kind: prompt.kind,
            paths: prompt.paths.clone(),
            raised_at: now,
            shown_on: None,
            answer: None,
            announced: false,
            shown_by: None,
        };
        // A closed entry of the same id is replaced: its place in `finished` no longer
        // names a closed entry, which `set` checks before it forgets one.
        self.entries.insert(key, entry);
        self.changes += 1;
        Raised::New
    }

    /// Records the id of the engine event that showed a request.
    pub fn shown_by(&mut self, session: &str, request: &str, event_id: &str) {
        if let Some(e) = self.entries.get_mut(&(session.to_owned(), request.to_owned())) {
            e.shown_by = Some(event_id.to_owned());
        }
    }

    /// Whether `event_id` is the event that showed a request now closed: the same request
    /// again (a resumed stream replaying it), not a new one of a reused id.
    pub fn closed_and_shown_by(&self, session: &str, request: &str, event_id: &str) -> bool {
        self.get(session, request)
            .is_some_and(|e| !e.state.is_open() && e.shown_by.as_deref() == Some(event_id))
    }

    /// Records the ancestor session whose tab shows an open request.
    pub fn show_on(&mut self, session: &str, request: &str, ancestor: String) {
        if let Some(e) = self.entries.get_mut(&(session.to_owned(), request.to_owned())) {
            e.shown_on = Some(ancestor);
        }
    }

    /// The user answers: `pending → answering`, or why not. `trusted`: the workspace is.
    pub fn begin(
        &mut self,
        session: &str,
        request: &str,
        verdict: Verdict,
        trusted: bool,
    ) -> Result<&Entry, AnswerError> {
        let key = (session.to_owned(), request.to_owned());
        let request = key.1.clone();
        let Some(entry) = self.entries.get_mut(&key) else {
            return Err(AnswerError::NotPending { request, why: "unknown", answered: None });
        };
        if entry.state != PromptState::Pending {
            let answered = entry.answer.clone();
            return Err(AnswerError::NotPending { request, why: entry.state.name(), answered });
        }
        let question = entry.kind == PromptKind::Question;
        match verdict {
            Verdict::Allow if question => return Err(AnswerError::Question { request }),
            Verdict::Reply if !question => return Err(AnswerError::NotAQuestion { request }),
            Verdict::Allow if !trusted && entry.kind.needs_trust() => {
                let (kind, paths) = (entry.kind, entry.paths.clone());
                return Err(AnswerError::Untrusted { request, kind, paths });
            }
            _ => {}
        }
        entry.state = PromptState::Answering { approve: verdict.goes_on() };
        self.changes += 1;
        Ok(entry)
    }

    /// Records how and by whom the answer [`Prompts::begin`] allowed was given.
    pub fn record_answer(&mut self, session: &str, request: &str, answer: (String, AnsweredBy)) {
        if let Some(entry) = self.entries.get_mut(&(session.to_owned(), request.to_owned())) {
            entry.answer = Some(answer);
            self.changes += 1;
        }
    }

    /// An open request a previous run of the bridge had an answer on its way for (saved
    /// before it was sent): `answering` again, with that answer recorded, for the bridge to
    /// deliver; `None` when it is not open.
    pub fn resume_answer(
        &mut self,
        session: &str,
        request: &str,
        answer: (String, AnsweredBy),
    ) -> Option<Change> {
        let key = (session.to_owned(), request.to_owned());
        self.entries.get(&key).filter(|e| e.state.is_open())?;
        let approve = answer.0 != "deny";
        let change = self.set(&key, PromptState::Answering { approve });
        if let Some(entry) = self.entries.get_mut(&key) {
            entry.answer = Some(answer);
            entry.announced = false;
        }
        Some(change)
    }

    /// An answer the bridge could not deliver after a restart: `pending` again, to be asked
    /// anew (its recorded answer and announcement dropped); `None` when it was not being
    /// answered.
    pub fn undeliverable(&mut self, session: &str, request: &str) -> Option<Change> {
        let change = self.answered(session, request, AnswerOutcome::Failed)?;
        if let Some(entry) = self.entries.get_mut(&(session.to_owned(), request.to_owned())) {
            entry.answer = None;
            entry.announced = false;
        }
        Some(change)
    }

    /// The recorded answer of an open request that is being answered.
    pub fn answering(&self, session: &str, request: &str) -> Option<&(String, AnsweredBy)> {
        let entry = self.get(session, request)?;
        if matches!(entry.state, PromptState::Answering { .. }) {
            entry.answer.as_ref()
        } else {
            None
        }
    }

    /// The recorded answer of a prompt whose engine closed it or took the answer, the first
    /// time it is asked for (every window is told who answered once).
    pub fn announce(&mut self, session: &str, request: &str) -> Option<(String, AnsweredBy)> {
        let entry = self.entries.get_mut(&(session.to_owned(), request.to_owned()))?;
        if entry.announced {
            return None;
        }
        let answer = entry.answer.clone()?;
        entry.announced = true;
        Some(answer)
    }

    /// How the engine took the answer [`Prompts::begin`] allowed; `None` when the request
    /// was not being answered (closed meanwhile).
    pub fn answered(
        &mut self,
        session: &str,
        request: &str,
        outcome: AnswerOutcome,
    ) -> Option<Change> {
        let key = (session.to_owned(), request.to_owned());
        if !matches!(self.entries.get(&key)?.state, PromptState::Answering { .. }) {
            return None;
        }
        let state = match outcome {
            AnswerOutcome::Accepted => PromptState::Settled,
            AnswerOutcome::Unknown => PromptState::Stale,
            AnswerOutcome::Failed => PromptState::Pending,
        };
        Some(self.set(&key, state))
    }

    /// The engine says the request was answered (its own event, whoever answered); `None`
    /// when it was not open.
    pub fn settled(&mut self, session: &str, request: &str) -> Option<Change> {
        let key = (session.to_owned(), request.to_owned());
        self.entries.get(&key).filter(|e| e.state.is_open())?;
        Some(self.set(&key, PromptState::Settled))
    }

    /// Withdraws the open requests of a session; the changes, of which the `pending` ones
    /// (now `cancelled` with the engine not told yet) come first.
    pub fn cancel_session(&mut self, session: &str) -> (Vec<Change>, Vec<Change>) {
        let keys: Vec<Key> = self.open_keys().filter(|(s, _)| s == session).collect();
        let (mut withdraw, mut answering) = (Vec::new(), Vec::new());
        for key in keys {
            let pending = self.entries.get(&key).is_some_and(|e| e.state == PromptState::Pending);
            let change = self.set(&key, PromptState::Cancelled);
            if pending { withdraw.push(change) } else { answering.push(change) }
        }
        (withdraw, answering)
    }

    /// Forgets every request of a session the engine removed, closed ones included: a
    /// later session of the same id is a new session, and its requests are new prompts
    /// (a closed entry kept would take the event that shows one for a replay).
    pub fn remove_session(&mut self, session: &str) {
        let before = self.entries.len();
        self.entries.retain(|(s, _), _| s != session);
        self.finished.retain(|(s, _)| s != session);
        if self.entries.len() != before {
            self.changes += 1;
        }
    }

    /// Withdraws every open request (the engine restarted: they died with it).
    pub fn cancel_all(&mut self) -> Vec<Change> {
        let keys: Vec<Key> = self.open_keys().collect();
        keys.iter().map(|k| self.set(k, PromptState::Cancelled)).collect()
    }

    /// The engine's current list of a session's requests (after a reconnect): the ones to
    /// show (new), and the open ones it no longer lists, closed.
    pub fn relist(
        &mut self,
        session: &str,
        listed: &[Prompt],
        now: Instant,
    ) -> (Vec<usize>, Vec<Change>) {
        let gone: Vec<Key> = self
            .open_keys()
            .filter(|(s, r)| s == session && !listed.iter().any(|p| p.request_id == *r))
            .collect();
        let mut closed = Vec::new();
        for key in gone {
            let state = match self.entries.get(&key).map(|e| e.state) {
                Some(PromptState::Answering { .. }) => PromptState::Settled,
                _ => PromptState::Stale,
            };
            closed.push(self.set(&key, state));
        }
        let mut shown = Vec::new();
        for (i, prompt) in listed.iter().enumerate() {
            let known = self.get(&prompt.session_id, &prompt.request_id).is_some();
            if !known && self.raise(prompt, now) == Raised::New {
                shown.push(i);
            }
        }
        (shown, closed)
    }

    /// Expires the pending requests past their deadline at `now`.
    pub fn handle_timeout(&mut self, now: Instant) -> Vec<Change> {
        let Some(ttl) = self.config.pending_ttl else { return Vec::new() };
        let due: Vec<Key> = self
            .entries
            .iter()
            .filter(|(_, e)| e.state == PromptState::Pending && e.raised_at + ttl <= now)
            .map(|(k, _)| k.clone())
            .collect();
        due.iter().map(|k| self.set(k, PromptState::Expired)).collect()
    }

    /// The next expiry, if any.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let ttl = self.config.pending_ttl?;
        self.entries
            .values()
            .filter(|e| e.state == PromptState::Pending)
            .map(|e| e.raised_at + ttl)
            .min()
    }

    /// Open requests of one session (`Some`) or of all.
    pub fn open_count(&self, session: Option<&str>) -> u64 {
        let n = self.open_keys().filter(|(s, _)| session.is_none_or(|x| x == s)).count();
        u64::try_from(n).unwrap_or(u64::MAX)
    }

    /// The entries with this request id, of any session (a webview answering on an
    /// ancestor's tab names the ancestor's session).
    pub fn by_request<'a>(
        &'a self,
        request: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a Entry)> {
        self.entries
            .iter()
            .filter(move |((_, r), _)| r == request)
            .map(|((s, _), e)| (s.as_str(), e))
    }

    fn open_keys(&self) -> impl Iterator<Item = Key> + '_ {
        self.entries.iter().filter(|(_, e)| e.state.is_open()).map(|(k, _)| k.clone())
    }

    fn set(&mut self, key: &Key, state: PromptState) -> Change {
        let mut change = Change {
            prompt: Prompt::new(key.0.clone(), key.1.clone(), PromptKind::Unknown),
            state,
            shown_on: None,
        };
        if let Some(entry) = self.entries.get_mut(key) {
            self.changes += 1;
            let was_open = entry.state.is_open();
            entry.state = state;
            change.prompt.kind = entry.kind;
            change.prompt.paths.clone_from(&entry.paths);
            change.shown_on.clone_from(&entry.shown_on);
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
        change
    }
}
