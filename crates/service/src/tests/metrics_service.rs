//! `bb.command {command: "metrics"}` through the service: the host's prompt counters and the
//! engine adapter's own counters (Kilo's out-of-scope path attempts) are in the answer, in
//! place of the bridge's observation of the same names; `session.close` on an engine that
//! has no session close is answered by the bridge.

use std::sync::Arc;

use async_trait::async_trait;
use bb_protocol::v1::{
    CommandParams, CreateSessionParams, EngineKind, InitResult, ListSessionsResult,
    SendMessageParams, SendMessageResult, SessionAck, SessionParams, SessionSummary, V1Call,
};

use bb_host::{Input, Prompt, PromptKind};

use super::{request, until_response};
use crate::engine::{EngineAdapter, EngineError, input_channel};
use crate::sink::{memory, single};
use crate::{Service, ServiceConfig, SystemClock};

/// An adapter that only counts, as Kilo's does.
#[derive(Debug)]
struct Counting;

#[async_trait]
impl EngineAdapter for Counting {
    fn name(&self) -> &'static str {
        "counting"
    }

    fn kind(&self) -> EngineKind {
        EngineKind::Kilo
    }

    async fn init(&self) -> Result<InitResult, EngineError> {
        Err(EngineError::NotSupported { method: "init", engine: "counting" })
    }

    async fn create_session(&self, _: CreateSessionParams) -> Result<SessionSummary, EngineError> {
        Err(EngineError::NotSupported { method: "createSession", engine: "counting" })
    }

    async fn list_sessions(&self) -> Result<ListSessionsResult, EngineError> {
        Ok(ListSessionsResult { sessions: Vec::new() })
    }

    async fn delete_session(&self, _: SessionParams) -> Result<SessionAck, EngineError> {
        Err(EngineError::NotSupported { method: "deleteSession", engine: "counting" })
    }

    async fn send_message(&self, _: SendMessageParams) -> Result<SendMessageResult, EngineError> {
        Err(EngineError::NotSupported { method: "sendMessage", engine: "counting" })
    }

    async fn stop(&self, _: SessionParams) -> Result<SessionAck, EngineError> {
        Err(EngineError::NotSupported { method: "stop", engine: "counting" })
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("security.out_of_scope_path_attempt_count", 5), ("bridge.rehydrations", 4)]
    }
}

#[tokio::test]
async fn metrics_include_the_adapters_counters() {
    let (inputs, rx) = input_channel();
    let service =
        Service::new(ServiceConfig::default(), Arc::new(Counting), rx, Arc::new(SystemClock), None);
    let (sink, mut w) = memory();
    let runtime = tokio::spawn(service.run(single(sink)));
    // Two prompts raised (one a repeat): one shown.
    for _ in 0..2 {
        let prompt = Prompt::new("s", "per_1", PromptKind::Exec);
        inputs.send(Input::PromptRaised { prompt: Box::new(prompt), event: None }).await.unwrap();
    }
    let metrics =
        CommandParams { session_id: String::new(), command: "metrics".into(), args: None };
    request(&w, "m", V1Call::Command(metrics)).await;
    let (response, _) = until_response(&mut w, "m").await;
    let out = &response["result"]["output"];
    assert_eq!(out["kilo.cli.permissions.prompt_count"], 1, "{out}");
    assert_eq!(out["kilo.cli.tools.write.allow_count"], 0, "{out}");
    assert_eq!(out["kilo.cli.security.out_of_scope_path_attempt_count"], 5, "{out}");
    assert_eq!(out["bridge"]["rehydrations"], 4, "{out}");
    // What the bridge itself saw of those names stays visible.
    assert_eq!(out["bridge"]["observed"]["kilo.cli.permissions.prompt_count"], 0, "{out}");
    // The bridge's own counters are still there.
    assert_eq!(out["kilo.cli.server.crash_count"], 0, "{out}");
    assert_eq!(out["bridge"]["requests"], 1, "{out}");
    drop(w);
    runtime.await.unwrap().unwrap();
}

/// A tab closed on an engine that cannot close a session: the bridge answers (the session
/// keeps running), and the engine is not asked (its `bb.command` would say `not_supported`).
#[tokio::test]
async fn session_close_on_an_engine_without_one_is_answered_by_the_bridge() {
    let (_inputs, rx) = input_channel();
    let service =
        Service::new(ServiceConfig::default(), Arc::new(Counting), rx, Arc::new(SystemClock), None);
    let (sink, mut w) = memory();
    let runtime = tokio::spawn(service.run(single(sink)));
    let close =
        CommandParams { session_id: "s1".into(), command: "session.close".into(), args: None };
    request(&w, "c", V1Call::Command(close)).await;
    let (response, _) = until_response(&mut w, "c").await;
    assert_eq!(response["ok"], true, "{response}");
    assert_eq!(response["result"]["sessionId"], "s1", "{response}");
    assert_eq!(response["result"]["output"]["closed"], false, "{response}");
    let other = CommandParams { session_id: "s1".into(), command: "fork".into(), args: None };
    request(&w, "f", V1Call::Command(other)).await;
    let (response, _) = until_response(&mut w, "f").await;
    assert_eq!(response["error"]["code"], "not_supported", "other commands reach the engine");
    drop(w);
    runtime.await.unwrap().unwrap();
}
