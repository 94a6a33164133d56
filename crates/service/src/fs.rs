//! The real filesystem as the workspace containment check's resolver
//! (`bb_normalize::PathGuard::check_resolved`): the one place a path is resolved on disk,
//! for every check of a workspace path the bridge makes (engine files, an agent's working
//! directory, the gateway's `shell.openPath`, `bb-harness contain --resolve`).

use bb_normalize::Resolution;

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
