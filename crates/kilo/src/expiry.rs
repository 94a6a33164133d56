//! The permission deadline (`--permission-timeout`): requests nobody answers in time expire,
//! the engine is told `reject`, and the session's `pendingPermissionCount` drops.

use std::sync::Arc;
use std::time::Duration;

use crate::client::{KiloClient, PermissionReply};
use bb_host::permissions::RequestKind;

use crate::shared::Shared;
use bb_service::engine::UpdateSender;

/// How often the table is checked: a request expires at most this late.
const TICK: Duration = Duration::from_secs(1);

/// Expires due requests every [`TICK`] (no-op without a deadline) until aborted.
pub(super) async fn run(
    shared: Arc<Shared>,
    client: KiloClient,
    updates: UpdateSender,
    engine_timeout: Duration,
) {
    let Some(ttl) = shared.permits.pending_ttl() else { return };
    let mut tick = tokio::time::interval(TICK.min(ttl));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        for (session, request) in shared.permits.expire_due() {
            if updates.send(shared.permits.count_update(&session)).await.is_err() {
                return;
            }
            tracing::info!(%session, %request, "permission request expired unanswered; rejecting");
            let question = shared.permits.kind(&session, &request) == Some(RequestKind::Question);
            let told = if question {
                tokio::time::timeout(engine_timeout, client.reject_question(&request)).await
            } else {
                let reply = client.reply_permission(&request, PermissionReply::Reject, None);
                tokio::time::timeout(engine_timeout, reply).await
            };
            match told {
                Ok(Ok(_)) => {}
                Ok(Err(err)) => {
                    tracing::warn!(%request, %err, "telling the engine an expired request is rejected failed");
                }
                Err(_) => {
                    tracing::warn!(%request, "telling the engine an expired request is rejected timed out");
                }
            }
        }
    }
}
