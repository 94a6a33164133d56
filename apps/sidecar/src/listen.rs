//! `--listen PATH`: the runtime serves the clients of a Unix socket (`bb_bridge_stdio::socket`)
//! instead of stdio, and outlives them by `--linger SECS`, so a webview host that restarts
//! (a VS Code window reload) re-attaches to the same engine, sessions, rings and pending
//! prompts. One sidecar per path: a second one finds the owner's lock, says so and exits 0.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use bb_bridge_stdio::socket::{Bound, Ended};
use bb_launch::Launcher;
use bb_protocol::Limits;
use bb_service::Pace;
use tokio::sync::mpsc;

use crate::Args;

/// How long the output writers get to flush after the runtime ended.
const WRITERS_GRACE: Duration = Duration::from_secs(2);

/// Binds `path` (or reports its owner), then runs the service over its clients until the
/// linger period passes with no client, or SIGTERM/SIGINT; then stops the engine.
pub(crate) async fn run(args: Args, path: PathBuf, pace: Pace) -> anyhow::Result<()> {
    let terminate = bb_launch::terminate_signal();
    let mut listener = match bb_bridge_stdio::socket::bind(&path)
        .with_context(|| format!("cannot listen on {}", path.display()))?
    {
        Bound::Listening(listener) => listener,
        Bound::Running { pid } => {
            let owner = pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
            tracing::info!(path = %path.display(), ?pid, "another sidecar serves this path");
            let mut out = std::io::stdout().lock();
            writeln!(out, "already serving {}{owner}; connect to it", path.display())?;
            return Ok(());
        }
    };
    let linger = Duration::from_secs(args.linger);
    let (tx, connections) = mpsc::channel(16);
    let serving = tokio::spawn(async move {
        let served = listener.serve(tx, Limits::default(), linger, terminate).await;
        (listener, served)
    });
    // The engine set-up is checked before `listening on` is said: a sidecar that cannot serve
    // (a missing engine binary, a bad flag) exits before it, its error on stderr, so the
    // caller reports that error instead of connecting to a socket that is about to close
    // (and starting the same failing sidecar again). Clients may connect meanwhile: they are
    // served once the loop runs.
    let launcher = Launcher::start_paced(args.engine, Some(pace)).await?;
    let service = crate::service(&launcher).await?;
    writeln!(std::io::stdout().lock(), "listening on {}", path.display())?;
    tracing::info!(path = %path.display(), linger_secs = args.linger, "listening");
    let result = service.run(connections).await;
    if !serving.is_finished() {
        serving.abort();
    }
    if let Ok((_listener, (ended, writers))) = serving.await {
        match ended {
            Ended::Linger => tracing::info!("no client for the linger period; bye"),
            Ended::Shutdown => tracing::info!("shutdown requested; bye"),
            Ended::RuntimeGone => tracing::warn!("the runtime stopped taking clients"),
        }
        let flushed = futures_join(writers);
        if tokio::time::timeout(WRITERS_GRACE, flushed).await.is_err() {
            tracing::warn!("a client's output did not flush in time");
        }
    }
    result.map_err(Into::into)
}

async fn futures_join(writers: Vec<tokio::task::JoinHandle<()>>) {
    for writer in writers {
        let _ = writer.await;
    }
}
