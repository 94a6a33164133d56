//! The real filesystem as the workspace containment check's resolver
//! (`bb_normalize::PathGuard::check_resolved`): the one place a path is resolved on disk,
//! for every check of a workspace path the bridge makes (engine files, an agent's working
//! directory, the gateway's `shell.openPath`, `bb-harness contain --resolve`), and the one
//! way a file of the state directory is written ([`write_atomic`]).

use std::io::Write;
use std::path::Path;

use bb_normalize::Resolution;

/// Writes `bytes` to `path` through a temporary file in the same directory, synced, then
/// renamed over `path`: a reader (or the next start after a crash) sees the old file or the
/// new one, never a torn one. Creates the directory when missing.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// `path` resolved on the real filesystem, symlinks followed. A path that does not exist is
/// `Missing`, and so is one below a file (`NotADirectory`: nothing can exist there); the
/// check then resolves its longest existing prefix. Any other failure (permissions, a
/// symlink loop) is `Failed`, and the check refuses the path.
pub fn real_path(path: &str) -> Resolution {
    match std::fs::canonicalize(path) {
        Ok(real) => Resolution::Found(real.to_string_lossy().into_owned()),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            Resolution::Missing
        }
        Err(e) => Resolution::Failed(e.to_string()),
    }
}
