//! The one `GET /event` stream per workspace: parse, route by session, keep engine order,
//! watch heartbeats, reconnect with back-off, and refresh state from REST after a reconnect
//! (the stream has no replay, so a reconnect is a refresh boundary).

use std::sync::Arc;
use std::time::Duration;

use bb_engine_client::sse::{SseItem, SseParser};
use bb_engine_client::transport::{EngineRequest, EngineTransport, TransportError};
use bb_protocol::v1::ConnectionStatus;
use futures_util::StreamExt;

use super::events::{KiloEventState, session_summary};
use super::rest;
use crate::engine::{ConnectionUpdate, EngineError, EngineUpdate, UpdateSender};

/// How the stream is watched and retried.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamPolicy {
    /// No bytes for this long → the connection is treated as dropped (heartbeats come every
    /// 10 s).
    pub(crate) read_timeout: Duration,
    /// First reconnect delay, doubled per failed attempt.
    pub(crate) initial_backoff: Duration,
    /// Reconnect delay ceiling.
    pub(crate) max_backoff: Duration,
    /// Failed attempts in a row before giving up with an error.
    pub(crate) max_attempts: u32,
}

impl Default for StreamPolicy {
    fn default() -> Self {
        Self {
            read_timeout: Duration::from_secs(15),
            initial_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(5),
            max_attempts: 10,
        }
    }
}

/// Runs until the receiver is gone, the engine refuses the credentials, or reconnecting fails
/// `max_attempts` times in a row.
pub(crate) async fn run(
    transport: Arc<dyn EngineTransport>,
    updates: UpdateSender,
    policy: StreamPolicy,
) {
    let mut state = KiloEventState::default();
    let mut failures: u32 = 0;
    let mut connected_once = false;
    let mut last_error: Option<String> = None;
    loop {
        let retry_count = (failures > 0).then_some(u64::from(failures));
        if !send(
            &updates,
            connection(ConnectionStatus::Connecting, retry_count, last_error.clone()),
        )
        .await
        {
            return;
        }
        match transport.open_stream(EngineRequest::get("/event")).await {
            Ok(mut body) => {
                state.reset_stream();
                if connected_once {
                    // Refresh-on-reconnect: events published while disconnected are gone.
                    if !send(&updates, EngineUpdate::GapDetected { session_id: None }).await {
                        return;
                    }
                    if let Err(err) = refresh(transport.as_ref(), &updates, &mut state).await {
                        last_error =
                            Some(format!("refreshing state after reconnect failed: {err}"));
                        failures += 1;
                        if !backoff(&updates, failures, &policy, &last_error).await {
                            return;
                        }
                        continue;
                    }
                }
                connected_once = true;
                if !send(&updates, connection(ConnectionStatus::Connected, None, None)).await {
                    return;
                }
                let mut parser = SseParser::default();
                let mut items = Vec::new();
                let why = loop {
                    let chunk = match tokio::time::timeout(policy.read_timeout, body.next()).await {
                        Err(_) => {
                            break format!("no data from the engine for {:?}", policy.read_timeout);
                        }
                        Ok(None) => break "the engine closed the event stream".to_owned(),
                        Ok(Some(Err(err))) => break format!("event stream broke: {err}"),
                        Ok(Some(Ok(chunk))) => chunk,
                    };
                    items.clear();
                    if let Err(err) = parser.feed(&chunk, &mut items) {
                        break format!("event stream rejected: {err}");
                    }
                    for item in items.drain(..) {
                        let SseItem::Event(event) = item else { continue };
                        let raw = match serde_json::from_str(&event.data) {
                            Ok(raw) => raw,
                            Err(err) => {
                                tracing::warn!(%err, "engine event is not JSON; skipped");
                                continue;
                            }
                        };
                        for update in state.apply(raw) {
                            if !send(&updates, update).await {
                                return;
                            }
                        }
                    }
                };
                tracing::info!(%why, "engine event stream ended; reconnecting");
                last_error = Some(why);
                failures = 1;
            }
            Err(TransportError::Auth { status }) => {
                let err = EngineError::Auth { status };
                let _ = send(
                    &updates,
                    connection(ConnectionStatus::Error, None, Some(err.to_string())),
                )
                .await;
                return;
            }
            Err(err) => {
                last_error = Some(err.to_string());
                failures += 1;
            }
        }
        if !backoff(&updates, failures, &policy, &last_error).await {
            return;
        }
    }
}

/// Waits before the next attempt; reports the final error and returns `false` when the
/// attempts are used up.
async fn backoff(
    updates: &UpdateSender,
    failures: u32,
    policy: &StreamPolicy,
    last_error: &Option<String>,
) -> bool {
    if failures > policy.max_attempts {
        let why = format!(
            "gave up reconnecting to the engine after {} attempts: {}",
            policy.max_attempts,
            last_error.as_deref().unwrap_or("unknown error")
        );
        let _ = send(
            updates,
            connection(ConnectionStatus::Error, Some(u64::from(failures)), Some(why)),
        )
        .await;
        return false;
    }
    let exp = failures.saturating_sub(1).min(16);
    let delay = policy.initial_backoff.saturating_mul(1u32 << exp).min(policy.max_backoff);
    tokio::time::sleep(delay).await;
    true
}

/// Rebuilds what the host knows from REST: the session list, which sessions run, pending
/// permissions.
async fn refresh(
    transport: &dyn EngineTransport,
    updates: &UpdateSender,
    state: &mut KiloEventState,
) -> Result<(), EngineError> {
    let sessions: Vec<_> =
        rest::list_sessions(transport).await?.iter().filter_map(session_summary).collect();
    let busy = rest::busy_sessions(transport).await?;
    let mut pending = rest::pending_permissions(transport).await?;
    let mut out = vec![EngineUpdate::SessionsListed(sessions.clone())];
    for s in &sessions {
        let id = &s.session_id;
        out.push(EngineUpdate::SessionRunning {
            session_id: id.clone(),
            running: busy.contains(id),
        });
        out.push(state.set_pending(id, pending.remove(id).unwrap_or_default()));
    }
    for update in out {
        send(updates, update).await;
    }
    Ok(())
}

fn connection(
    status: ConnectionStatus,
    retry_count: Option<u64>,
    last_error: Option<String>,
) -> EngineUpdate {
    EngineUpdate::Connection(ConnectionUpdate { status, retry_count, last_error })
}

async fn send(updates: &UpdateSender, update: EngineUpdate) -> bool {
    updates.send(update).await.is_ok()
}
