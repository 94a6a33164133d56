//! The fake engine's configuration and its fault plan (changeable while it runs).

use std::collections::VecDeque;
use std::path::PathBuf;

use secrecy::SecretString;

/// How the fake engine is set up.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// When set, every route needs `Authorization: Bearer <token>`.
    pub token: Option<SecretString>,
    /// Events kept per session for resume (the engine keeps 1000).
    pub ring_capacity: usize,
    /// The engine's own directory (reported in `skills_catalog.sources`). Like the engine,
    /// the files routes of a session created without a `workspace` answer 409
    /// `workspace not ready`: the bridge must send one.
    pub default_workspace: PathBuf,
    /// Models `set_model` (and `model` at create) accepts; `None`: any non-empty name.
    pub allowed_models: Option<Vec<String>>,
    /// Turn scripts played, in rotation, for inputs that are not `replay:<path>`.
    pub scripts: Vec<ScriptSource>,
    /// Faults in force from the start.
    pub faults: Faults,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            token: None,
            ring_capacity: 1000,
            default_workspace: PathBuf::from("."),
            allowed_models: None,
            scripts: Vec::new(),
            faults: Faults::default(),
        }
    }
}

/// Where a turn script comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptSource {
    /// A file in the upstream replay format, read at each turn.
    File(PathBuf),
    /// The replay-format text itself (e.g. compiled into a binary).
    Inline(String),
}

/// Injected faults, applied to SSE output like the engine's chaos variables. The default is
/// no fault and DELETE blocking on a pending permission, like the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Faults {
    /// Every Nth sequenced event of a connection (ring replay or live) is not written (the
    /// ring keeps it), so the subscriber sees a `seq` jump a resume refills.
    pub drop_every: Option<u64>,
    /// Delay before writing each event.
    pub latency_ms: u64,
    /// Every connection is cut (aborted, no terminating chunk) after this many events.
    pub cut_after: Option<usize>,
    /// The next connections are cut after these many events, one entry per connection.
    pub cut_plan: VecDeque<usize>,
    /// Every connection goes silent (stays open, writes nothing) after this many events.
    pub stall_after: Option<usize>,
    /// When true (the engine's behaviour), DELETE waits while a permission is pending.
    /// When false, DELETE abandons the pending request.
    pub delete_waits_for_permission: bool,
    /// What becomes of a permission decision the engine is sent.
    pub decisions: DecisionFault,
}

/// A fault on permission decisions: an answer on its way when its sender dies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DecisionFault {
    /// Decisions are taken at once (the engine's behaviour).
    #[default]
    None,
    /// A decision's request is held open, nothing decided, while this is in force.
    Hold,
    /// A held (or new) decision is lost: answered 503 with nothing decided, as if it never
    /// reached the engine.
    Lose,
}

impl Default for Faults {
    fn default() -> Self {
        Self {
            drop_every: None,
            latency_ms: 0,
            cut_after: None,
            cut_plan: VecDeque::new(),
            stall_after: None,
            delete_waits_for_permission: true,
            decisions: DecisionFault::None,
        }
    }
}

impl Faults {
    /// The plan for one new connection: the cut point, if any.
    pub(crate) fn take_connection_cut(&mut self) -> Option<usize> {
        self.cut_plan.pop_front().or(self.cut_after)
    }
}
