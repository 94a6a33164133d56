//! The prompts queued behind a session's turn ([`super::commands::prompt`]), kept in the
//! bridge's state directory (`acp-queued.json`) as they change. The agent is the sidecar's
//! child: a killed sidecar takes it and the turn they waited behind along, so the next
//! sidecar does not send them on its own; it names them in one `prompts_withdrawn` event per
//! session and forgets them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The file under the state directory.
pub const QUEUE_FILE: &str = "acp-queued.json";

/// Prompts by session, in the order they were sent.
pub(crate) type Queues = BTreeMap<String, Vec<String>>;

/// Where the queues are kept (nowhere without a state directory).
#[derive(Debug)]
pub(crate) struct QueueFile {
    path: Option<PathBuf>,
    /// Held from the snapshot to the end of its write, so writes land in snapshot order.
    writing: Mutex<()>,
}

impl QueueFile {
    pub(crate) fn new(state_dir: Option<&Path>) -> Self {
        Self { path: state_dir.map(|d| d.join(QUEUE_FILE)), writing: Mutex::new(()) }
    }

    /// What a previous run left queued, and the file removed. A missing file is nothing; an
    /// unreadable one too, logged.
    pub(crate) fn take(&self) -> Queues {
        let Some(path) = &self.path else { return Queues::new() };
        let Ok(bytes) = std::fs::read(path) else { return Queues::new() };
        let queues = serde_json::from_slice::<Queues>(&bytes).unwrap_or_else(|err| {
            tracing::warn!(path = %path.display(), %err, "the saved ACP prompt queues are unreadable; dropped");
            Queues::new()
        });
        if let Err(err) = std::fs::remove_file(path) {
            tracing::warn!(path = %path.display(), %err, "cannot remove the saved ACP prompt queues");
        }
        queues
    }

    /// Writes the queues `snapshot` gives (taken under the write lock); a failed write is
    /// logged: the queues still run in this bridge.
    pub(crate) fn save(&self, snapshot: impl FnOnce() -> Queues) {
        let Some(path) = &self.path else { return };
        let _writing = self.writing.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let queues = snapshot();
        let result = if queues.is_empty() {
            match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            }
        } else {
            let bytes = serde_json::to_vec(&queues).unwrap_or_default();
            bb_service::fs::write_atomic(path, &bytes)
        };
        if let Err(err) = result {
            tracing::warn!(path = %path.display(), %err, "cannot save the ACP prompt queues");
        }
    }
}
