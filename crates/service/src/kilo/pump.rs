//! Router updates → engine updates: one task per bound engine that reads the Kilo event
//! router (one `GET /event` stream, refresh-on-reconnect) and reports in engine order.

use std::collections::HashSet;

use bb_engine_client::kilo::{KiloUpdate, MessageWithParts};
use bb_protocol::v1::{ConnectionStatus, EngineEvent};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::events::KiloEventState;
use crate::engine::{ConnectionUpdate, EngineUpdate, UpdateSender};

/// The type of the bridge-made event that carries a session's state rebuilt from REST after
/// a reconnect (the stream has no replay).
pub const REHYDRATED_EVENT: &str = "bb.session.rehydrated";

/// Runs until the router stops or the service is gone.
pub(crate) async fn run(mut router: mpsc::Receiver<KiloUpdate>, updates: UpdateSender) {
    let mut state = KiloEventState::default();
    let mut rehydrations: u64 = 0;
    while let Some(update) = router.recv().await {
        let out: Vec<EngineUpdate> = match update {
            KiloUpdate::Connected { reconnects } => {
                state.reset_stream();
                let mut out = vec![connection(ConnectionStatus::Connected, None, None)];
                if reconnects > 0 {
                    out.push(EngineUpdate::GapDetected { session_id: None });
                }
                out
            }
            KiloUpdate::Reconnecting { attempt, delay, last_error } => {
                tracing::info!(attempt, ?delay, %last_error, "engine event stream dropped; reconnecting");
                vec![connection(
                    ConnectionStatus::Connecting,
                    Some(u64::from(attempt)),
                    Some(last_error),
                )]
            }
            KiloUpdate::Rehydrated { session_id, messages, status, permissions } => {
                rehydrations += 1;
                let running = status.kind != "idle";
                let pending: HashSet<String> = permissions.iter().map(|p| p.id.clone()).collect();
                let mut payload = Map::new();
                payload.insert("sessionID".into(), json!(session_id));
                payload.insert("status".into(), json!(status.kind));
                payload.insert(
                    "messages".into(),
                    Value::Array(messages.iter().map(message_json).collect()),
                );
                payload.insert("permissions".into(), json!(pending.iter().collect::<Vec<_>>()));
                let event = EngineEvent {
                    id: format!("bb-rehydrate-{rehydrations}"),
                    event_type: REHYDRATED_EVENT.into(),
                    turn: None,
                    ts: None,
                    payload,
                };
                vec![
                    EngineUpdate::Events { session_id: session_id.clone(), events: vec![event] },
                    EngineUpdate::SessionRunning { session_id: session_id.clone(), running },
                    state.set_pending(&session_id, pending),
                ]
            }
            KiloUpdate::RehydrateFailed { session_id, error } => {
                tracing::warn!(%session_id, %error, "rebuilding a session after reconnect failed");
                vec![EngineUpdate::GapDetected { session_id: Some(session_id) }]
            }
            KiloUpdate::Event { event, .. } => state.apply(event.raw),
            KiloUpdate::Sync(sync) => match sync.seq {
                Some(seq) => state.sync_seq(&sync.session_id, seq),
                None => Vec::new(),
            },
            KiloUpdate::Unrouted(event) => {
                tracing::trace!(event_type = %event.event_type, "engine event of no session");
                Vec::new()
            }
            KiloUpdate::Malformed { error, .. } => {
                tracing::warn!(%error, "engine sent an event that is not a Kilo event");
                Vec::new()
            }
            KiloUpdate::Failed(err) => {
                tracing::error!(%err, "engine event stream failed for good");
                vec![connection(ConnectionStatus::Error, None, Some(err.to_string()))]
            }
            other => {
                tracing::debug!(?other, "router update not used");
                Vec::new()
            }
        };
        for update in out {
            if updates.send(update).await.is_err() {
                return;
            }
        }
    }
}

pub(crate) fn connection(
    status: ConnectionStatus,
    retry_count: Option<u64>,
    last_error: Option<String>,
) -> EngineUpdate {
    EngineUpdate::Connection(ConnectionUpdate { status, retry_count, last_error })
}

/// A rehydrated message back in Kilo's wire shape (`{info, parts}`).
fn message_json(message: &MessageWithParts) -> Value {
    let mut info = message.info.extra.clone();
    info.insert("id".into(), json!(message.info.id));
    info.insert("sessionID".into(), json!(message.info.session_id));
    info.insert("role".into(), json!(message.info.role));
    json!({ "info": info, "parts": message.parts })
}
