//! Feeds the gateway's webview connections to the runtime. Each connection gets its own
//! service loop over an engine adapter built by the launcher; with the demo and BreadBoard
//! engines the adapters share one engine, in spawn mode each loop supervises its own.

use std::sync::Arc;

use bb_launch::{EngineParts, Launcher};
use bb_service::{Service, SystemClock, WebviewSink};
use tokio::sync::mpsc;

/// Serves every connection that arrives until the channel closes.
pub(crate) async fn serve_connections(
    launcher: Arc<Launcher>,
    mut connections: mpsc::Receiver<WebviewSink>,
) {
    let mut count = 0u64;
    while let Some(sink) = connections.recv().await {
        count += 1;
        let n = count;
        let launcher = launcher.clone();
        tokio::spawn(async move {
            let parts = launcher.engine_for_connection(n).await;
            let EngineParts { adapter, updates, supervision } = match parts {
                Ok(parts) => parts,
                Err(err) => {
                    // Dropping the sink answers the connection's requests with
                    // `engine_unavailable`.
                    tracing::error!(%err, "cannot set up the engine for a webview connection");
                    return;
                }
            };
            let service = Service::new(
                launcher.service_config(),
                adapter,
                updates,
                Arc::new(SystemClock),
                supervision,
            );
            if let Err(err) = service.run(sink).await {
                tracing::warn!(%err, "a webview connection's service ended with an error");
            }
        });
    }
}
