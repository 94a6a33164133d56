//! The Kilo event router against the fake transport: routing, refresh-on-reconnect,
//! rehydration failure and Retry, auth failure, stalls (simulated time).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::client::{Consumer, Gone, KiloClient, KiloRouterHandle, KiloUpdate, spawn_router_into};
use bb_engine_client::fake::{FakeEnd, FakeStream, FakeTransport};
use bb_engine_client::sse::{NoJitter, ReconnectPolicy, SseClient, SseClientError};
use bb_engine_client::transport::{HttpMethod, TransportError};

const SES: &str = "ses_a";

fn data(event: &Value) -> String {
    format!("data: {event}\n\n")
}

fn delta(id: &str, text: &str) -> Value {
    json!({"id": id, "type": "message.part.delta",
           "properties": {"sessionID": SES, "messageID": "msg_1", "partID": "prt_1",
                          "field": "text", "delta": text}})
}

fn start(fake: &FakeTransport) -> (KiloRouterHandle, mpsc::Receiver<KiloUpdate>) {
    let client = KiloClient::new(Arc::new(fake.clone()));
    let sse = SseClient::new(client.transport().clone(), client.event_request())
        .with_jitter(NoJitter)
        .with_policy(ReconnectPolicy { max_attempts: 3, ..ReconnectPolicy::default() });
    let (updates, rx) = mpsc::channel(64);
    (spawn_router_into(client, sse, updates), rx)
}

fn rest_ok(fake: &FakeTransport, messages: &Value) {
    fake.route_json(HttpMethod::Get, "/session/status", &json!({ SES: {"type": "busy"} }));
    fake.route_json(
        HttpMethod::Get,
        "/permission",
        &json!([{"id": "per_1", "sessionID": SES, "permission": "bash", "patterns": ["ls"]},
                {"id": "per_2", "sessionID": "ses_other", "permission": "edit"}]),
    );
    fake.route_json(HttpMethod::Get, &format!("/session/{SES}/message"), messages);
}

fn messages() -> Value {
    json!([{"info": {"id": "msg_1", "sessionID": SES, "role": "assistant", "cost": 0},
            "parts": [{"id": "prt_1", "type": "text", "text": "hel"}]}])
}

/// A compact view of an update for comparisons.
fn summary(update: &KiloUpdate) -> String {
    match update {
        KiloUpdate::Connected { reconnects } => format!("connected {reconnects}"),
        KiloUpdate::Reconnecting { attempt, last_error, .. } => {
            format!("reconnecting {attempt}: {last_error}")
        }
        KiloUpdate::Rehydrated { session_id, messages, status, permissions, .. } => format!(
            "rehydrated {session_id} msgs={} status={} perms={}",
            messages.len(),
            status.kind,
            permissions.iter().map(|p| p.id.as_str()).collect::<Vec<_>>().join(",")
        ),
        KiloUpdate::RehydrateFailed { session_id, error } => {
            format!("rehydrate failed {session_id}: {error}")
        }
        KiloUpdate::Event { event } => format!(
            "event {} {} {}",
            event.session().as_deref().unwrap_or("-"),
            event.event_type,
            event.id.as_deref().unwrap_or("-")
        ),
        KiloUpdate::Sync(sync) => format!(
            "sync {} {} seq={:?}",
            sync.session_id,
            sync.id.as_deref().unwrap_or("-"),
            sync.seq
        ),
        KiloUpdate::Unrouted(event) => format!("unrouted {}", event.event_type),
        KiloUpdate::Malformed { error, .. } => format!("malformed: {error}"),
        KiloUpdate::Failed(err) => format!("failed: {err}"),
    }
}

async fn next_n(rx: &mut mpsc::Receiver<KiloUpdate>, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(summary(&rx.recv().await.unwrap()));
    }
    out
}

#[tokio::test(start_paused = true)]
async fn routes_by_session_id_and_sync_aggregate() {
    let fake = FakeTransport::new();
    let sync = json!({"id": "evt_3", "type": "sync",
                      "syncEvent": {"id": "evt_2", "type": "message.updated.1", "seq": 4,
                                    "aggregateID": SES, "data": {}}});
    let stream = [
        data(&json!({"type": "server.connected", "properties": {}})),
        data(&delta("evt_2", "lo")),
        data(&sync),
        data(&json!({"id": "evt_4", "type": "project.updated", "properties": {}})),
        "data: not json\n\n".to_owned(),
        data(&json!({"type": "server.heartbeat", "properties": {}})),
    ];
    fake.push_stream(FakeStream::script(stream, FakeEnd::Stall));
    let (_handle, mut rx) = start(&fake);
    let got = next_n(&mut rx, 7).await;
    assert_eq!(
        got,
        vec![
            "connected 0",
            "unrouted server.connected",
            "event ses_a message.part.delta evt_2",
            "sync ses_a evt_3 seq=Some(4)",
            "unrouted project.updated",
            "malformed: event data is not JSON: expected ident at line 1 column 2",
            "unrouted server.heartbeat",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn drop_mid_event_reconnects_and_rehydrates_before_live_events() {
    let fake = FakeTransport::new();
    rest_ok(&fake, &messages());
    let first = fake.push_live_stream();
    let second = fake.push_live_stream();
    let (handle, mut rx) = start(&fake);
    handle.track(SES);
    first.send(Ok(Bytes::from(data(&delta("evt_1", "hel"))))).unwrap();
    // Rehydration runs on the first connection too, once the session is tracked.
    assert_eq!(next_n(&mut rx, 1).await, vec!["connected 0"]);
    let half = data(&delta("evt_2", "lo"));
    first.send(Ok(Bytes::from(half[..20].to_owned()))).unwrap();
    first.send(Err(TransportError::Body("connection reset".into()))).unwrap();
    second.send(Ok(Bytes::from(data(&delta("evt_3", "!"))))).unwrap();
    let got = next_n(&mut rx, 5).await;
    assert_eq!(
        got,
        vec![
            "rehydrated ses_a msgs=1 status=busy perms=per_1",
            "event ses_a message.part.delta evt_1",
            "reconnecting 1: reading the engine's response failed: connection reset",
            "connected 1",
            "rehydrated ses_a msgs=1 status=busy perms=per_1",
        ]
    );
    // The cut event (evt_2) never surfaces; the next live one does.
    assert_eq!(next_n(&mut rx, 1).await, vec!["event ses_a message.part.delta evt_3"]);
    let paths: Vec<String> = fake.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        paths,
        vec![
            "/event",
            "/session/status",
            "/permission",
            "/question",
            "/session/ses_a/message",
            "/event",
            "/session/status",
            "/permission",
            "/question",
            "/session/ses_a/message",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn rehydrate_failure_is_a_hard_error_until_retry() {
    let fake = FakeTransport::new();
    rest_ok(&fake, &messages());
    let failure = TransportError::Http { status: 500, body: "boom".into() };
    fake.route(HttpMethod::Get, &format!("/session/{SES}/message"), Err(failure));
    let live = fake.push_live_stream();
    let (handle, mut rx) = start(&fake);
    handle.track(SES);
    live.send(Ok(Bytes::from(data(&delta("evt_1", "x"))))).unwrap();
    let got = next_n(&mut rx, 3).await;
    assert_eq!(
        got,
        vec![
            "connected 0",
            "rehydrate failed ses_a: engine answered HTTP 500: boom",
            "event ses_a message.part.delta evt_1",
        ]
    );
    rest_ok(&fake, &messages());
    handle.rehydrate(SES);
    assert_eq!(next_n(&mut rx, 1).await, vec!["rehydrated ses_a msgs=1 status=busy perms=per_1"]);
}

#[tokio::test(start_paused = true)]
async fn auth_failure_stops_without_retry_loop() {
    let fake = FakeTransport::new();
    fake.push_stream(FakeStream::Refuse(TransportError::Auth { status: 401 }));
    let (handle, mut rx) = start(&fake);
    let update = rx.recv().await.unwrap();
    assert_eq!(update, KiloUpdate::Failed(SseClientError::Auth { status: 401 }));
    assert!(rx.recv().await.is_none());
    assert!(handle.is_finished());
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn silent_stream_is_treated_as_dropped_after_15_seconds() {
    let fake = FakeTransport::new();
    let hello = data(&json!({"type": "server.connected", "properties": {}}));
    fake.push_stream(FakeStream::script([hello.clone()], FakeEnd::Stall));
    fake.push_stream(FakeStream::script([hello], FakeEnd::Stall));
    let (_handle, mut rx) = start(&fake);
    let got = next_n(&mut rx, 5).await;
    assert_eq!(
        got,
        vec![
            "connected 0",
            "unrouted server.connected",
            "reconnecting 1: no bytes from the stream for 15s",
            "connected 1",
            "unrouted server.connected",
        ]
    );
    match rx.recv().await.unwrap() {
        KiloUpdate::Reconnecting { delay, .. } => assert_eq!(delay, Duration::from_millis(250)),
        other => panic!("{other:?}"),
    }
}

/// A consumer that reports what it is handed, and when it is told to flush.
struct Recording(mpsc::UnboundedSender<String>);

impl Consumer for Recording {
    fn started(&mut self) {
        let _ = self.0.send("started".into());
    }

    async fn take(&mut self, update: KiloUpdate) -> Result<(), Gone> {
        self.0.send(summary(&update)).map_err(|_| Gone)
    }

    async fn flush(&mut self) -> Result<(), Gone> {
        self.0.send("flush".into()).map_err(|_| Gone)
    }
}

async fn recorded(rx: &mut mpsc::UnboundedReceiver<String>, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(rx.recv().await.unwrap());
    }
    out
}

/// The adapter's pump runs in the router's task: what the stream has ready at once is
/// handed over in order, then flushed once.
#[tokio::test(start_paused = true)]
async fn a_consumer_takes_what_is_ready_then_flushes_once() {
    let fake = FakeTransport::new();
    let live = fake.push_live_stream();
    let client = KiloClient::new(Arc::new(fake.clone()));
    let sse =
        SseClient::new(client.transport().clone(), client.event_request()).with_jitter(NoJitter);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let _handle = spawn_router_into(client, sse, Recording(tx));
    assert_eq!(recorded(&mut rx, 3).await, ["started", "connected 0", "flush"]);
    let chunk: String =
        [delta("evt_1", "a"), delta("evt_2", "b"), delta("evt_3", "c")].iter().map(data).collect();
    live.send(Ok(Bytes::from(chunk))).unwrap();
    assert_eq!(
        recorded(&mut rx, 4).await,
        [
            "event ses_a message.part.delta evt_1",
            "event ses_a message.part.delta evt_2",
            "event ses_a message.part.delta evt_3",
            "flush",
        ]
    );
    live.send(Ok(Bytes::from(data(&delta("evt_4", "d"))))).unwrap();
    assert_eq!(recorded(&mut rx, 2).await, ["event ses_a message.part.delta evt_4", "flush"]);
}
