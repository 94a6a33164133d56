//! Service loop tests with an in-memory fake engine and the memory sink: request dispatch,
//! responses before their effects, event forwarding in order, error codes, shutdown.

mod drain;
mod fs;
mod inputs;
mod metrics;
mod metrics_service;
mod order;
mod prompts;
mod reconnect;
mod saved;
mod trim;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bb_host::{Input, Verdict};
use bb_normalize::EventClass;
use bb_protocol::V1Message;
use bb_protocol::v1::{
    Capabilities, ConnectionStatus, CreateSessionParams, EngineEvent, EngineInfo, EngineKind,
    EngineStatus, InitResult, ListSessionsResult, SendMessageParams, SendMessageResult, SessionAck,
    SessionParams, SessionSummary, V1Call, V1Request, V1Topic,
};
use serde_json::{Map, Value, json};

use crate::engine::{
    AnswerReason, EngineAdapter, EngineError, InputSender, PromptAnswer, input_channel,
};
use crate::sink::{Inbound, MemoryWebview, memory};
use crate::{Service, ServiceConfig, SystemClock};

/// A fake engine: sessions in memory; `send_message` streams its words as events through
/// the input channel and finishes the turn (`ask`: raises a prompt and waits); every answer
/// it is asked to carry is recorded.
#[derive(Debug)]
pub(super) struct FakeEngine {
    pub(super) updates: InputSender,
    pub(super) sessions: Mutex<Vec<String>>,
    /// What the runtime reported delivered: (session, event id).
    pub(super) delivered: Mutex<Vec<(String, String)>>,
    /// The answers it carried: (request, verdict, why).
    pub(super) told: Mutex<Vec<(String, Verdict, AnswerReason)>>,
    /// Requests the engine no longer knows: answering one is `permission_not_pending`.
    pub(super) stale: Vec<&'static str>,
}

impl FakeEngine {
    pub(super) fn new(updates: InputSender) -> Self {
        Self {
            updates,
            sessions: Mutex::new(Vec::new()),
            delivered: Mutex::new(Vec::new()),
            told: Mutex::new(Vec::new()),
            stale: Vec::new(),
        }
    }
}

#[async_trait]
impl EngineAdapter for FakeEngine {
    fn name(&self) -> &'static str {
        "fake"
    }

    fn kind(&self) -> EngineKind {
        EngineKind::Kilo
    }

    async fn init(&self) -> Result<InitResult, EngineError> {
        Ok(InitResult {
            protocol_version: 1,
            engine: EngineInfo {
                kind: EngineKind::Kilo,
                status: EngineStatus::Ready,
                version: None,
            },
            capabilities: Capabilities::default(),
            folders: None,
        })
    }

    async fn create_session(&self, _: CreateSessionParams) -> Result<SessionSummary, EngineError> {
        let mut sessions = self.sessions.lock().unwrap();
        let id = format!("ses_{}", sessions.len());
        sessions.push(id.clone());
        Ok(SessionSummary {
            session_id: id,
            title: None,
            status: None,
            updated_at: None,
            queued_prompts: None,
            parent_id: None,
            pending_permission_count: None,
            folder: None,
        })
    }

    async fn list_sessions(&self) -> Result<ListSessionsResult, EngineError> {
        let sessions = self.sessions.lock().unwrap().clone();
        Ok(ListSessionsResult {
            sessions: sessions
                .into_iter()
                .map(|id| SessionSummary {
                    session_id: id,
                    title: None,
                    status: None,
                    updated_at: None,
                    queued_prompts: None,
                    parent_id: None,
                    pending_permission_count: None,
                    folder: None,
                })
                .collect(),
        })
    }

    async fn delete_session(&self, p: SessionParams) -> Result<SessionAck, EngineError> {
        let mut sessions = self.sessions.lock().unwrap();
        let before = sessions.len();
        sessions.retain(|s| *s != p.session_id);
        if sessions.len() == before {
            return Err(EngineError::SessionNotFound(p.session_id));
        }
        Ok(SessionAck { session_id: p.session_id })
    }

    async fn send_message(&self, p: SendMessageParams) -> Result<SendMessageResult, EngineError> {
        let sid = p.session_id.clone();
        let tx = self.updates.clone();
        tx.send(Input::SessionRunning { session_id: sid.clone(), running: true }).await.unwrap();
        if p.text == "ask" {
            // The turn asks the user and waits for the answer (which never comes).
            let prompt = bb_host::Prompt::new(&sid, "per_1", bb_host::PromptKind::Exec);
            let event = EngineEvent {
                id: "evt_ask".into(),
                event_type: "permission.asked".into(),
                turn: None,
                ts: None,
                payload: Map::new().into(),
            };
            let event = Some((event, EventClass::PermissionRequest));
            tx.send(Input::PromptRaised { prompt: Box::new(prompt), event: event.map(Box::new) })
                .await
                .unwrap();
            return Ok(SendMessageResult { session_id: sid, message_id: None });
        }
        for (i, word) in p.text.split(' ').enumerate() {
            let mut payload = Map::new();
            payload.insert("delta".into(), json!(word));
            let event = EngineEvent {
                id: format!("evt_{i}").into(),
                event_type: "message.part.delta".into(),
                turn: None,
                ts: None,
                payload: payload.into(),
            };
            let events = vec![(event, EventClass::AssistantStream)];
            tx.send(Input::Events { session_id: sid.as_str().into(), events: events.into() })
                .await
                .unwrap();
        }
        // The turn ends a moment later, as a real engine's does: the loop has handled its
        // events by then (updates queued together would show no `running` state at all).
        tokio::task::yield_now().await;
        tx.send(Input::SessionRunning { session_id: sid.clone(), running: false }).await.unwrap();
        Ok(SendMessageResult { session_id: sid, message_id: None })
    }

    async fn stop(&self, p: SessionParams) -> Result<SessionAck, EngineError> {
        Ok(SessionAck { session_id: p.session_id })
    }

    async fn answer(&self, answer: PromptAnswer) -> Result<(), EngineError> {
        let request = answer.prompt.request_id.clone();
        self.told.lock().unwrap().push((request.clone(), answer.verdict, answer.reason));
        if self.stale.contains(&request.as_str()) {
            return Err(EngineError::refused("permission_not_pending", "gone"));
        }
        Ok(())
    }

    fn delivered(&self, session_id: &str, event_id: &str) {
        self.delivered.lock().unwrap().push((session_id.to_owned(), event_id.to_owned()));
    }
}

fn start() -> (MemoryWebview, tokio::task::JoinHandle<Result<(), crate::ServiceError>>, InputSender)
{
    let (tx, rx) = input_channel();
    let engine = Arc::new(FakeEngine::new(tx.clone()));
    let (sink, webview) = memory();
    let config =
        ServiceConfig { call_timeout: Duration::from_secs(30), ..ServiceConfig::default() };
    let service = Service::new(config, engine, rx, Arc::new(SystemClock), None);
    (webview, tokio::spawn(service.run(crate::sink::single(sink))), tx)
}

async fn request(w: &MemoryWebview, id: &str, call: V1Call) {
    w.to_service.send(Inbound::Request(V1Request::new(id, call))).await.unwrap();
}

/// Reads until the response `id`; returns it and everything before it.
async fn until_response(w: &mut MemoryWebview, id: &str) -> (Value, Vec<V1Message>) {
    let mut before = Vec::new();
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), w.from_service.recv())
            .await
            .unwrap()
            .unwrap();
        if let V1Message::Response(r) = &msg
            && r.id == id
        {
            return (serde_json::to_value(r).unwrap(), before);
        }
        before.push(msg);
    }
}

async fn next_topic(w: &mut MemoryWebview, pred: impl Fn(&V1Topic) -> bool) -> V1Topic {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), w.from_service.recv())
            .await
            .unwrap()
            .unwrap();
        if let V1Message::Event(e) = msg
            && pred(&e.topic)
        {
            return e.topic;
        }
    }
}

#[tokio::test]
async fn init_answers_before_state_and_nothing_leaves_earlier() {
    let (mut w, service, tx) = start();
    tx.send(Input::connection(ConnectionStatus::Connected, None, None)).await.unwrap();
    request(&w, "1", V1Call::Init(Default::default())).await;
    let (res, before) = until_response(&mut w, "1").await;
    assert!(before.is_empty(), "output before bb.init: {before:?}");
    assert_eq!(res["ok"], true);
    assert_eq!(res["result"]["protocolVersion"], 1);
    // Both the connection and the state follow, in either order (the update may be handled
    // before or after the request).
    let (mut connected, mut state) = (false, false);
    while !(connected && state) {
        match next_topic(&mut w, |_| true).await {
            V1Topic::Connection(c) => connected |= c.status == ConnectionStatus::Connected,
            V1Topic::State(_) => state = true,
            V1Topic::Events(_) => panic!("no events were produced"),
        }
    }
    drop(w);
    service.await.unwrap().unwrap();
}

#[tokio::test]
async fn send_streams_events_in_order_then_idle_state() {
    let (mut w, service, _tx) = start();
    request(&w, "1", V1Call::Init(Default::default())).await;
    until_response(&mut w, "1").await;
    request(&w, "2", V1Call::CreateSession(Default::default())).await;
    let (res, _) = until_response(&mut w, "2").await;
    let sid = res["result"]["sessionId"].as_str().unwrap().to_owned();
    let params = SendMessageParams {
        session_id: sid.clone(),
        text: "a b c d e".into(),
        attachment_ids: None,
        message_id: None,
    };
    request(&w, "3", V1Call::SendMessage(params)).await;
    let mut ids = Vec::new();
    let mut idle_after_events = false;
    while !idle_after_events {
        let msg = tokio::time::timeout(Duration::from_secs(10), w.from_service.recv())
            .await
            .unwrap()
            .unwrap();
        match msg {
            V1Message::Event(e) => match e.topic {
                V1Topic::Events(batch) => {
                    assert_eq!(&*batch.session_id, sid);
                    ids.extend(batch.events.ids().map(str::to_owned));
                }
                V1Topic::State(s) if s.running == Some(false) && ids.len() == 5 => {
                    assert_eq!(s.active_session_id.as_deref(), Some(sid.as_str()));
                    idle_after_events = true;
                }
                _ => {}
            },
            V1Message::Response(r) => assert!(r.ok),
            V1Message::Request(_) => panic!("the service never sends requests"),
        }
    }
    assert_eq!(ids, ["evt_0", "evt_1", "evt_2", "evt_3", "evt_4"]);
    drop(w);
    service.await.unwrap().unwrap();
}

/// Engine updates already queued when the loop wakes are handled before its output is
/// drained: their state changes leave as one `bb/state`, after the events they follow.
#[tokio::test]
async fn a_burst_of_updates_yields_one_state() {
    let (mut w, service, tx) = start();
    request(&w, "1", V1Call::Init(Default::default())).await;
    until_response(&mut w, "1").await;
    next_topic(&mut w, |t| matches!(t, V1Topic::State(_))).await;
    let summary = SessionSummary {
        session_id: "s1".into(),
        title: Some("t".into()),
        status: None,
        updated_at: None,
        queued_prompts: None,
        parent_id: None,
        pending_permission_count: None,
        folder: None,
    };
    let event = EngineEvent {
        id: "e0".into(),
        event_type: "x".into(),
        turn: None,
        ts: None,
        payload: Map::new().into(),
    };
    // The test runtime has one thread: the service runs only once the test awaits a read.
    let running = |running| Input::SessionRunning { session_id: "s1".into(), running };
    tx.send(Input::SessionUpserted(Box::new(summary))).await.unwrap();
    tx.send(running(true)).await.unwrap();
    let events = vec![(event, EventClass::Unknown)];
    tx.send(Input::Events { session_id: "s1".into(), events: events.into() }).await.unwrap();
    tx.send(running(false)).await.unwrap();
    let mut seen = Vec::new();
    loop {
        let topic = next_topic(&mut w, |_| true).await;
        let done = matches!(&topic, V1Topic::State(_));
        seen.push(topic);
        if done {
            break;
        }
    }
    let [V1Topic::Events(events), V1Topic::State(state)] = seen.as_slice() else {
        panic!("events then one state: {seen:?}");
    };
    assert_eq!(events.events.ids().collect::<Vec<_>>(), ["e0"]);
    assert_eq!(state.sessions.len(), 1);
    assert_eq!(state.sessions[0].status.as_deref(), Some("idle"));
    drop(w);
    service.await.unwrap().unwrap();
}

#[tokio::test]
async fn engine_errors_carry_stable_codes() {
    let (mut w, service, _tx) = start();
    request(
        &w,
        "1",
        V1Call::DeleteSession(SessionParams { session_id: "ses_x".into(), ..Default::default() }),
    )
    .await;
    let (res, _) = until_response(&mut w, "1").await;
    assert_eq!(res["error"]["code"], "session_not_found");
    request(
        &w,
        "2",
        V1Call::Command(bb_protocol::v1::CommandParams {
            session_id: "s".into(),
            command: "c".into(),
            args: None,
        }),
    )
    .await;
    let (res, _) = until_response(&mut w, "2").await;
    assert_eq!(res["error"]["code"], "not_supported");
    assert_eq!(res["error"]["message"], "bb.command is not supported by the fake engine");
    // Default select: unknown session → session_not_found.
    request(
        &w,
        "3",
        V1Call::SelectSession(SessionParams {
            session_id: "ses_nope".into(),
            ..Default::default()
        }),
    )
    .await;
    let (res, _) = until_response(&mut w, "3").await;
    assert_eq!(res["error"]["code"], "session_not_found");
    drop(w);
    service.await.unwrap().unwrap();
}

#[test]
fn error_codes_are_stable() {
    let cases = [
        (EngineError::NotSupported { method: "bb.x", engine: "e" }, "not_supported"),
        (EngineError::SessionNotFound("s".into()), "session_not_found"),
        (EngineError::InvalidRequest("r".into()), "invalid_request"),
        (EngineError::Auth { status: 401 }, "engine_auth"),
        (EngineError::Unavailable("u".into()), "engine_unavailable"),
        (EngineError::Timeout(Duration::from_secs(1)), "engine_timeout"),
        (EngineError::Engine("e".into()), "engine_error"),
    ];
    for (err, code) in cases {
        assert_eq!(err.code(), code);
        assert_eq!(err.to_wire().code, code);
    }
}

mod multi;
