//! The engine health monitor: polls `/health` (an idle BreadBoard stream is silent, so only a
//! poll tells a dead engine), reports `bb/connection`, and on every recovery (the bridge's
//! start included) reconciles: lists the engine's sessions, resumes the streams of sessions
//! with a saved position, and marks those the engine lost (it restarted) as ended.

use std::collections::HashSet;
use std::sync::Arc;

use crate::client::BbError;
use bb_protocol::v1::ConnectionStatus;

use crate::mapping::summary;
use crate::{Shared, lock};
use bb_host::Input;

fn connection(status: ConnectionStatus, retry: Option<u64>, error: Option<String>) -> Input {
    Input::connection(status, retry, error)
}

/// Runs until aborted.
pub(super) async fn run(shared: Arc<Shared>) {
    let mut identity: Option<(Option<String>, Option<u64>, Option<u64>)> = None;
    let mut healthy = false;
    let mut failures = 0u64;
    loop {
        match shared.client.health().await {
            Ok(health) => {
                let unix = health.started_at_unix.map(f64::to_bits);
                let now = (health.started_at, unix, health.pid);
                let restarted = identity.as_ref().is_some_and(|before| *before != now);
                identity = Some(now);
                if !healthy || restarted {
                    if restarted {
                        tracing::warn!("the BreadBoard engine restarted: its sessions are gone");
                        // Its requests died with it; those of the sessions created on it since
                        // (before this poll noticed it) are its own.
                        let restarted = match shared.client.list_sessions().await {
                            Ok(listed) => Input::EngineRestartedHolding {
                                sessions: listed.into_iter().map(|s| s.session_id).collect(),
                            },
                            Err(_) => Input::EngineRestarted,
                        };
                        let _ = shared.updates.send(restarted).await;
                    }
                    if reconcile(&shared).await {
                        healthy = true;
                        failures = 0;
                        let _ = shared
                            .updates
                            .send(connection(ConnectionStatus::Connected, None, None))
                            .await;
                    }
                } else {
                    resume_lost(&shared);
                }
            }
            Err(BbError::Unauthorized { status }) => {
                healthy = false;
                let why = format!(
                    "the BreadBoard engine refused the bridge's token (HTTP {status}): check --engine-token-env"
                );
                let _ =
                    shared.updates.send(connection(ConnectionStatus::Error, None, Some(why))).await;
            }
            Err(error) => {
                healthy = false;
                failures += 1;
                let why = format!("the BreadBoard engine does not answer: {error}");
                let _ = shared
                    .updates
                    .send(connection(ConnectionStatus::Connecting, Some(failures), Some(why)))
                    .await;
            }
        }
        tokio::time::sleep(shared.config.health_interval).await;
    }
}

/// Resumes the streams that failed for good while the engine answers (a reconcile resumes
/// them too, after an outage).
fn resume_lost(shared: &Arc<Shared>) {
    let lost: Vec<String> = lock(&shared.lost).drain().collect();
    for id in lost {
        if shared.cursors.sessions().contains(&id) || lock(&shared.states).contains_key(&id) {
            super::ensure_stream(shared, &id);
        }
    }
}

/// Lists the engine's sessions into the view, resumes saved streams, ends lost sessions.
/// False when the engine could not be listed (tried again on the next poll).
async fn reconcile(shared: &Arc<Shared>) -> bool {
    let listed = match shared.client.list_sessions().await {
        Ok(listed) => listed,
        Err(error) => {
            tracing::debug!(%error, "listing sessions failed");
            return false;
        }
    };
    let held: HashSet<&str> = listed.iter().map(|s| s.session_id.as_str()).collect();
    let mut sessions: Vec<_> = listed.iter().map(summary).collect();
    sessions.sort_by(|a, b| b.updated_at.unwrap_or(0.0).total_cmp(&a.updated_at.unwrap_or(0.0)));
    let _ = shared.updates.send(Input::SessionsListed(sessions)).await;
    for id in shared.cursors.sessions() {
        if held.contains(id.as_str()) {
            super::ensure_stream(shared, &id);
            continue;
        }
        if let Some(task) = lock(&shared.streams).remove(&id) {
            task.abort();
        }
        let updates = lock(&shared.state(&id)).gone(
            &id,
            "The engine no longer holds this session (the engine restarted: its sessions live in memory). Its stream ended; start a new session to go on.",
        );
        lock(&shared.states).remove(&id);
        shared.cursors.forget(&id);
        for update in updates {
            let _ = shared.updates.send(update).await;
        }
    }
    true
}
