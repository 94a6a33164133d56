//! The one runtime behind every webview connection: one engine adapter (and, in spawn mode,
//! one supervised engine) serving all connections the WebSocket bridge hands in.

use std::sync::Arc;

use bb_launch::{EngineParts, Launcher};
use bb_service::{MemoryTrim, Service, SystemClock, WebviewSink};
use tokio::sync::mpsc;

/// Runs the service over every connection that arrives, until the channel closes; then the
/// service stops the engine it started. `ring`: messages each tab's ring keeps, and
/// `history_turns`: turns of a resync and of a history page, when not the defaults (tests).
pub(crate) async fn serve_connections(
    launcher: Arc<Launcher>,
    engine: EngineParts,
    connections: mpsc::Receiver<WebviewSink>,
    ring: Option<usize>,
    history_turns: Option<usize>,
) -> anyhow::Result<()> {
    let EngineParts { adapter, updates, supervision } = engine;
    let mut config = launcher.service_config();
    config.trim = Some(MemoryTrim::new(release_free_memory));
    if let Some(ring) = ring {
        config.host.max_buffered_events = ring.max(1);
    }
    if let Some(turns) = history_turns {
        config.host.recent_turns = turns.max(1);
        config.host.history_turns = turns.max(1);
    }
    let service = Service::new(config, adapter, updates, Arc::new(SystemClock), supervision);
    service.run(connections).await?;
    Ok(())
}

/// Returns the calling thread's free allocator pages to the system (after a burst).
fn release_free_memory() {
    // SAFETY: `mi_collect` takes no pointers and may be called from any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(true) }
}
