//! An orderly exit loses no write acknowledgement: after the webview's input closed, every
//! envelope the bridge wrote (even acknowledged after the close) counts, and
//! `EngineAdapter::delivered` reaches the last one, so a resume position never lags what the
//! webview got. A turn
//! the closed input asked for that waits on the user is shown up to its prompt, and the
//! connection then closes without waiting out the grace.

use std::sync::Arc;
use std::time::Duration;

use bb_protocol::V1Message;
use bb_protocol::v1::{SendMessageParams, V1Call, V1Request, V1Topic};

use super::FakeEngine;
use crate::engine::input_channel;
use crate::sink::{Inbound, channels_with_ack, single};
use crate::{Service, ServiceConfig, SystemClock};

#[tokio::test]
async fn every_written_batch_is_delivered_after_stdin_eof() {
    let (tx, rx) = input_channel();
    let engine = Arc::new(FakeEngine::new(tx));
    let service =
        Service::new(ServiceConfig::default(), engine.clone(), rx, Arc::new(SystemClock), None);
    let (sink, to_service, mut from_service, ack) = channels_with_ack();
    let runtime = tokio::spawn(service.run(single(sink)));
    let request = |id: &str, call| Inbound::Request(V1Request::new(id, call));
    to_service.send(request("i", V1Call::Init(Default::default()))).await.unwrap();
    to_service.send(request("c", V1Call::CreateSession(Default::default()))).await.unwrap();
    let mut handed = 0u64;
    let session = loop {
        let msg = from_service.recv().await.unwrap();
        handed += 1;
        if let V1Message::Response(r) = msg
            && r.id == "c"
        {
            break r.result.unwrap()["sessionId"].as_str().unwrap().to_owned();
        }
    };
    let send = SendMessageParams {
        session_id: session.clone(),
        text: "one two three four".into(),
        ..Default::default()
    };
    to_service.send(request("s", V1Call::SendMessage(send))).await.unwrap();
    let mut last_of_batches = Vec::new();
    let (mut items, mut answered) = (0, false);
    while items < 4 || !answered {
        let next = tokio::time::timeout(Duration::from_secs(10), from_service.recv()).await;
        handed += 1;
        match next.expect("output in time").expect("open") {
            V1Message::Event(e) => {
                if let V1Topic::Events(p) = e.topic {
                    items += p.events.len();
                    let last = p.events.ids().last().unwrap().to_owned();
                    last_of_batches.push((p.session_id.to_string(), last));
                }
            }
            V1Message::Response(r) => answered |= r.id == "s",
            _ => {}
        }
    }
    // The webview's input closes (stdin EOF) while nothing handed over is acknowledged yet.
    drop(to_service);
    while let Some(_msg) = tokio::time::timeout(Duration::from_secs(10), from_service.recv())
        .await
        .expect("the runtime closes the connection after stdin EOF")
    {
        handed += 1;
    }
    assert!(engine.delivered.lock().unwrap().is_empty(), "nothing delivered before it is written");
    // The writer finishes writing what it was handed, after the runtime closed its side.
    for _ in 0..handed {
        ack.wrote();
    }
    drop(ack);
    tokio::time::timeout(Duration::from_secs(10), runtime)
        .await
        .expect("the runtime ends once the acknowledgements are in")
        .unwrap()
        .unwrap();
    let delivered = engine.delivered.lock().unwrap().clone();
    assert!(!last_of_batches.is_empty());
    // The position reaches the last written batch (acknowledgements that arrive together
    // move it once, to the last of them), through batch ends only.
    assert_eq!(delivered.last(), last_of_batches.last(), "{delivered:?}");
    assert!(delivered.iter().all(|d| last_of_batches.contains(d)), "{delivered:?}");
}

#[tokio::test]
async fn a_turn_waiting_on_the_user_is_shown_to_its_prompt_then_the_input_end_closes() {
    let (tx, rx) = input_channel();
    let engine = Arc::new(FakeEngine::new(tx));
    // A grace no test waits out: the connection must close because the turn waits on the
    // user, not because the grace ended.
    let config = ServiceConfig { eof_grace: Duration::from_secs(3600), ..Default::default() };
    let service = Service::new(config, engine, rx, Arc::new(SystemClock), None);
    let (sink, to_service, mut from_service) = crate::sink::channels();
    let runtime = tokio::spawn(service.run(single(sink)));
    let request = |id: &str, call| Inbound::Request(V1Request::new(id, call));
    to_service.send(request("i", V1Call::Init(Default::default()))).await.unwrap();
    to_service.send(request("c", V1Call::CreateSession(Default::default()))).await.unwrap();
    let session = loop {
        if let V1Message::Response(r) = from_service.recv().await.unwrap()
            && r.id == "c"
        {
            break r.result.unwrap()["sessionId"].as_str().unwrap().to_owned();
        }
    };
    let send = SendMessageParams { session_id: session, text: "ask".into(), ..Default::default() };
    to_service.send(request("s", V1Call::SendMessage(send))).await.unwrap();
    drop(to_service);
    let mut shown = false;
    while let Some(msg) = tokio::time::timeout(Duration::from_secs(30), from_service.recv())
        .await
        .expect("the connection closes once the turn waits on the user")
    {
        if let V1Message::Event(e) = msg
            && let V1Topic::Events(p) = e.topic
        {
            shown |= p.events.ids().any(|id| id == "evt_ask");
        }
    }
    assert!(shown, "the prompt was shown before the connection closed");
    tokio::time::timeout(Duration::from_secs(30), runtime).await.unwrap().unwrap().unwrap();
}
