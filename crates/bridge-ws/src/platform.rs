//! The platform port: `dialog.open` and `shell.openPath` go to the desktop host when there
//! is one. [`HeadlessPlatform`] is the gateway's own: no dialogs, and only paths inside the
//! workspace are opened (with `xdg-open`).

use std::path::PathBuf;

use async_trait::async_trait;
use bb_normalize::contain::{PathFlavor, PathGuard, Verdict};
use bb_protocol::ws::{DialogOpenParams, DialogOpenResult, OpenPathParams, WsError};

/// What a desktop host (Tauri) plugs in to serve the platform methods.
#[async_trait]
pub trait Platform: Send + Sync + std::fmt::Debug {
    /// `dialog.open`.
    async fn dialog_open(&self, params: DialogOpenParams) -> Result<DialogOpenResult, WsError>;
    /// `shell.openPath`.
    async fn open_path(&self, params: OpenPathParams) -> Result<(), WsError>;
}

/// The headless platform: dialogs are `unsupported`; `shell.openPath` opens a path only
/// when it resolves (symlinks included) inside a folder of the workspace, else
/// `path_outside_workspace`.
#[derive(Debug)]
pub struct HeadlessPlatform {
    roots: Vec<PathBuf>,
}

impl HeadlessPlatform {
    /// Paths are contained in `root` (canonical).
    pub fn new(root: PathBuf) -> Self {
        Self { roots: vec![root] }
    }

    /// Paths are contained in any of the workspace's `folders` (canonical): opening a file is
    /// the user's own act, so any folder the bridge serves will do.
    pub fn for_folders(folders: Vec<PathBuf>) -> Self {
        Self { roots: folders }
    }

    /// The canonical path to open, when it is inside a folder of the workspace.
    pub fn contained(&self, path: &str) -> Result<PathBuf, WsError> {
        for root in &self.roots {
            let mut guard = PathGuard::new(PathFlavor::Posix, &root.to_string_lossy());
            let checked = guard.check_resolved(path, &bb_service::fs::real_path);
            match (checked.verdict, checked.normalized) {
                (Verdict::Inside, Some(p)) => return Ok(PathBuf::from(p)),
                (Verdict::Invalid, _) => {
                    return Err(WsError::new(
                        "invalid_path",
                        format!(
                            "`{path}` is not a usable path: {}",
                            checked.error.map(|e| e.to_string()).unwrap_or_default()
                        ),
                    ));
                }
                _ => {}
            }
        }
        Err(WsError::new(
            "path_outside_workspace",
            format!("`{path}` is outside the workspace; only workspace files can be opened"),
        ))
    }
}

#[async_trait]
impl Platform for HeadlessPlatform {
    async fn dialog_open(&self, _params: DialogOpenParams) -> Result<DialogOpenResult, WsError> {
        Err(WsError::new(
            "unsupported",
            "this gateway runs headless and cannot show a file dialog; type or paste the path \
             instead (a desktop host provides dialogs)",
        ))
    }

    async fn open_path(&self, params: OpenPathParams) -> Result<(), WsError> {
        let path = self.contained(&params.path)?;
        if !path.exists() {
            return Err(WsError::new(
                "not_found",
                format!("`{}` does not exist in the workspace", params.path),
            ));
        }
        open_with_system_handler(&path).await
    }
}

/// The one place the gateway starts a process: the desktop's opener for a contained path.
#[allow(clippy::disallowed_methods)]
async fn open_with_system_handler(path: &std::path::Path) -> Result<(), WsError> {
    let status = tokio::process::Command::new("xdg-open")
        .arg(path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .await;
    match status {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(WsError::new("open_failed", format!("xdg-open exited with {s}"))),
        Err(e) => Err(WsError::new(
            "unsupported",
            format!("no system opener on this machine (xdg-open: {e}); open the file yourself"),
        )),
    }
}
