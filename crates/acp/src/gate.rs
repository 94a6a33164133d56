//! The seam between the ACP client and the bridge's trust gate: "may an agent's write or
//! command proceed in this workspace now?". The asking itself goes through the same
//! permission requests an agent raises (`AcpEventKind::PermissionRequest`), answered through
//! `AcpHub::permission_reply`, so a bridge with a host-owned prompt flow rewires only this
//! trait and the place that answers those requests.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Decides whether the workspace is trusted for an agent's client-side writes and terminals.
pub trait Gate: Send + Sync + fmt::Debug {
    /// Whether the workspace is trusted now. Until it is, `fs/write_text_file` and
    /// `terminal/create` are refused (reads need no trust, only containment).
    fn trusted(&self) -> bool;
}

/// A trust flag the bridge flips (`--trusted`, `bb.init({workspaceTrusted})`); clones share it.
#[derive(Debug, Clone, Default)]
pub struct TrustFlag(Arc<AtomicBool>);

impl TrustFlag {
    /// A flag starting at `trusted`.
    pub fn new(trusted: bool) -> Self {
        Self(Arc::new(AtomicBool::new(trusted)))
    }

    /// Sets whether the workspace is trusted.
    pub fn set(&self, trusted: bool) {
        self.0.store(trusted, Ordering::SeqCst);
    }
}

impl Gate for TrustFlag {
    fn trusted(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
