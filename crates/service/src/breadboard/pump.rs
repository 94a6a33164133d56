//! The tasks of the BreadBoard adapter: one per session stream (stream updates → engine
//! updates, delivered `seq` recorded in the cursor store), and the debounced cursor flusher.

use std::sync::Arc;
use std::time::Duration;

use bb_engine_client::breadboard::{BreadboardClient, SessionStream, StreamOptions, StreamUpdate};
use bb_host::Clock;
use bb_protocol::v1::ConnectionStatus;

use super::{Shared, lock};
use crate::engine::{ConnectionUpdate, EngineUpdate, UpdateSender};

fn failed(error: String) -> EngineUpdate {
    EngineUpdate::Connection(ConnectionUpdate {
        status: ConnectionStatus::Error,
        retry_count: None,
        last_error: Some(error),
    })
}

/// Streams one session until it ends, fails for good, or the task is aborted.
pub(super) async fn run(
    client: BreadboardClient,
    session: String,
    shared: Arc<Shared>,
    updates: UpdateSender,
    clock: Arc<dyn Clock>,
    options: StreamOptions,
) {
    let last_seq = lock(&shared.store).get(&session);
    let mut stream = match SessionStream::open(&client, &session, last_seq, options) {
        Ok(stream) => stream,
        Err(error) => {
            // The service loop may be gone; nothing else to tell.
            let _ = updates.send(failed(error.to_string())).await;
            return;
        }
    };
    while let Some(item) = stream.next().await {
        let update = match item {
            Ok(update) => update,
            Err(error) => {
                let _ = updates.send(failed(format!("session {session}: {error}"))).await;
                return;
            }
        };
        let seq = match &update {
            StreamUpdate::Event(event) => event.seq,
            _ => None,
        };
        let ended = matches!(update, StreamUpdate::Ended { .. });
        let mapped =
            lock(&shared.states).entry(session.clone()).or_default().apply(&session, update);
        for out in mapped {
            if updates.send(out).await.is_err() {
                return;
            }
        }
        let now = clock.now();
        let mut store = lock(&shared.store);
        if let Some(seq) = seq {
            store.record(&session, seq, now);
        }
        if ended {
            store.forget(&session, now);
        }
        if let Err(error) = store.flush_due(now) {
            tracing::warn!(%error, "saving stream positions failed");
        }
        if ended {
            return;
        }
    }
}

/// Writes due cursor changes once per `every`, so the tail of a burst is saved too.
pub(super) async fn flusher(shared: Arc<Shared>, clock: Arc<dyn Clock>, every: Duration) {
    loop {
        tokio::time::sleep(every.max(Duration::from_millis(10))).await;
        if let Err(error) = lock(&shared.store).flush_due(clock.now()) {
            tracing::warn!(%error, "saving stream positions failed");
        }
    }
}
