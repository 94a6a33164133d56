//! Prompts through the service loop, in simulated time: every answer is decided by the host
//! (trust, pending, once) before the adapter carries it; a refusal reaches no adapter; an
//! expired prompt and a stopped turn's prompt are denied on the engine by the loop; an
//! answer the engine no longer knows makes the prompt stale.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bb_host::{Clock, HostConfig, Input, Prompt, PromptKind, Verdict};
use bb_protocol::v1::{
    ApprovePermissionParams, CreateSessionParams, InitParams, PermissionDecision, SessionParams,
    V1Call, V1Topic,
};
use serde_json::Value;

use super::{FakeEngine, next_topic, request, until_response};
use crate::engine::{AnswerReason, InputSender, input_channel};
use crate::sink::{MemoryWebview, memory, single};
use crate::{Service, ServiceConfig};

/// The Clock port over tokio's (paused) clock.
#[derive(Debug)]
struct TokioClock;

impl Clock for TokioClock {
    #[allow(clippy::disallowed_methods)] // the test's one door to the simulated clock
    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }

    fn wall_ms(&self) -> u64 {
        0
    }
}

struct Loop {
    w: MemoryWebview,
    inputs: InputSender,
    adapter: Arc<FakeEngine>,
    n: u32,
}

impl Loop {
    fn start(config: HostConfig, stale: Vec<&'static str>) -> Self {
        let (inputs, rx) = input_channel();
        let adapter = Arc::new(FakeEngine { stale, ..FakeEngine::new(inputs.clone()) });
        let service_config = ServiceConfig { host: config, ..ServiceConfig::default() };
        let service = Service::new(service_config, adapter.clone(), rx, Arc::new(TokioClock), None);
        let (sink, w) = memory();
        tokio::spawn(service.run(single(sink)));
        Self { w, inputs, adapter, n: 0 }
    }

    async fn raise(&self, request: &str, kind: PromptKind) {
        let prompt = Prompt::new("s", request, kind);
        self.inputs
            .send(Input::PromptRaised { prompt: Box::new(prompt), event: None })
            .await
            .unwrap();
    }

    async fn call(&mut self, call: V1Call) -> Value {
        self.n += 1;
        let id = format!("r{}", self.n);
        request(&self.w, &id, call).await;
        until_response(&mut self.w, &id).await.0
    }

    async fn approve(&mut self, request: &str, decision: PermissionDecision) -> Value {
        let params = ApprovePermissionParams {
            event_id: None,
            session_id: "s".into(),
            request_id: request.into(),
            decision,
            rule_update: None,
        };
        self.call(V1Call::ApprovePermission(params)).await
    }

    async fn init(&mut self, trusted: Option<bool>) {
        let params = InitParams { workspace_trusted: trusted, ..InitParams::default() };
        self.call(V1Call::Init(params)).await;
    }

    async fn pending(&mut self, n: u64) {
        let want =
            |t: &V1Topic| matches!(t, V1Topic::State(s) if s.pending_permission_count == Some(n));
        next_topic(&mut self.w, want).await;
    }

    fn told(&self) -> Vec<(String, Verdict, AnswerReason)> {
        std::mem::take(&mut *self.adapter.told.lock().unwrap())
    }
}

#[tokio::test(start_paused = true)]
async fn trust_is_decided_once_and_only_allowed_answers_reach_the_adapter() {
    let mut l = Loop::start(HostConfig::default(), Vec::new());
    l.init(None).await;
    l.raise("w1", PromptKind::Write).await;
    l.pending(1).await;
    let refused = l.approve("w1", PermissionDecision::AllowOnce).await;
    assert_eq!(refused["error"]["code"], "workspace_untrusted", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("--trusted") && message.contains("workspaceTrusted"), "{message}");
    assert!(l.told().is_empty(), "a refused approval reached the adapter");
    let denied = l.approve("w1", PermissionDecision::Deny).await;
    assert_eq!(denied["ok"], true, "{denied}");
    assert_eq!(l.told(), [("w1".to_owned(), Verdict::Deny, AnswerReason::User)]);
    l.pending(0).await;
    let again = l.approve("w1", PermissionDecision::Deny).await;
    assert_eq!(again["error"]["code"], "permission_not_pending", "{again}");

    l.init(Some(true)).await;
    l.raise("w2", PromptKind::Write).await;
    let allowed = l.approve("w2", PermissionDecision::AllowOnce).await;
    assert_eq!(allowed["ok"], true, "{allowed}");
    assert_eq!(l.told(), [("w2".to_owned(), Verdict::Allow, AnswerReason::User)]);
    // A mode that writes without asking needs trust too; trusted now, it goes.
    let created = l
        .call(V1Call::CreateSession(CreateSessionParams {
            permission_mode: Some("acceptEdits".into()),
            ..CreateSessionParams::default()
        }))
        .await;
    assert_eq!(created["ok"], true, "{created}");
    l.init(Some(false)).await;
    let refused = l
        .call(V1Call::CreateSession(CreateSessionParams {
            permission_mode: Some("acceptEdits".into()),
            ..CreateSessionParams::default()
        }))
        .await;
    assert_eq!(refused["error"]["code"], "workspace_untrusted", "{refused}");
}

#[tokio::test(start_paused = true)]
async fn expired_and_stopped_prompts_are_denied_on_the_engine() {
    let ttl = Duration::from_secs(30);
    let config = HostConfig { prompt_ttl: Some(ttl), trusted: true, ..HostConfig::default() };
    let mut l = Loop::start(config, Vec::new());
    l.init(None).await;
    l.raise("x1", PromptKind::Exec).await;
    l.pending(1).await;
    // Nobody answers: at the deadline the loop tells the engine to deny it.
    tokio::time::sleep(ttl + Duration::from_millis(10)).await;
    l.pending(0).await;
    assert_eq!(l.told(), [("x1".to_owned(), Verdict::Deny, AnswerReason::Expired)]);
    let late = l.approve("x1", PermissionDecision::AllowOnce).await;
    assert_eq!(late["error"]["code"], "permission_not_pending", "{late}");

    l.raise("x2", PromptKind::Exec).await;
    l.pending(1).await;
    let stopped = l
        .call(V1Call::Stop(SessionParams { session_id: "s".into(), ..SessionParams::default() }))
        .await;
    assert_eq!(stopped["ok"], true, "{stopped}");
    l.pending(0).await;
    tokio::task::yield_now().await;
    assert_eq!(l.told(), [("x2".to_owned(), Verdict::Deny, AnswerReason::Cancelled)]);
}

#[tokio::test(start_paused = true)]
async fn an_answer_the_engine_no_longer_knows_makes_the_prompt_stale() {
    let config = HostConfig { trusted: true, ..HostConfig::default() };
    let mut l = Loop::start(config, vec!["gone"]);
    l.init(None).await;
    l.raise("gone", PromptKind::Exec).await;
    l.pending(1).await;
    let stale = l.approve("gone", PermissionDecision::AllowOnce).await;
    assert_eq!(stale["error"]["code"], "permission_not_pending", "{stale}");
    l.pending(0).await;
    let again = l.approve("gone", PermissionDecision::Deny).await;
    assert_eq!(again["error"]["code"], "permission_not_pending", "{again}");
    assert_eq!(l.told().len(), 1, "one answer reached the engine");
}
