//! `bb-sidecar`: the stdio bridge binary. One webview speaks v1 JSON Lines on stdin/stdout;
//! one engine serves the workspace, either spawned and supervised by the sidecar or attached
//! to by URL, or (the default) the offline demo: a fake BreadBoard engine in-process playing
//! a recorded turn. Logs go to stderr, every line redacted (`bb-logging`); stdout carries only
//! envelopes. With `--listen PATH` the same JSON Lines are served on a Unix socket instead
//! (`listen.rs`): any number of clients, each a webview connection of the one runtime, and
//! the sidecar outlives them by `--linger SECS`. The engine flags and
//! the engine setup live in `bb-launch`, shared with `bb-gateway`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bb_launch::{EngineArgs, EngineParts, Launcher, terminate_signal};
use bb_protocol::Limits;
use bb_service::{MemoryTrim, Pace, Service, SystemClock};
use clap::Parser;

mod listen;
mod math;
#[cfg(feature = "memdbg")]
mod memdbg;
mod relocs;

/// The allocator (as in every bridge binary, mimalloc asked for an alignment only where a
/// value needs one): the event path allocates many small, short-lived values and frees them
/// on another task's thread, which glibc malloc does slowly.
#[cfg(not(feature = "memdbg"))]
#[global_allocator]
static ALLOCATOR: bb_launch::Mimalloc = bb_launch::Mimalloc;

/// With `memdbg`, the same allocator counting what is live (`memdbg.rs`).
#[cfg(feature = "memdbg")]
#[global_allocator]
static ALLOCATOR: memdbg::Counting = memdbg::Counting;

/// The stdio sidecar: a webview speaks the v1 envelope as JSON Lines on stdin/stdout (one
/// envelope per line); the sidecar drives one engine for the workspace. Logs go to stderr
/// (filter with RUST_LOG, default `info`). The sidecar exits 0 when stdin closes, after
/// stopping the engine it started.
#[derive(Debug, Parser)]
#[command(name = "bb-sidecar", version, override_usage = bb_launch::usage!("bb-sidecar"))]
struct Args {
    #[command(flatten)]
    engine: EngineArgs,

    /// Serve the v1 JSON Lines on this Unix socket instead of stdin/stdout: any number of
    /// clients (each its own webview connection), mode 0600. When another sidecar already
    /// serves the path, say so on stdout and exit 0 (connect to that one). Prints
    /// `listening on PATH` on stdout once clients can connect and the engine set-up passed its
    /// checks (a set-up error exits 1 before it, saying why on stderr).
    #[arg(long, value_name = "PATH")]
    listen: Option<PathBuf>,

    /// With --listen: seconds to keep running (engine, sessions, pending prompts) while no
    /// client is connected, from the start and after the last client leaves; then the
    /// sidecar stops its engine and exits 0.
    #[arg(long, value_name = "SECS", default_value_t = 30, requires = "listen",
          value_parser = clap::value_parser!(u64).range(1..))]
    linger: u64,
}

fn main() -> anyhow::Result<()> {
    let released = relocs::release_relocation_table();
    let args = Args::parse();
    bb_logging::init();
    tracing::debug!(?released, "relocation table released");
    // The service loop, the engine's event path and the stdio writer all run on this (main)
    // thread: the engine is spawned from it (its parent-death signal is tied to the spawning
    // thread), an event is read, mapped, reduced and written in one wake-up of one thread,
    // and the writer reads what the loop made while it is still in this core's cache
    // (BENCHMARKS.md, "One thread for the event path": Kilo's event path had a thread of its
    // own, two wake-ups per event). The thread gathers while busy: many events share a
    // wake-up (`bb_service::pace`).
    let pace = Pace::from_env();
    let park = pace.park_hook();
    #[cfg(feature = "memdbg")]
    let park = move || {
        park();
        memdbg::tick();
    };
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().on_thread_park(park).build()?;
    let result = match args.listen.clone() {
        Some(path) => runtime.block_on(listen::run(args, path, pace)),
        None => runtime.block_on(run(args, pace)),
    };
    // A stdin read may still block a runtime thread (after SIGTERM): don't wait for it.
    runtime.shutdown_timeout(Duration::from_millis(200));
    result
}

/// Runs the service loop on stdio until the webview closes.
async fn run(args: Args, pace: Pace) -> anyhow::Result<()> {
    let terminate = terminate_signal();
    let launcher = Launcher::start_paced(args.engine, Some(pace)).await?;
    let service = service(&launcher).await?;
    let (sink, bridge) = bb_bridge_stdio::stdio(Limits::default(), terminate);
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

/// The service loop over the launcher's engine (not started yet).
pub(crate) async fn service(launcher: &Launcher) -> anyhow::Result<Service> {
    let EngineParts { adapter, updates, supervision } = launcher.engine().await?;
    let mut config = launcher.service_config();
    config.trim = Some(MemoryTrim::new(release_free_memory));
    Ok(Service::new(config, adapter, updates, Arc::new(SystemClock), supervision))
}

/// Returns the calling thread's free allocator pages to the system (after a burst).
fn release_free_memory() {
    // SAFETY: `mi_collect` takes no pointers and may be called from any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(true) }
    #[cfg(feature = "memdbg")]
    memdbg::full("trim");
}
