//! The BreadBoard adapter against `wiremock` serving the real engine's recorded answers
//! (README §11), for what the fake engine does not do on cue: what goes on the wire for an
//! `allow_rule`, the cleanup of a session whose model the engine refused after creating it,
//! and a decision for a request the engine no longer holds.

use std::sync::Arc;

use crate::client::BreadboardClient;
use bb_engine_client::transport::{EngineAuth, HttpOptions, HttpTransport};
use bb_host::{Prompt, PromptKind, Verdict};
use bb_protocol::v1::{CreateSessionParams, SessionParams};
use serde_json::json;
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::{BreadboardAdapter, BreadboardConfig};
use bb_service::SystemClock;
use bb_service::engine::{AnswerReason, EngineAdapter, PromptAnswer};

const SESSION: &str = "d703bea5-ff44-4318-8596-c3c2acc5a0da";

async fn adapter(server: &MockServer) -> Arc<BreadboardAdapter> {
    let transport =
        HttpTransport::new(&server.uri(), EngineAuth::None, HttpOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap().keep();
    let mut config = BreadboardConfig::new(dir);
    config.default_config_path = Some("agent.yaml".into());
    let (adapter, _updates) = BreadboardAdapter::new(
        BreadboardClient::new(Arc::new(transport)),
        config,
        Arc::new(SystemClock),
    );
    adapter
}

fn envelope(error: &str, detail: &str) -> serde_json::Value {
    json!({"error": error, "detail": detail, "path": null})
}

#[tokio::test]
async fn a_refused_model_removes_the_half_made_session() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/sessions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "session_id": SESSION, "status": "starting",
            "created_at": "2026-11-22T00:14:34.362453Z", "logging_dir": null})))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(format!("/v1/sessions/{SESSION}/command")))
        .and(body_partial_json(json!({"command": "set_model", "payload": {"model": ""}})))
        .respond_with(
            ResponseTemplate::new(400)
                .set_body_json(envelope("invalid_request", "set_model requires non-empty 'model'")),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("DELETE"))
        .and(path(format!("/v1/sessions/{SESSION}")))
        .respond_with(ResponseTemplate::new(204))
        .expect(1)
        .mount(&server)
        .await;
    let adapter = adapter(&server).await;
    let params =
        CreateSessionParams { model: Some(String::new()), ..CreateSessionParams::default() };
    let error = adapter.create_session(params).await.unwrap_err();
    assert_eq!(error.code(), "invalid_request");
    assert!(error.to_string().contains("set_model requires non-empty 'model'"), "{error}");
    adapter.shutdown().await;
    // `expect(1)` on DELETE is checked when the server drops.
}

#[tokio::test]
async fn allow_rule_sends_a_string_rule_with_its_scope() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(format!("/v1/sessions/{SESSION}/command")))
        .and(body_partial_json(json!({"command": "permission_decision", "payload": {
            "request_id": "permission_1", "decision": "allow-always",
            "rule": "make *", "scope": "session"}})))
        .respond_with(ResponseTemplate::new(202).set_body_json(json!({"status": "accepted",
            "detail": {"status": "ok", "delivered": {"status": "ok", "request_id": "permission_1",
            "delivered": {"permission_id": "permission_1", "response": "always"}}}})))
        .expect(1)
        .mount(&server)
        .await;
    let adapter = adapter(&server).await;
    let rule = json!({"pattern": "make *", "scope": "session"});
    let answer = PromptAnswer {
        prompt: Prompt::new(SESSION, "permission_1", PromptKind::Exec),
        verdict: Verdict::Allow,
        remember: true,
        rule_update: rule.as_object().cloned(),
        reason: AnswerReason::User,
    };
    adapter.answer(answer).await.unwrap();
    adapter.shutdown().await;
}

#[tokio::test]
async fn a_decision_for_a_request_the_engine_does_not_hold_is_stale() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(format!("/v1/sessions/{SESSION}/command")))
        .respond_with(
            ResponseTemplate::new(409)
                .set_body_json(envelope("conflict", "no permission request is active")),
        )
        .mount(&server)
        .await;
    let adapter = adapter(&server).await;
    let answer = PromptAnswer {
        prompt: Prompt::new(SESSION, "replayed-1", PromptKind::Write),
        verdict: Verdict::Allow,
        remember: false,
        rule_update: None,
        reason: AnswerReason::User,
    };
    let error = adapter.answer(answer).await.unwrap_err();
    assert_eq!(error.code(), "permission_not_pending");
    assert!(error.to_string().contains("settled as stale"), "{error}");
    adapter.shutdown().await;
}

#[tokio::test]
async fn a_bad_id_is_refused_before_any_request() {
    let server = MockServer::start().await;
    let adapter = adapter(&server).await;
    let error = adapter
        .select_session(SessionParams { session_id: "../etc".into(), tab_id: None })
        .await
        .unwrap_err();
    assert_eq!(error.code(), "invalid_request");
    assert!(error.to_string().starts_with("the bridge refused the request"), "{error}");
    adapter.shutdown().await;
    let requests = server.received_requests().await.unwrap_or_default();
    assert!(
        requests.iter().all(|r| !r.url.path().contains("etc")),
        "nothing about the bad id reached the engine: {requests:?}"
    );
}
