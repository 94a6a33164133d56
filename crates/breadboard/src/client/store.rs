//! The last seen `seq` per session, persisted under the workspace state dir so a restarted
//! bridge resumes where it stopped. Writes are debounced (at most one per interval, with
//! time passed in) and atomic (temp file, fsync, rename).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Why the cursor file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Reading, writing or renaming failed.
    #[error("cursor file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
    /// The file exists but is not a cursor file.
    #[error("cursor file {path} is corrupt: {message}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What serde said.
        message: String,
    },
}

/// The file: its table read as owned ids, written from borrowed ones (`M`).
#[derive(Debug, Default, Serialize, Deserialize)]
struct FileFormat<M> {
    version: u32,
    sessions: M,
}

/// The table in memory: looked up at every confirmed delivery, by hash (a `BTreeMap` of 100
/// sessions compared a dozen ids per look-up); written sorted, as the file always was.
type Table = super::BySession<u64>;

/// Positions in the order of their ids, written as the file's map.
#[derive(Debug, Default)]
struct Sorted<'a>(Vec<(&'a str, u64)>);

impl Serialize for Sorted<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(id, seq)| (id, seq)))
    }
}

/// Debounced, atomically written last-seq table.
#[derive(Debug)]
pub struct CursorStore {
    path: PathBuf,
    sessions: Table,
    debounce: Duration,
    dirty_since: Option<Instant>,
}

impl CursorStore {
    /// The file name under the state dir.
    pub const FILE_NAME: &'static str = "breadboard-cursors.json";

    /// Opens the table at `<state_dir>/breadboard-cursors.json`; a missing file is an empty
    /// table, a corrupt one an error (the caller may start empty with [`Self::empty`]).
    pub fn open(state_dir: &Path, debounce: Duration) -> Result<Self, StoreError> {
        let path = state_dir.join(Self::FILE_NAME);
        let sessions = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice::<FileFormat<BTreeMap<String, u64>>>(&bytes)
                .map_err(|e| StoreError::Corrupt { path: path.clone(), message: e.to_string() })?
                .sessions
                .into_iter()
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Table::default(),
            Err(source) => return Err(StoreError::Io { path, source }),
        };
        Ok(Self { path, sessions, debounce, dirty_since: None })
    }

    /// An empty table that will overwrite `<state_dir>/breadboard-cursors.json`.
    pub fn empty(state_dir: &Path, debounce: Duration) -> Self {
        Self {
            path: state_dir.join(Self::FILE_NAME),
            sessions: Table::default(),
            debounce,
            dirty_since: None,
        }
    }

    /// The persisted last `seq` of a session.
    pub fn get(&self, session_id: &str) -> Option<u64> {
        self.sessions.get(session_id).copied()
    }

    /// Records a delivered `seq` (kept only if it moves forward).
    pub fn record(&mut self, session_id: &str, seq: u64, now: Instant) {
        // A known session (every record but its first) is found without a copy of its id.
        let moved = match self.sessions.get_mut(session_id) {
            Some(entry) if seq > *entry => {
                *entry = seq;
                true
            }
            Some(_) => false,
            None => {
                self.sessions.insert(session_id.to_owned(), seq);
                seq > 0
            }
        };
        if moved {
            self.dirty_since.get_or_insert(now);
        }
    }

    /// Forgets a deleted session.
    pub fn forget(&mut self, session_id: &str, now: Instant) {
        if self.sessions.remove(session_id).is_some() {
            self.dirty_since.get_or_insert(now);
        }
    }

    /// When the next write is due, if anything changed.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.dirty_since.map(|t| t + self.debounce)
    }

    /// Writes the table if a change is older than the debounce interval. Returns whether it
    /// wrote.
    pub fn flush_due(&mut self, now: Instant) -> Result<bool, StoreError> {
        match self.poll_timeout() {
            Some(due) if now >= due => self.flush().map(|()| true),
            _ => Ok(false),
        }
    }

    /// The file path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every session's position (for a bridge that resumes them all at start), in the order
    /// of their ids.
    pub fn sessions(&self) -> impl Iterator<Item = (&str, u64)> {
        self.sorted().0.into_iter()
    }

    /// The table in the order of its ids, not copied.
    fn sorted(&self) -> Sorted<'_> {
        let mut all: Vec<(&str, u64)> =
            self.sessions.iter().map(|(id, seq)| (id.as_str(), *seq)).collect();
        all.sort_unstable();
        Sorted(all)
    }

    /// The file's contents.
    fn file(&self) -> FileFormat<Sorted<'_>> {
        FileFormat { version: 1, sessions: self.sorted() }
    }

    /// The file's bytes if anything changed since the last write, marking the table clean: a
    /// writer thread serializes under the caller's lock and writes outside it (then calls
    /// [`write_atomic`] with [`Self::path`]).
    pub fn take_snapshot(&mut self) -> Option<Vec<u8>> {
        self.dirty_since?;
        let bytes = serde_json::to_vec_pretty(&self.file()).ok()?;
        self.dirty_since = None;
        Some(bytes)
    }

    /// Writes the table now if anything changed (on shutdown).
    pub fn flush(&mut self) -> Result<(), StoreError> {
        if self.dirty_since.is_none() {
            return Ok(());
        }
        let bytes = serde_json::to_vec_pretty(&self.file())
            .map_err(|e| StoreError::Corrupt { path: self.path.clone(), message: e.to_string() })?;
        write_atomic(&self.path, &bytes)?;
        self.dirty_since = None;
        Ok(())
    }
}

/// [`bb_service::fs::write_atomic`] (readers see the old or the new file, never a torn one),
/// its failure naming the path.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    bb_service::fs::write_atomic(path, bytes)
        .map_err(|source| StoreError::Io { path: path.to_path_buf(), source })
}
