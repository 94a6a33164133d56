//! Every real Kilo capture in `fixtures/engine/kilo/` parses and routes without loss: the
//! router reports exactly the recorded events (type, session, payload), in order, whatever
//! the chunking. A `sync` echo is reported as `KiloUpdate::Sync` with its id, session and
//! `seq` only (its body repeats the event before it).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bb_engine_client::fake::{FakeEnd, FakeStream, FakeTransport};
use bb_engine_client::sse::{NoJitter, ReconnectPolicy, SseClient};
use bb_kilo::client::{KiloClient, KiloUpdate};
use bytes::Bytes;
use serde_json::{Value, json};

use crate::spawn_router;

fn kilo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine/kilo")
}

/// (type, sessionID, JSON) per recorded event of one stream.
fn recorded(stream: &Value, sse: &[u8]) -> Vec<(String, Option<String>, Value)> {
    stream["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let offset = e["offset"].as_u64().unwrap() as usize;
            let length = e["length"].as_u64().unwrap() as usize;
            let text = std::str::from_utf8(&sse[offset..offset + length]).unwrap();
            let json = text.trim_end().strip_prefix("data: ").unwrap();
            let session = e["sessionID"].as_str().map(str::to_owned);
            let event = sync_projection(serde_json::from_str(json).unwrap());
            let event = if session.is_some() { routed_projection(event) } else { event };
            (e["type"].as_str().unwrap().to_owned(), session, event)
        })
        .collect()
}

/// A routed event reduced to what `KiloUpdate::Event` keeps: type, id and body
/// (`properties`); a `sync` one is already projected.
fn routed_projection(event: Value) -> Value {
    if event["type"] == "sync" {
        return event;
    }
    let inner = if event.get("type").is_none() { &event["payload"] } else { &event };
    json!({"type": inner["type"], "id": inner["id"], "body": inner["properties"]})
}

/// A `sync` event (top-level or wrapped) reduced to what `KiloUpdate::Sync` reports; others
/// unchanged.
fn sync_projection(event: Value) -> Value {
    let inner = if event.get("type").is_none() { &event["payload"] } else { &event };
    if inner["type"] != "sync" {
        return event;
    }
    json!({
        "type": "sync",
        "id": inner["id"],
        "aggregateID": inner["syncEvent"]["aggregateID"],
        "seq": inner["syncEvent"]["seq"],
    })
}

async fn route(sse: Vec<u8>, chunk: usize) -> Vec<(String, Option<String>, Value)> {
    let fake = FakeTransport::new();
    let chunks: Vec<Bytes> = sse.chunks(chunk).map(Bytes::copy_from_slice).collect();
    fake.push_stream(FakeStream::Script { chunks, end: FakeEnd::Eof });
    let client = KiloClient::new(Arc::new(fake.clone()));
    let sse = SseClient::new(client.transport().clone(), client.event_request())
        .with_jitter(NoJitter)
        .with_policy(ReconnectPolicy { max_attempts: 1, ..ReconnectPolicy::default() });
    let (_handle, mut rx) = spawn_router(client, sse, 16);
    let mut got = Vec::new();
    loop {
        match rx.recv().await.unwrap() {
            KiloUpdate::Connected { .. } => {}
            KiloUpdate::Event { event } => {
                let kept = json!({"type": event.event_type, "id": event.id, "body": event.body.value()});
                got.push((event.event_type.to_string(), event.session(), kept));
            }
            KiloUpdate::Sync(sync) => got.push((
                "sync".to_owned(),
                Some(sync.session_id.clone()),
                json!({"type": "sync", "id": sync.id, "aggregateID": sync.session_id, "seq": sync.seq}),
            )),
            KiloUpdate::Unrouted(event) => got.push((event.event_type.to_string(), None, event.raw())),
            KiloUpdate::Reconnecting { .. } => return got,
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn metas(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".meta.json"))
        .collect();
    out.sort();
    out
}

#[tokio::test(start_paused = true)]
async fn every_kilo_capture_routes_without_loss() {
    let mut streams = 0;
    let mut events = 0;
    for dir in [kilo_dir(), kilo_dir().join("opencode")] {
        for meta_path in metas(&dir) {
            let meta: Value =
                serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
            for stream in meta["streams"].as_array().unwrap() {
                let file = dir.join(stream["file"].as_str().unwrap());
                let sse = std::fs::read(&file).unwrap();
                let expected = recorded(stream, &sse);
                assert!(!expected.is_empty(), "{}", file.display());
                for chunk in [1, 7, 4096, sse.len().max(1)] {
                    let got = route(sse.clone(), chunk).await;
                    assert_eq!(got.len(), expected.len(), "{} chunk {chunk}", file.display());
                    assert_eq!(got, expected, "{} chunk {chunk}", file.display());
                }
                streams += 1;
                events += expected.len();
            }
        }
    }
    assert!(streams >= 10, "only {streams} captured streams");
    assert!(events > 400, "only {events} captured events");
}

/// Events the parser completes in `bytes` (the reference for the cut test).
fn complete_events(bytes: &[u8]) -> Vec<String> {
    let mut parser = bb_engine_client::sse::SseParser::default();
    parser
        .feed_collect(bytes)
        .unwrap()
        .into_iter()
        .filter_map(|item| match item {
            bb_engine_client::sse::SseItem::Event(e) => Some(e.data),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_cut_anywhere_delivers_each_complete_event_once_and_no_partial_one() {
    use bb_engine_client::sse::SseClientEvent;
    use bb_engine_client::transport::TransportError;

    let sse = std::fs::read(kilo_dir().join("stream_text.sse")).unwrap();
    let all = complete_events(&sse);
    let step = (sse.len() / 97).max(1);
    for cut in (0..sse.len()).step_by(step) {
        let fake = FakeTransport::new();
        let head = Bytes::copy_from_slice(&sse[..cut]);
        let broken = FakeEnd::Error(TransportError::Body("cut".into()));
        fake.push_stream(FakeStream::Script { chunks: vec![head], end: broken });
        fake.push_stream(FakeStream::Script {
            chunks: vec![Bytes::from(sse.clone())],
            end: FakeEnd::Eof,
        });
        let mut client = SseClient::new(
            Arc::new(fake),
            bb_engine_client::transport::EngineRequest::get("/event"),
        )
        .with_jitter(NoJitter);
        let mut first = Vec::new();
        let mut second = Vec::new();
        let mut connections = 0;
        while connections < 3 {
            match client.next().await.unwrap().unwrap() {
                SseClientEvent::Connected { .. } => connections += 1,
                SseClientEvent::Event(e) if connections == 1 => first.push(e.data),
                SseClientEvent::Event(e) => second.push(e.data),
                SseClientEvent::Disconnected { .. } if connections == 2 => break,
                _ => {}
            }
        }
        assert_eq!(first, complete_events(&sse[..cut]), "cut at {cut}");
        assert_eq!(second, all, "cut at {cut}: the next connection starts clean");
    }
}

/// Every event type the real engines sent in the captures is one the bridge holds as a
/// static string (`bb_kilo::client::event_type`): a type the engine adds shows here, where
/// it would otherwise only cost an allocation per event.
#[test]
fn every_captured_event_type_is_held_without_allocation() {
    let mut types = std::collections::BTreeSet::new();
    for dir in [kilo_dir(), kilo_dir().join("opencode")] {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "sse") {
                continue;
            }
            for data in complete_events(&std::fs::read(&path).unwrap()) {
                let Ok(event) = serde_json::from_str::<Value>(&data) else { continue };
                // `/global/event` wraps the event in `payload`.
                let event = if event.get("type").is_some() { &event } else { &event["payload"] };
                if let Some(kind) = event["type"].as_str() {
                    types.insert(kind.to_owned());
                }
            }
        }
    }
    assert!(types.len() >= 15, "only {} types captured: {types:?}", types.len());
    let owned: Vec<_> = types
        .iter()
        .filter(|kind| matches!(bb_kilo::client::event_type(kind), std::borrow::Cow::Owned(_)))
        .collect();
    assert!(owned.is_empty(), "captured types not held as static strings: {owned:?}");
}
