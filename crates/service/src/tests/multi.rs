//! One runtime, several webview connections: routing, per-tab seq, no cross-talk, and a
//! connection that stops reading does not hold the others back.

use std::sync::Arc;
use std::time::Duration;

use bb_protocol::V1Message;
use bb_protocol::v1::{
    CreateSessionParams, EventsPayload, SendMessageParams, V1Call, V1Request, V1Topic,
};
use tokio::sync::mpsc;

use super::FakeEngine;
use crate::engine::input_channel;
use crate::sink::{Inbound, MemoryWebview, WebviewSink};
use crate::{Service, ServiceConfig, SystemClock};

fn connection(capacity: usize) -> (WebviewSink, MemoryWebview) {
    let (in_tx, in_rx) = mpsc::channel(16);
    let (out_tx, out_rx) = mpsc::channel(capacity);
    (
        WebviewSink { inbound: in_rx, outbound: out_tx, written: None },
        MemoryWebview { to_service: in_tx, from_service: out_rx },
    )
}

fn runtime() -> mpsc::Sender<WebviewSink> {
    runtime_with().0
}

fn runtime_with() -> (mpsc::Sender<WebviewSink>, Arc<FakeEngine>) {
    let (tx, rx) = input_channel();
    let engine = Arc::new(FakeEngine::new(tx));
    let adapter = engine.clone();
    let service = Service::new(ServiceConfig::default(), adapter, rx, Arc::new(SystemClock), None);
    let (conn_tx, conn_rx) = mpsc::channel(4);
    tokio::spawn(service.run(conn_rx));
    (conn_tx, engine)
}

async fn call(w: &MemoryWebview, id: &str, call: V1Call) {
    w.to_service.send(Inbound::Request(V1Request::new(id, call))).await.unwrap();
}

/// Reads until the response `id` and then until `want` event items of `session` arrived;
/// returns every `bb/events` payload seen.
async fn collect(
    w: &mut MemoryWebview,
    id: &str,
    session: Option<&str>,
    want: usize,
) -> (serde_json::Value, Vec<EventsPayload>) {
    let mut events = Vec::new();
    let mut response = None;
    let mut items = 0;
    while response.is_none() || items < want {
        let msg = tokio::time::timeout(Duration::from_secs(10), w.from_service.recv())
            .await
            .expect("output in time")
            .expect("open");
        match msg {
            V1Message::Response(r) if r.id == id => {
                response = Some(serde_json::to_value(&r).unwrap());
            }
            V1Message::Event(e) => {
                if let V1Topic::Events(p) = e.topic {
                    if Some(&*p.session_id) == session {
                        items += p.events.len();
                    }
                    events.push(p);
                }
            }
            _ => {}
        }
    }
    (response.unwrap(), events)
}

fn send(session: &str, text: &str) -> V1Call {
    V1Call::SendMessage(SendMessageParams {
        session_id: session.into(),
        text: text.into(),
        message_id: Some(format!("m-{session}")),
        ..Default::default()
    })
}

#[tokio::test]
async fn two_connections_see_only_their_own_sessions() {
    let conns = runtime();
    let (sink_a, mut a) = connection(256);
    let (sink_b, mut b) = connection(256);
    conns.send(sink_a).await.unwrap();
    conns.send(sink_b).await.unwrap();
    for w in [&a, &b] {
        call(w, "init", V1Call::Init(Default::default())).await;
    }
    collect(&mut a, "init", None, 0).await;
    collect(&mut b, "init", None, 0).await;
    let create = |tab: &str| {
        V1Call::CreateSession(CreateSessionParams {
            tab_id: Some(tab.into()),
            ..Default::default()
        })
    };
    call(&a, "c", create("tab-a")).await;
    let (res, _) = collect(&mut a, "c", None, 0).await;
    let sa = res["result"]["sessionId"].as_str().unwrap().to_owned();
    call(&b, "c", create("tab-b")).await;
    let (res, _) = collect(&mut b, "c", None, 0).await;
    let sb = res["result"]["sessionId"].as_str().unwrap().to_owned();

    call(&a, "s", send(&sa, "one two three")).await;
    call(&b, "s", send(&sb, "four five")).await;
    let (_, got_a) = collect(&mut a, "s", Some(&sa), 3).await;
    let (_, got_b) = collect(&mut b, "s", Some(&sb), 2).await;
    for (got, session, tab) in [(&got_a, &sa, "tab-a"), (&got_b, &sb, "tab-b")] {
        assert!(got.iter().all(|p| *p.session_id == **session), "no cross-talk: {got:?}");
        assert!(got.iter().all(|p| p.tab_id.as_deref() == Some(tab)));
        let seqs: Vec<u64> = got.iter().filter_map(|p| p.seq).collect();
        let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
        assert_eq!(seqs, expected, "per-tab seq from 1, +1");
        let items: Vec<_> = got.iter().flat_map(|p| p.events.items().into_owned()).collect();
        assert!(items.iter().all(|i| i.class == "transcript.assistant_stream"));
        assert!(items.iter().all(|i| i.message_id.as_deref() == Some(&*format!("m-{session}"))));
    }
}

#[tokio::test]
async fn a_connection_that_stops_reading_holds_no_one_back() {
    let conns = runtime();
    let (sink_stuck, mut stuck) = connection(2);
    let (sink_a, mut a) = connection(256);
    conns.send(sink_stuck).await.unwrap();
    conns.send(sink_a).await.unwrap();
    call(&stuck, "init", V1Call::Init(Default::default())).await;
    call(&a, "init", V1Call::Init(Default::default())).await;
    collect(&mut a, "init", None, 0).await;
    // The stuck webview starts a long reply and reads nothing while it streams.
    call(&stuck, "c", V1Call::CreateSession(Default::default())).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Meanwhile the other connection is served at once.
    call(&a, "c", V1Call::CreateSession(Default::default())).await;
    let (res, _) = collect(&mut a, "c", None, 0).await;
    let sa = res["result"]["sessionId"].as_str().unwrap().to_owned();
    call(&a, "s", send(&sa, "x y")).await;
    collect(&mut a, "s", Some(&sa), 2).await;
    // The stuck one gets everything, in order, once it reads: its init and create answers.
    let (res, _) = collect(&mut stuck, "init", None, 0).await;
    assert_eq!(res["ok"], true);
    let (res, _) = collect(&mut stuck, "c", None, 0).await;
    let ss = res["result"]["sessionId"].as_str().unwrap().to_owned();
    let words: Vec<String> = (0..600).map(|i| format!("w{i}")).collect();
    call(&stuck, "s", send(&ss, &words.join(" "))).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, got) = collect(&mut stuck, "s", Some(&ss), 0).await;
    let mut seen = got.clone();
    let mut text = String::new();
    loop {
        for p in seen.drain(..) {
            if p.resync == Some(true) {
                text.clear();
            }
            for e in p.events.items().iter() {
                text.push_str(e.payload["delta"].as_str().unwrap_or_default());
            }
        }
        if text.ends_with("w599") {
            break;
        }
        let msg = tokio::time::timeout(Duration::from_secs(10), stuck.from_service.recv())
            .await
            .expect("the rest arrives")
            .unwrap();
        if let V1Message::Event(e) = msg
            && let V1Topic::Events(p) = e.topic
        {
            seen.push(p);
        }
    }
    assert_eq!(text, words.concat(), "every delta once, in order");
}

#[tokio::test]
async fn delivery_is_reported_only_once_the_bridge_wrote_the_events() {
    let (conns, engine) = runtime_with();
    let (mut sink, mut w) = connection(256);
    let (ack_tx, ack_rx) = tokio::sync::watch::channel(0u64);
    sink.written = Some(ack_rx);
    conns.send(sink).await.unwrap();
    call(&w, "init", V1Call::Init(Default::default())).await;
    call(&w, "c", V1Call::CreateSession(Default::default())).await;
    // Read everything the runtime hands over, counting envelopes, but acknowledge nothing.
    let mut handed = 0;
    let session = loop {
        let msg = w.from_service.recv().await.unwrap();
        handed += 1;
        if let V1Message::Response(r) = msg
            && r.id == "c"
        {
            break r.result.unwrap()["sessionId"].as_str().unwrap().to_owned();
        }
    };
    call(&w, "s", send(&session, "a b c")).await;
    let mut last_id = None;
    let mut items = 0;
    let mut response = false;
    while items < 3 || !response {
        let msg = tokio::time::timeout(Duration::from_secs(10), w.from_service.recv())
            .await
            .unwrap()
            .unwrap();
        handed += 1;
        match msg {
            V1Message::Event(e) => {
                if let V1Topic::Events(p) = e.topic {
                    items += p.events.len();
                    last_id = p.events.ids().last().map(str::to_owned);
                }
            }
            V1Message::Response(r) => response |= r.id == "s",
            _ => {}
        }
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        engine.delivered.lock().unwrap().is_empty(),
        "nothing is delivered before it is written"
    );
    ack_tx.send(handed).unwrap();
    let want = (session.clone(), last_id.unwrap());
    for _ in 0..100 {
        if engine.delivered.lock().unwrap().contains(&want) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "the last written event was never reported delivered: {:?}",
        engine.delivered.lock().unwrap()
    );
}
