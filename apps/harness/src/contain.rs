//! `bb-harness contain`: checks paths against a workspace root, lexically or (with
//! `--resolve`) on the real filesystem, one JSON line per path.

use std::io::Write;

use bb_normalize::{PathFlavor, PathGuard};
use serde_json::json;

/// Path flavor argument.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum FlavorArg {
    /// POSIX paths.
    Posix,
    /// Windows paths.
    Windows,
}

/// Runs the subcommand.
pub(crate) fn run(
    root: &str,
    flavor: FlavorArg,
    resolve: bool,
    paths: &[String],
) -> anyhow::Result<()> {
    let flavor = match flavor {
        FlavorArg::Posix => PathFlavor::Posix,
        FlavorArg::Windows => PathFlavor::Windows,
    };
    if resolve && flavor == PathFlavor::Windows && !cfg!(windows) {
        anyhow::bail!("--resolve needs the host's path flavor (posix here)");
    }
    let mut guard = PathGuard::new(flavor, root);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for path in paths {
        let checked = if resolve {
            guard.check_resolved(path, &bb_service::fs::real_path)
        } else {
            guard.check(path)
        };
        let mut line =
            json!({ "path": path, "verdict": checked.verdict, "normalized": checked.normalized });
        if let (Some(err), Some(obj)) = (checked.error, line.as_object_mut()) {
            obj.insert("error".to_owned(), err.to_string().into());
        }
        serde_json::to_writer(&mut out, &line)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}
