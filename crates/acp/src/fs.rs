//! The client's file capabilities (`fs/read_text_file`, `fs/write_text_file`): paths must be
//! absolute and inside the workspace, checked symlink-safe with the bridge's `PathGuard`;
//! reads are bounded and sliced by line; writes create missing parent directories.

use std::path::{Path, PathBuf};

use bb_normalize::{PathFlavor, PathGuard, Verdict};

/// Largest file `fs/read_text_file` returns (the answer is one JSON-RPC line).
pub const MAX_READ_BYTES: u64 = 16 * 1024 * 1024;
/// Largest content `fs/write_text_file` writes.
pub const MAX_WRITE_BYTES: usize = 16 * 1024 * 1024;

/// Why a file request is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FsRefusal {
    /// Not an absolute path inside the workspace (or not a path at all).
    #[error(
        "{path} is outside the workspace {root}; the bridge reads and writes files only inside it"
    )]
    Outside {
        /// The path asked for.
        path: String,
        /// The workspace.
        root: String,
    },
    /// Not a usable absolute path.
    #[error("{path} is not a usable absolute path: {why}")]
    Invalid {
        /// The path asked for.
        path: String,
        /// Why.
        why: String,
    },
    /// The workspace is not trusted (writes only).
    #[error(
        "the workspace is not trusted: the bridge refuses writes by the agent until the user trusts it"
    )]
    Untrusted,
    /// The user refused (writes only).
    #[error("the user refused the write of {0}")]
    Denied(String),
    /// The file is missing or unreadable, too large, or not text.
    #[error("{0}")]
    Io(String),
    /// The file does not exist.
    #[error("no such file: {0}")]
    NotFound(String),
}

impl FsRefusal {
    /// The JSON-RPC error the agent gets.
    pub(crate) fn to_rpc(&self) -> agent_client_protocol::Error {
        let code = match self {
            FsRefusal::Outside { .. } | FsRefusal::Invalid { .. } => -32602,
            FsRefusal::NotFound(_) => -32002,
            _ => -32603,
        };
        agent_client_protocol::Error::new(code, self.to_string())
    }
}

/// The checked absolute path of `path`, inside `root` (symlinks resolved; a missing file is
/// checked through its existing ancestors).
pub(crate) fn inside(root: &Path, path: &Path) -> Result<PathBuf, FsRefusal> {
    let shown = path.display().to_string();
    if !path.is_absolute() {
        return Err(FsRefusal::Invalid { path: shown, why: "ACP paths are absolute".to_owned() });
    }
    let root_s = root.to_string_lossy();
    let mut guard = PathGuard::new(PathFlavor::Posix, &root_s);
    let checked = guard.check_resolved(&shown, &bb_service::fs::real_path);
    match (checked.verdict, checked.normalized) {
        (Verdict::Inside, Some(p)) => Ok(PathBuf::from(p)),
        (Verdict::Outside, _) => Err(FsRefusal::Outside { path: shown, root: root_s.into_owned() }),
        _ => Err(FsRefusal::Invalid {
            path: shown,
            why: checked.error.map_or_else(|| "invalid".to_owned(), |e| e.to_string()),
        }),
    }
}

/// Lines `line` (1-based) onward, at most `limit` of them, of `text`.
pub(crate) fn slice_lines(text: &str, line: Option<u32>, limit: Option<u32>) -> String {
    if line.is_none() && limit.is_none() {
        return text.to_owned();
    }
    let skip = line.map_or(0, |l| l.saturating_sub(1) as usize);
    let take = limit.map_or(usize::MAX, |l| l as usize);
    text.split_inclusive('\n').skip(skip).take(take).collect()
}

/// Reads a text file (blocking; run on the blocking pool).
pub(crate) fn read(path: &Path) -> Result<String, FsRefusal> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => FsRefusal::NotFound(shown.clone()),
        _ => FsRefusal::Io(format!("cannot read {shown}: {e}")),
    })?;
    if !meta.is_file() {
        return Err(FsRefusal::Io(format!("{shown} is not a regular file")));
    }
    if meta.len() > MAX_READ_BYTES {
        return Err(FsRefusal::Io(format!(
            "{shown} has {} bytes; the bridge reads at most {MAX_READ_BYTES} bytes (maxReadBytes)",
            meta.len()
        )));
    }
    let bytes =
        std::fs::read(path).map_err(|e| FsRefusal::Io(format!("cannot read {shown}: {e}")))?;
    String::from_utf8(bytes).map_err(|e| {
        FsRefusal::Io(format!(
            "{shown} is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Writes a text file, creating missing parent directories (blocking).
pub(crate) fn write(path: &Path, content: &str) -> Result<(), FsRefusal> {
    let shown = path.display().to_string();
    if content.len() > MAX_WRITE_BYTES {
        return Err(FsRefusal::Io(format!(
            "the content for {shown} has {} bytes; the bridge writes at most {MAX_WRITE_BYTES} (maxWriteBytes)",
            content.len()
        )));
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| FsRefusal::Io(format!("cannot create {}: {e}", parent.display())))?;
    }
    std::fs::write(path, content).map_err(|e| FsRefusal::Io(format!("cannot write {shown}: {e}")))
}
