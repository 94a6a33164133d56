//! What the Kilo adapter's calls and its event pump share: per-session flags (running,
//! queued prompts, tools and requests in flight, failures to retry) and the counters.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, MutexGuard};

use bb_host::PromptKind;
use foldhash::{HashMap, HashSet};
use serde_json::Value;

/// What the bridge knows about one Kilo session between calls and events.
#[derive(Debug, Default, Clone)]
pub(crate) struct Flags {
    /// A turn is running.
    pub(crate) running: bool,
    /// Tool calls started and not finished (`callID`s).
    pub(crate) tools: HashSet<String>,
    /// Permission requests and questions the engine raised and did not say are answered:
    /// what fails a turn closed, and what a re-list compares (the host decides the rest).
    pub(crate) asked: HashSet<String>,
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
#[derive(Debug, Default)]
pub(crate) struct Shared {
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
    /// The engine's credential store is readable by others
    /// (`credentials.insecure_storage_detected`).
    pub(crate) insecure_storage: AtomicU64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Flags>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads or changes one session's flags.
    pub(crate) fn with<T>(&self, session: &str, f: impl FnOnce(&mut Flags) -> T) -> T {
        let mut sessions = self.lock();
        // Looked up first: a session's key is allocated once, not per event.
        if let Some(flags) = sessions.get_mut(session) {
            return f(flags);
        }
        f(sessions.entry(session.to_owned()).or_default())
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

    /// The sessions whose turn is running, each marked not running (its stream is gone).
    pub(crate) fn take_running(&self) -> Vec<String> {
        let mut sessions = self.lock();
        let mut running: Vec<String> = sessions
            .iter_mut()
            .filter(|(_, f)| f.running)
            .map(|(s, f)| {
                f.running = false;
                f.tools.clear();
                s.clone()
            })
            .collect();
        running.sort();
        running
    }

    /// The sessions with a request the engine raised and did not say is answered.
    pub(crate) fn sessions_asking(&self) -> Vec<String> {
        self.lock().iter().filter(|(_, f)| !f.asked.is_empty()).map(|(s, _)| s.clone()).collect()
    }
}

/// What approving a Kilo permission lets the engine do. Kilo names permissions after tools
/// (`bash`, `edit` — also for `write` and `patch` —, `read`, …); a name not listed here is
/// [`PromptKind::Unknown`], which needs trust (fail closed).
pub(crate) fn kind_of(permission: &str) -> PromptKind {
    match permission {
        "bash" | "shell" | "task" => PromptKind::Exec,
        "edit" | "write" | "patch" | "multiedit" | "external_directory" => PromptKind::Write,
        "read" | "glob" | "grep" | "list" | "lsp" | "codesearch" | "todoread" | "todowrite" => {
            PromptKind::Read
        }
        "webfetch" | "websearch" => PromptKind::Network,
        _ => PromptKind::Unknown,
    }
}
