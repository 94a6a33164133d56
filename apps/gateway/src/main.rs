//! `bb-gateway`: the WebSocket bridge binary. It serves the sidebar page and its WebSocket on
//! a loopback port and prints the one URL to open (the per-run token in it); every browser
//! tab or Tauri window that connects is its own webview over the engine chosen with the
//! same flags as `bb-sidecar` (the offline demo engine by default). Logs go to stderr.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use bb_bridge_ws::{HeadlessPlatform, OriginPolicy, WsState};
use bb_launch::{EngineArgs, Launcher, terminate_signal};
use bb_protocol::Limits;
use clap::Parser;
use secrecy::ExposeSecret;
use tokio::sync::mpsc;

mod acp;
mod page;
mod runtime;

/// The allocator (as in every bridge binary, mimalloc asked for an alignment only where a
/// value needs one): the event path allocates many small, short-lived values and frees them
/// on another task's thread, which glibc malloc does slowly.
#[global_allocator]
static ALLOCATOR: bb_launch::Mimalloc = bb_launch::Mimalloc;

/// The WebSocket gateway: serves the sidebar page and the WebSocket envelope
/// (`request`/`response`/`event`, the `bb.*` methods plus `dialog.open`, `shell.openPath` and
/// `acp_*`) on 127.0.0.1, and prints one line with the URL to open (it carries the per-run
/// token; keep it private). Each connection is its own webview over the one engine. Logs go
/// to stderr (RUST_LOG, default `info`); SIGTERM/SIGINT stop the gateway and the engine.
#[derive(Debug, Parser)]
#[command(name = "bb-gateway", version, override_usage = bb_launch::usage!("bb-gateway"))]
struct Args {
    #[command(flatten)]
    engine: EngineArgs,

    /// The loopback port to listen on (0: any free port).
    #[arg(long, value_name = "P", default_value_t = 0)]
    port: u16,

    /// Also allow WebSocket connections from this page origin (e.g. `https://ide.example`);
    /// the gateway's own origin and `tauri://localhost` are always allowed. Repeatable.
    #[arg(long, value_name = "ORIGIN")]
    allow_origin: Vec<String>,

    /// The largest WebSocket message accepted, in bytes; a bigger one closes that connection
    /// with code 1009.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_bytes)]
    max_message_bytes: usize,

    /// Also serve `/echo`: a WebSocket that echoes every message back (token required), for
    /// WebSocket conformance testing.
    #[arg(long)]
    echo_route: bool,

    /// Test only: messages each tab's replay ring keeps (default 4096). A small ring makes a
    /// page that fell behind get a declared resync, for testing that path.
    #[arg(long, hide = true, value_name = "N")]
    test_ring_messages: Option<usize>,

    /// Test only: turns a resync sent as updates carries, and turns of a `bb.history` page
    /// (default 50 each). A small value makes a short session paged, for testing that path.
    #[arg(long, hide = true, value_name = "N")]
    test_history_turns: Option<usize>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    bb_logging::init();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = runtime.block_on(run(args));
    runtime.shutdown_timeout(Duration::from_millis(500));
    result
}

async fn run(args: Args) -> anyhow::Result<()> {
    let terminate = terminate_signal();
    let launcher = Arc::new(Launcher::start(args.engine).await?);
    // The engine is checked (its executable found, an agent started, a URL parsed) before
    // the URL is printed: a link that cannot work is never shown.
    let engine = launcher.engine().await?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
        .await
        .with_context(|| format!("listening on 127.0.0.1:{} (try another --port)", args.port))?;
    let port = listener.local_addr()?.port();
    let (connections, incoming) = mpsc::channel(16);
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let ws = Arc::new(WsState {
        token: bb_bridge_ws::fresh_token(),
        port,
        origins: OriginPolicy::new(port, &args.allow_origin),
        limits: Limits { max_bytes: args.max_message_bytes, ..Limits::default() },
        platform: Arc::new(HeadlessPlatform::for_folders(launcher.folders().to_vec())),
        acp: Arc::new(acp::GatewayAcp::new(
            launcher.workspace_root().to_path_buf(),
            launcher.args().trusted,
        )),
        connections,
        echo: args.echo_route,
        stopping,
    });
    // The page names the engine in words; the demo is not a BreadBoard the user runs.
    let settings = match launcher.args().engine {
        bb_launch::EngineKind::Demo => serde_json::json!({"engineLabel": "Demo engine"}),
        _ => serde_json::json!({}),
    };
    let app = bb_bridge_ws::router(ws.clone())
        .merge(page::router(Arc::new(page::PageState { ws: ws.clone(), settings })));
    let runtime = tokio::spawn(runtime::serve_connections(
        launcher.clone(),
        engine,
        incoming,
        args.test_ring_messages,
        args.test_history_turns,
    ));

    tracing::info!(port, "gateway listening on 127.0.0.1");
    let mut out = std::io::stdout().lock();
    writeln!(out, "open http://127.0.0.1:{port}/?token={}", ws.token.expose_secret())?;
    out.flush()?;
    drop(out);

    // Serving ends on SIGTERM/SIGINT, or when the runtime fails (then its error is the exit
    // reason). Open WebSockets are not waited for: the runtime is stopped, which stops the
    // engine it started.
    let mut runtime = runtime;
    let stopped = tokio::select! {
        served = axum::serve(listener, app).with_graceful_shutdown(terminate) => {
            served.map_err(anyhow::Error::from)
        }
        ended = &mut runtime => match ended {
            Ok(Ok(())) => Err(anyhow::anyhow!("the runtime stopped")),
            Ok(Err(err)) => Err(err),
            Err(err) => Err(err.into()),
        },
    };
    // Open connections close with 1001; once they and the server are gone the connection
    // channel closes and the runtime stops the engine it started.
    let _ = stop.send(true);
    drop(ws);
    if !runtime.is_finished() {
        let grace = Duration::from_secs(launcher.args().stop_grace + 5);
        if tokio::time::timeout(grace, &mut runtime).await.is_err() {
            tracing::warn!("the runtime did not stop in time; exiting anyway");
        }
    }
    tracing::info!("stopping; bye");
    stopped
}
