//! What the Kilo adapter's calls and its event pump share: the engine-wide permission table
//! and per-session flags (running, queued prompts, tools in flight, failures to retry).

use std::collections::BTreeSet;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};

use bb_host::permissions::RequestKind;
use foldhash::{HashMap, HashMapExt as _, HashSet};
use serde_json::Value;

use bb_service::SystemClock;
use bb_service::permits::Permits;

/// What the bridge knows about one Kilo session between calls and events.
#[derive(Debug, Default, Clone)]
pub(crate) struct Flags {
    /// A turn is running.
    pub(crate) running: bool,
    /// Prompts the engine has queued behind the running turn (`session.queue.changed`).
    pub(crate) queued: usize,
    /// Tool calls started and not finished (`callID`s).
    pub(crate) tools: HashSet<String>,
    /// Rebuilding the session after a reconnect failed: `retry` rebuilds it.
    pub(crate) rebuild_failed: bool,
    /// The last prompt's parts (what `retry` sends again after a failed turn).
    pub(crate) last_prompt: Option<Vec<Value>>,
    /// The model chosen at creation (`providerID`, `modelID`), sent with every prompt.
    pub(crate) model: Option<(String, String)>,
    /// The latest diff per file the session's tool and permission events showed (the
    /// engine's diff route is empty when its snapshots are off).
    pub(crate) seen_diffs: HashMap<String, String>,
    /// `bridge.diff` events sent (their ids count up).
    pub(crate) diffs_sent: u64,
}

/// Shared between the adapter and its pump.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The engine-wide permission and question table with the trust flag.
    pub(crate) permits: Arc<Permits>,
    sessions: Mutex<HashMap<String, Flags>>,
    /// Sessions the webview touched: rebuilt after every reconnect, also of a restarted
    /// engine, and flagged with a gap then.
    tracked: Mutex<BTreeSet<String>>,
    /// `out_of_scope_path_attempt_count`: workspace paths refused.
    pub(crate) out_of_scope: AtomicU64,
    /// `events.unrouted_count`: engine events of no session (server, plugin and project
    /// events), not shown to any webview.
    pub(crate) unrouted: AtomicU64,
    /// `events.malformed_count`: stream data that is not a Kilo event.
    pub(crate) malformed: AtomicU64,
    /// Sessions rebuilt from REST after a reconnect (`bridge.rehydrations`).
    pub(crate) rehydrated: AtomicU64,
}

impl Shared {
    pub(crate) fn new(permits: Arc<Permits>) -> Self {
        Self {
            permits,
            sessions: Mutex::new(HashMap::new()),
            tracked: Mutex::new(BTreeSet::new()),
            out_of_scope: AtomicU64::new(0),
            unrouted: AtomicU64::new(0),
            malformed: AtomicU64::new(0),
            rehydrated: AtomicU64::new(0),
        }
    }

    /// A table of its own (tests of the event mapping).
    pub(crate) fn detached() -> Self {
        Self::new(Arc::new(Permits::new("kilo", String::new(), false, Arc::new(SystemClock))))
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Flags>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads or changes one session's flags.
    pub(crate) fn with<T>(&self, session: &str, f: impl FnOnce(&mut Flags) -> T) -> T {
        f(self.lock().entry(session.to_owned()).or_default())
    }

    fn lock_tracked(&self) -> MutexGuard<'_, BTreeSet<String>> {
        self.tracked.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Tracks a session; `true` when it was not tracked yet.
    pub(crate) fn track(&self, session: &str) -> bool {
        self.lock_tracked().insert(session.to_owned())
    }

    /// Stops tracking a session.
    pub(crate) fn untrack(&self, session: &str) {
        self.lock_tracked().remove(session);
    }

    /// The tracked sessions.
    pub(crate) fn tracked(&self) -> Vec<String> {
        self.lock_tracked().iter().cloned().collect()
    }

    /// Forgets a session.
    pub(crate) fn remove(&self, session: &str) {
        self.lock().remove(session);
    }
}

/// What approving a Kilo permission lets the engine do. Kilo names permissions after tools
/// (`bash`, `edit` — also for `write` and `patch` —, `read`, …); a name not listed here
/// needs trust (fail closed).
pub(crate) fn kind_of(permission: &str) -> RequestKind {
    match permission {
        "bash" | "shell" | "task" => RequestKind::Exec,
        "edit" | "write" | "patch" | "multiedit" | "external_directory" => RequestKind::Write,
        "read" | "glob" | "grep" | "list" | "lsp" | "webfetch" | "websearch" | "codesearch"
        | "todoread" | "todowrite" => RequestKind::Read,
        _ => RequestKind::Other,
    }
}
