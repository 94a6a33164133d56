//! The stop signals every bridge binary obeys.

use std::future::Future;

/// Installs the SIGTERM and SIGINT handlers now, and resolves once either signal arrives.
///
/// Call it before anything is started: a signal that comes while the engine starts, or
/// before the returned future is first polled, is kept and resolves the future. Without the
/// handlers the default action would end the process without stopping the engine in order or
/// closing the webview's connections.
pub fn terminate_signal() -> impl Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{SignalKind, signal};
    let handlers = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()));
    async move {
        let (Ok(mut term), Ok(mut int)) = handlers else {
            tracing::warn!(
                "cannot install the SIGTERM/SIGINT handlers; a signal ends the process without \
                 stopping the engine in order"
            );
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => {},
            _ = int.recv() => {},
        }
    }
}
