//! The open prompts kept in the state directory, so a restarted bridge shows again what a
//! person was asked: `<state>/prompts.json`, rewritten whole (to a temporary file in the
//! same directory, then renamed over it: a reader sees the old or the new file, never a
//! part) whenever the host's open prompts change, on the blocking pool, in order (a write
//! never replaces a newer one). It holds only open prompts, so it stays as small as what
//! is waiting on the user.
//!
//! ```json
//! {"version": 1, "prompts": [{"sessionId": "…", "requestId": "permission_1",
//!   "kind": "exec", "paths": ["Makefile"], "class": "permission.request",
//!   "event": {"id": "17", "type": "permission_request", "payload": {…}}}]}
//! ```
//!
//! A prompt being answered carries the answer on its way, written before it is sent to the
//! engine (write-ahead), so a bridge killed in between delivers it after its restart instead
//! of asking again: `"answer": {"decision": "allow_once", "answeredBy": {"connection": 0,
//! "tabId": "t1"}, "call": {"method": "bb.approvePermission", "params": {…}}}`.
//!
//! A missing file is nothing saved; an unreadable one is logged and replaced at the next
//! write; an entry of an unknown `kind` is read as `unknown` (needs trust, fails closed).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bb_host::{Prompt, PromptKind, SavedAnswer, SavedPrompt};
use bb_normalize::EventClass;
use bb_protocol::v1::{AnsweredBy, EngineEvent};
use serde::{Deserialize, Serialize};

/// The file's name under the state directory.
pub const PROMPTS_FILE: &str = "prompts.json";

const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct File {
    version: u32,
    prompts: Vec<Entry>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    session_id: String,
    request_id: String,
    kind: String,
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    event: Option<EngineEvent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answer: Option<AnswerEntry>,
}

/// The answer on its way when the entry was saved.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerEntry {
    decision: String,
    answered_by: AnsweredBy,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    call: Option<serde_json::Value>,
}

const KINDS: [(PromptKind, &str); 6] = [
    (PromptKind::Read, "read"),
    (PromptKind::Write, "write"),
    (PromptKind::Exec, "exec"),
    (PromptKind::Network, "network"),
    (PromptKind::Question, "question"),
    (PromptKind::Unknown, "unknown"),
];

fn kind_name(kind: PromptKind) -> &'static str {
    KINDS.iter().find(|(k, _)| *k == kind).map_or("unknown", |(_, n)| n)
}

fn kind_of(name: &str) -> PromptKind {
    KINDS.iter().find(|(_, n)| *n == name).map_or(PromptKind::Unknown, |(k, _)| *k)
}

impl From<&SavedPrompt> for Entry {
    fn from(saved: &SavedPrompt) -> Self {
        let p = &saved.prompt;
        Self {
            session_id: p.session_id.clone(),
            request_id: p.request_id.clone(),
            kind: kind_name(p.kind).to_owned(),
            paths: p.paths.clone(),
            class: saved.event.as_ref().map(|(_, c)| c.as_str().to_owned()),
            event: saved.event.as_ref().map(|(e, _)| e.clone()),
            answer: saved.answer.as_ref().map(|a| AnswerEntry {
                decision: a.decision.clone(),
                answered_by: a.by.clone(),
                call: a.call.clone(),
            }),
        }
    }
}

impl From<Entry> for SavedPrompt {
    fn from(entry: Entry) -> Self {
        let class = entry.class.as_deref().and_then(EventClass::from_name);
        let prompt = Prompt {
            session_id: entry.session_id,
            request_id: entry.request_id,
            kind: kind_of(&entry.kind),
            paths: entry.paths,
        };
        let event = entry.event.map(|e| (e, class.unwrap_or(EventClass::PermissionRequest)));
        let answer = entry.answer.map(|a| SavedAnswer {
            decision: a.decision,
            by: a.answered_by,
            call: a.call,
        });
        Self { prompt, event, answer }
    }
}

/// The prompts file of one state directory.
#[derive(Debug, Clone)]
pub(crate) struct PromptFile {
    path: PathBuf,
    latest: Arc<Mutex<Latest>>,
    /// The file holds prompts (as read at start, or last saved): an empty list is written
    /// only over one that held some, so a bridge that never asked anything writes nothing.
    holds_any: bool,
}

/// What to save and what is on disk.
#[derive(Debug, Default)]
struct Latest {
    /// Counts the saves asked for.
    generation: u64,
    /// The text of the latest.
    text: Vec<u8>,
    /// The generation on disk (or whose write failed).
    written: u64,
}

impl PromptFile {
    pub(crate) fn new(state_dir: &Path) -> Self {
        Self { path: state_dir.join(PROMPTS_FILE), latest: Arc::default(), holds_any: false }
    }

    /// What a previous run saved (nothing when there is no file; an unreadable one is
    /// logged and read as nothing).
    pub(crate) fn load(&mut self) -> Vec<SavedPrompt> {
        let prompts = self.read();
        self.holds_any = !prompts.is_empty();
        prompts
    }

    fn read(&self) -> Vec<SavedPrompt> {
        let text = match std::fs::read(&self.path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
            Err(err) => {
                tracing::warn!(path = %self.path.display(), %err, "saved prompts unreadable");
                return Vec::new();
            }
        };
        match serde_json::from_slice::<File>(&text) {
            Ok(file) if file.version == VERSION => {
                file.prompts.into_iter().map(SavedPrompt::from).collect()
            }
            Ok(file) => {
                tracing::warn!(version = file.version, "saved prompts of an unknown version");
                Vec::new()
            }
            Err(err) => {
                tracing::warn!(path = %self.path.display(), %err, "saved prompts unreadable");
                Vec::new()
            }
        }
    }

    /// Replaces what is saved with `prompts`, in the background.
    pub(crate) fn save(&mut self, prompts: &[SavedPrompt]) {
        if prompts.is_empty() && !std::mem::take(&mut self.holds_any) {
            return;
        }
        self.holds_any = !prompts.is_empty();
        let file = File { version: VERSION, prompts: prompts.iter().map(Entry::from).collect() };
        let text = match serde_json::to_vec(&file) {
            Ok(text) => text,
            Err(err) => {
                tracing::warn!(%err, "saving the open prompts failed");
                return;
            }
        };
        {
            let mut latest = self.latest.lock().unwrap_or_else(|p| p.into_inner());
            latest.generation += 1;
            latest.text = text;
        }
        let (path, latest) = (self.path.clone(), self.latest.clone());
        tokio::task::spawn_blocking(move || write_latest(&path, &latest));
    }

    /// Writes what is still to be written, and returns once it is on disk (or failed): what
    /// an answer awaits before it is sent to the engine.
    pub(crate) async fn flush(&self) {
        let (path, latest) = (self.path.clone(), self.latest.clone());
        let _ = tokio::task::spawn_blocking(move || write_latest(&path, &latest)).await;
    }
}

/// Writes the latest text unless it is on disk already. Writes run one at a time, under the
/// lock, so a write never replaces a newer one.
fn write_latest(path: &Path, latest: &Mutex<Latest>) {
    let mut latest = latest.lock().unwrap_or_else(|p| p.into_inner());
    if latest.written >= latest.generation {
        return;
    }
    if let Err(err) = crate::fs::write_atomic(path, &latest.text) {
        tracing::warn!(path = %path.display(), %err, "saving the open prompts failed");
    }
    latest.written = latest.generation;
}
