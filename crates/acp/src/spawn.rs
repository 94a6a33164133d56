//! From an `acp_connect` request to a [`SpawnSpec`]: the working directory inside the
//! workspace unless it is trusted, the environment through the supervisor's allow-list plus
//! what the request names, the program found on the child's `PATH`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use bb_normalize::{PathFlavor, PathGuard, Verdict};
use bb_protocol::ws::AcpConnectParams;
use bb_supervisor::SpawnSpec;

use crate::AcpError;

/// Where and how agents may be started.
#[derive(Debug, Clone)]
pub struct LaunchPolicy {
    /// The workspace root (absolute); the default working directory.
    pub workspace: PathBuf,
    /// Whether the user trusts the workspace: then the agent's cwd may be anywhere.
    pub trusted: bool,
    /// The parent's variables that pass the allow-list
    /// ([`bb_supervisor::env::inherit_allowed`]).
    pub inherited_env: Vec<(OsString, OsString)>,
}

impl LaunchPolicy {
    /// A policy with the bridge's own environment filtered through the allow-list.
    pub fn from_process_env(workspace: PathBuf, trusted: bool) -> Self {
        Self {
            workspace,
            trusted,
            inherited_env: bb_supervisor::env::inherit_allowed(std::env::vars_os()),
        }
    }

    /// The spawn for one `acp_connect`.
    pub fn spec(&self, params: &AcpConnectParams) -> Result<SpawnSpec, AcpError> {
        if params.command.trim().is_empty() || params.command.contains('\0') {
            return Err(AcpError::InvalidParams(
                "acp_connect needs a command: the agent's executable".to_owned(),
            ));
        }
        let args = params.args.clone().unwrap_or_default();
        if args.iter().any(|a| a.contains('\0')) {
            return Err(AcpError::InvalidParams("an argument contains a NUL byte".to_owned()));
        }
        let cwd = self.cwd(params.cwd.as_deref())?;
        let mut env = self.inherited_env.clone();
        for (name, value) in params.env.iter().flatten() {
            check_env_name(name)?;
            if value.contains('\0') {
                return Err(AcpError::InvalidParams(format!("the value of {name} has a NUL byte")));
            }
            env.retain(|(k, _)| k.to_str() != Some(name.as_str()));
            env.push((name.into(), value.into()));
        }
        let program = find_program(&params.command, &cwd, &env)?;
        Ok(SpawnSpec {
            program,
            args: args.into_iter().map(OsString::from).collect(),
            cwd,
            env,
            secret_env: Vec::new(),
        })
    }

    /// The agent's working directory: the workspace by default; a relative path is taken
    /// from the workspace; outside it only when trusted. Must be an existing directory.
    pub fn cwd(&self, requested: Option<&str>) -> Result<PathBuf, AcpError> {
        let root = self.workspace.to_string_lossy().into_owned();
        let Some(requested) = requested.filter(|c| !c.is_empty()) else {
            return Ok(self.workspace.clone());
        };
        let mut guard = PathGuard::new(PathFlavor::Posix, &root);
        let checked = guard.check_resolved(requested, &bb_service::fs::real_path);
        let path = match (checked.verdict, checked.normalized) {
            (Verdict::Inside, Some(path)) => PathBuf::from(path),
            (Verdict::Outside, _) if self.trusted => {
                bb_normalize::contain::normalize(PathFlavor::Posix, requested, Some(&root))
                    .map(PathBuf::from)
                    .map_err(|e| AcpError::InvalidParams(format!("cwd {requested}: {e}")))?
            }
            (Verdict::Outside, _) => return Err(AcpError::Untrusted(format!("cwd {requested}"))),
            (_, _) => {
                let why = checked.error.map_or_else(|| "invalid".to_owned(), |e| e.to_string());
                return Err(AcpError::InvalidParams(format!("cwd {requested}: {why}")));
            }
        };
        if !path.is_dir() {
            return Err(AcpError::InvalidParams(format!(
                "cwd {} is not an existing directory",
                path.display()
            )));
        }
        Ok(path)
    }
}

/// Loader variables could make any allowed program run other code: never set from a request.
pub(crate) fn check_env_name(name: &str) -> Result<(), AcpError> {
    if name.is_empty() || name.contains(['=', '\0']) {
        return Err(AcpError::InvalidParams(format!(
            "{name:?} is not an environment variable name"
        )));
    }
    if name.starts_with("LD_") || name.starts_with("DYLD_") {
        return Err(AcpError::InvalidParams(format!(
            "{name} is a dynamic loader variable and is never passed to an agent"
        )));
    }
    Ok(())
}

/// A command with a `/` is a path (relative to the agent's cwd); a bare name is looked up on
/// the `PATH` the agent will get, so a missing program is reported before anything starts.
pub(crate) fn find_program(
    command: &str,
    cwd: &Path,
    env: &[(OsString, OsString)],
) -> Result<PathBuf, AcpError> {
    if command.contains('/') {
        let path = cwd.join(command);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(AcpError::Spawn { program: command.to_owned(), reason: "no such file".to_owned() })
        };
    }
    let path_var = env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone());
    let found = path_var.iter().flat_map(std::env::split_paths).map(|dir| dir.join(command)).find(
        |candidate| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        },
    );
    found.ok_or_else(|| AcpError::Spawn {
        program: command.to_owned(),
        reason: "not found on the agent's PATH; give an absolute path or set PATH in env"
            .to_owned(),
    })
}
