//! `bb-sidecar`: the stdio bridge binary. One webview speaks v1 JSON Lines on stdin/stdout;
//! one engine serves the workspace, either spawned and supervised by the sidecar or attached
//! to by URL, or (the default) the offline demo: a fake BreadBoard engine in-process playing
//! a recorded turn. Logs go to stderr; stdout carries only envelopes.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use bb_protocol::Limits;
use bb_service::kilo::{KiloAdapter, KiloProbe};
use bb_service::{EngineAdapter, Service, ServiceConfig, Supervision, SystemClock, UpdateReceiver};
use bb_supervisor::kilo::{EngineEndpoint, USERNAME};
use bb_supervisor::{KiloConfig, KiloSupervisor, TokioSpawner};
use clap::{Parser, ValueEnum};

mod breadboard;
use secrecy::SecretString;
use tracing_subscriber::EnvFilter;

/// The engine behind the bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum EngineKind {
    /// The Kilo CLI server (`kilo serve`).
    Kilo,
    /// A BreadBoard CLI-bridge engine at --engine-url.
    Breadboard,
    /// Offline demo: a fake BreadBoard engine in-process plays a recorded turn (streamed
    /// reply, a tool call, a permission prompt and its diff) for every message.
    Demo,
}

/// The stdio sidecar: a webview speaks the v1 envelope as JSON Lines on stdin/stdout (one
/// envelope per line); the sidecar drives one engine for the workspace. Logs go to stderr
/// (filter with RUST_LOG, default `info`). The sidecar exits 0 when stdin closes, after
/// stopping the engine it started.
#[derive(Debug, Parser)]
#[command(name = "bb-sidecar", version)]
struct Args {
    /// The workspace directory: the spawned engine's working directory and project root.
    /// Required when the sidecar spawns the engine.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,

    /// Which engine to drive.
    #[arg(long, value_enum, value_name = "KIND", default_value = "demo")]
    engine: EngineKind,

    /// Spawn and supervise this engine executable (default: `kilo` from PATH). The engine
    /// gets a fresh password through its environment, an allow-listed environment (PATH,
    /// HOME, XDG_*, LANG/LC_*, TZ, KILO_*), its own process group, and dies with the sidecar.
    #[arg(long, value_name = "PATH", conflicts_with = "engine_url")]
    engine_bin: Option<PathBuf>,

    /// Attach to an engine already running at this loopback URL instead of spawning one.
    #[arg(long, value_name = "URL")]
    engine_url: Option<String>,

    /// With --engine-url: the environment variable holding the engine's password (never pass
    /// a password as an argument). Without it, the engine is assumed unsecured.
    #[arg(long, value_name = "VAR", requires = "engine_url")]
    engine_password_env: Option<String>,

    /// BreadBoard: the environment variable holding the engine's bearer token (never pass a
    /// token as an argument). Without it, the engine is assumed unsecured.
    #[arg(long, value_name = "VAR", requires = "engine_url")]
    engine_token_env: Option<String>,

    /// BreadBoard: the agent config path for sessions the webview creates without one.
    #[arg(long, value_name = "PATH")]
    engine_config: Option<String>,

    /// BreadBoard: where stream positions, downloaded artifacts and diffs are kept
    /// (default: `<workspace or cwd>/.bb-bridge/state`; the demo uses a temporary dir).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,

    /// With --engine-url: the Basic-auth username.
    #[arg(long, value_name = "NAME", default_value = USERNAME, requires = "engine_url")]
    engine_username: String,

    /// Seconds to wait for a spawned engine to become healthy.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    start_timeout: u64,

    /// Seconds between SIGTERM and SIGKILL when stopping a spawned engine.
    #[arg(long, value_name = "SECS", default_value_t = 5)]
    stop_grace: u64,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    // The service loop runs on this (main) thread: the engine is spawned from it, and its
    // parent-death signal is tied to the spawning thread.
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = runtime.block_on(run(args));
    // A stdin read may still block a runtime thread (after SIGTERM): don't wait for it.
    runtime.shutdown_timeout(Duration::from_millis(200));
    result
}

async fn run(args: Args) -> anyhow::Result<()> {
    let config = ServiceConfig {
        stop_grace: Duration::from_secs(args.stop_grace),
        ..ServiceConfig::default()
    };
    match args.engine {
        EngineKind::Kilo => run_kilo(args, config).await,
        EngineKind::Breadboard | EngineKind::Demo => breadboard::run(args, config).await,
    }
}

async fn run_kilo(args: Args, config: ServiceConfig) -> anyhow::Result<()> {
    let (adapter, updates) = KiloAdapter::new();

    let supervision = match &args.engine_url {
        Some(url) => {
            let password = match &args.engine_password_env {
                Some(var) => Some(SecretString::from(
                    std::env::var(var)
                        .with_context(|| format!("reading the engine password from ${var}"))?,
                )),
                None => None,
            };
            let endpoint = EngineEndpoint {
                base_url: url.clone(),
                username: args.engine_username.clone(),
                password,
            };
            adapter.reconnect(endpoint).await.context("attaching to the engine")?;
            None
        }
        None => {
            let Some(workspace) = &args.workspace else {
                bail!(
                    "--workspace DIR is required when the sidecar spawns the engine (or give --engine-url)"
                );
            };
            let workspace = std::fs::canonicalize(workspace)
                .with_context(|| format!("workspace {}", workspace.display()))?;
            if !workspace.is_dir() {
                bail!("workspace {} is not a directory", workspace.display());
            }
            let program = args.engine_bin.clone().unwrap_or_else(|| PathBuf::from("kilo"));
            let mut kilo = KiloConfig::new(program, workspace);
            kilo.parent_env = std::env::vars_os().collect();
            kilo.start_timeout = Duration::from_secs(args.start_timeout);
            kilo.stop_grace = config.stop_grace;
            let supervisor =
                KiloSupervisor::new(kilo, Arc::new(TokioSpawner::default()), Arc::new(KiloProbe));
            Some(Supervision::new(supervisor))
        }
    };

    serve(config, adapter, updates, supervision).await
}

/// Runs the service loop on stdio until the webview closes.
async fn serve(
    config: ServiceConfig,
    adapter: Arc<dyn EngineAdapter>,
    updates: UpdateReceiver,
    supervision: Option<Supervision>,
) -> anyhow::Result<()> {
    let (sink, bridge) = bb_bridge_stdio::stdio(Limits::default(), terminate_signal());
    let service = Service::new(config, adapter, updates, Arc::new(SystemClock), supervision);
    let result = service.run(bb_service::sink::single(sink)).await;
    bridge.reader.abort();
    if let Err(err) = bridge.writer.await {
        tracing::warn!(%err, "the output writer failed");
    }
    match result {
        Ok(()) => {
            tracing::info!("webview closed; bye");
            Ok(())
        }
        Err(err) => Err(err.into()),
    }
}

/// Resolves on SIGTERM or SIGINT, so the engine is stopped in order.
async fn terminate_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) =
        (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
    else {
        tracing::warn!("cannot install signal handlers; only end of input stops the sidecar");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {},
        _ = int.recv() => {},
    }
}
