//! The engine's credential store (the backend plan's Decision 3: Kilo keeps provider
//! credentials as plaintext JSON, `auth.json` in its data directory, with best-effort file
//! permissions). The bridge checks it once at start: on POSIX, a store readable by its group
//! or by others is reported (a warning in the log and in `bb/connection` diagnostics) and
//! counted as `kilo.cli.credentials.insecure_storage_detected`. Its contents are never read.

use std::path::{Path, PathBuf};

/// The store's file name in the engine's data directory.
pub const STORE: &str = "auth.json";

/// What the check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// No store (no credentials saved yet).
    Missing,
    /// Readable by its owner only.
    Private,
    /// Readable by its group or by others: `mode` is its permission bits.
    Readable {
        /// The store.
        path: PathBuf,
        /// Its permission bits (`0o644`, …).
        mode: u32,
    },
    /// Its metadata could not be read.
    Unknown(String),
}

impl Finding {
    /// Whether the store fails the best-effort hardening check.
    pub fn insecure(&self) -> bool {
        matches!(self, Finding::Readable { .. })
    }

    /// What to tell the user, when there is something to tell.
    pub fn warning(&self) -> Option<String> {
        match self {
            Finding::Readable { path, mode } => Some(format!(
                "the Kilo credential store {} is readable by other users (mode {mode:o}); \
                 restrict it with `chmod 600 {}`",
                path.display(),
                path.display()
            )),
            _ => None,
        }
    }
}

/// The engine's data directory as the engine finds it in `env`: `$XDG_DATA_HOME/kilo`, else
/// `$HOME/.local/share/kilo`.
pub fn data_dir<'a>(mut env: impl FnMut(&str) -> Option<&'a str>) -> Option<PathBuf> {
    let base = match env("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        Some(data) => PathBuf::from(data),
        None => PathBuf::from(env("HOME").filter(|h| !h.is_empty())?).join(".local/share"),
    };
    Some(base.join("kilo"))
}

/// Checks the store in `data_dir` (its permissions only; the file is never opened) and logs
/// a warning when it is readable by others.
pub fn check(data_dir: &Path) -> Finding {
    let path = data_dir.join(STORE);
    let finding = match std::fs::metadata(&path) {
        Ok(meta) => from_mode(&path, mode_of(&meta)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Finding::Missing,
        Err(err) => Finding::Unknown(err.to_string()),
    };
    if let Some(warning) = finding.warning() {
        tracing::warn!("{warning}");
    }
    finding
}

/// The finding for a store with these permission bits (`None`: not a POSIX system).
fn from_mode(path: &Path, mode: Option<u32>) -> Finding {
    match mode {
        Some(mode) if mode & 0o044 != 0 => {
            Finding::Readable { path: path.to_owned(), mode: mode & 0o7777 }
        }
        Some(_) => Finding::Private,
        None => Finding::Unknown("file permissions are not POSIX here".into()),
    }
}

#[cfg(unix)]
fn mode_of(meta: &std::fs::Metadata) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    Some(meta.permissions().mode())
}

#[cfg(not(unix))]
fn mode_of(_meta: &std::fs::Metadata) -> Option<u32> {
    None
}
