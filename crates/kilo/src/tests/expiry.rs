//! The Kilo adapter's permission deadline against a `wiremock` engine, in simulated time: a
//! request nobody answers expires, the engine is told `reject`, the count drops, and a late
//! answer is `permission_not_pending`.

use std::sync::Arc;
use std::time::Duration;

use bb_engine_client::transport::{EngineAuth, HttpOptions, HttpTransport};
use bb_host::{Clock, FakeClock};
use bb_protocol::v1::{PermissionDecision, SessionParams};
use serde_json::json;
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, ResponseTemplate};

use super::faults::{SES, approve, engine, until_pending};
use crate::{KiloAdapter, KiloOptions};
use bb_service::SystemClock;
use bb_service::engine::{EngineAdapter, EngineUpdate};

#[tokio::test]
async fn an_unanswered_request_expires_and_the_engine_is_told_reject() {
    let server = engine().await;
    Mock::given(method("POST"))
        .and(path("/permission/per_1/reply"))
        .and(body_partial_json(json!({"reply": "reject"})))
        .respond_with(ResponseTemplate::new(200).set_body_json(true))
        .expect(1)
        .mount(&server)
        .await;
    let clock = Arc::new(FakeClock::new(SystemClock.now(), 0));
    let options = KiloOptions {
        trusted: true,
        permission_timeout: Some(Duration::from_secs(300)),
        ..KiloOptions::default()
    };
    let (adapter, mut updates) = KiloAdapter::with_clock(options, clock.clone());
    let transport = HttpTransport::new(&server.uri(), EngineAuth::None, HttpOptions::default());
    adapter.bind(Arc::new(transport.unwrap()));
    adapter.select_session(SessionParams { session_id: SES.into(), tab_id: None }).await.unwrap();
    until_pending(&mut updates, 1).await;

    // Just before the deadline nothing expires; the request can still be answered later.
    clock.advance(Duration::from_secs(299));
    assert!(adapter.permits().expire_due().is_empty());

    clock.advance(Duration::from_secs(1));
    let dropped = async {
        while let Some(update) = updates.recv().await {
            if let EngineUpdate::PendingPermissions { count: 0, .. } = update {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), dropped).await.expect("the count drops to 0");
    let err = adapter.approve_permission(approve(PermissionDecision::AllowOnce)).await.unwrap_err();
    assert_eq!(err.code(), "permission_not_pending", "{err}");
    let told = async {
        while server
            .received_requests()
            .await
            .unwrap()
            .iter()
            .all(|r| r.url.path() != "/permission/per_1/reply")
        {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), told).await.expect("the engine is told");
    server.verify().await;
}
