//! Framing tests over in-memory pipes: requests reach the service, bad lines are answered or
//! logged, over-long lines are skipped without stopping the bridge, invalid outbound envelopes
//! never reach the wire.

use std::time::Duration;

use bb_protocol::v1::{V1Call, V1Error, V1Response};
use bb_protocol::{Limits, V1Message};
use bb_service::Inbound;
use proptest::prelude::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

use crate::spawn_io;

struct Pipes {
    to_bridge: DuplexStream,
    from_bridge: tokio::io::Lines<BufReader<DuplexStream>>,
}

fn pipes(limits: Limits) -> (Pipes, bb_service::WebviewSink, crate::Bridge) {
    let (to_bridge, bridge_in) = tokio::io::duplex(1 << 16);
    let (bridge_out, from_bridge) = tokio::io::duplex(1 << 16);
    let (sink, bridge) = spawn_io(bridge_in, bridge_out, limits, std::future::pending());
    (Pipes { to_bridge, from_bridge: BufReader::new(from_bridge).lines() }, sink, bridge)
}

async fn next_line(lines: &mut tokio::io::Lines<BufReader<DuplexStream>>) -> Value {
    let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    serde_json::from_str(&line).unwrap()
}

#[tokio::test]
async fn requests_reach_the_service_and_bad_lines_are_answered() {
    let (mut p, mut sink, _bridge) = pipes(Limits::default());
    let input = concat!(
        "not json\n",
        "{\"v\":1,\"kind\":\"req\",\"id\":\"a\",\"method\":\"bb.nope\"}\r\n",
        "{\"v\":1,\"kind\":\"req\",\"id\":\"b\",\"method\":\"bb.init\"}\r\n",
        "{\"v\":1,\"kind\":\"evt\",\"topic\":\"bb/state\",\"payload\":{\"sessions\":[]}}\n",
        "{\"v\":1,\"kind\":\"req\",\"id\":\"c\",\"method\":\"bb.listSessions\"}",
    );
    p.to_bridge.write_all(input.as_bytes()).await.unwrap();
    drop(p.to_bridge);
    let rejected = next_line(&mut p.from_bridge).await;
    assert_eq!(rejected["id"], "a");
    assert_eq!(rejected["error"]["code"], "unknown_method");
    let mut ids = Vec::new();
    while let Some(Inbound::Request(req)) = sink.inbound.recv().await {
        ids.push((req.id.clone(), matches!(req.call, V1Call::Init(_) | V1Call::ListSessions(_))));
    }
    // The last line has no terminator and still counts; the event from the webview does not.
    assert_eq!(ids, [("b".to_owned(), true), ("c".to_owned(), true)]);
}

#[tokio::test]
async fn an_over_long_line_is_skipped_and_the_next_one_served() {
    let limits = Limits { max_bytes: 1024, ..Limits::default() };
    let (mut p, mut sink, _bridge) = pipes(limits);
    let long = format!(
        "{{\"v\":1,\"kind\":\"req\",\"id\":\"big\",\"method\":\"bb.init\",\"pad\":\"{}\"}}\n",
        "x".repeat(100_000)
    );
    let writer = tokio::spawn(async move {
        p.to_bridge.write_all(long.as_bytes()).await.unwrap();
        p.to_bridge
            .write_all(b"{\"v\":1,\"kind\":\"req\",\"id\":\"ok\",\"method\":\"bb.init\"}\n")
            .await
            .unwrap();
        p.to_bridge
    });
    let Some(Inbound::Request(req)) = sink.inbound.recv().await else { panic!("no request") };
    assert_eq!(req.id, "ok");
    drop(writer.await.unwrap());
    assert!(sink.inbound.recv().await.is_none());
}

#[tokio::test]
async fn invalid_outbound_envelopes_never_reach_the_wire() {
    let (mut p, sink, bridge) = pipes(Limits::default());
    // ok:true with an error is not a valid response.
    let mut bad = V1Response::success("r1", json!({}));
    bad.error = Some(V1Error::new("x", "y"));
    sink.outbound.send(V1Message::Response(bad)).await.unwrap();
    sink.outbound
        .send(V1Message::Response(V1Response::success("r2", json!({"fine": true}))))
        .await
        .unwrap();
    let first = next_line(&mut p.from_bridge).await;
    assert_eq!(first["id"], "r1");
    assert_eq!(first["ok"], false);
    assert_eq!(first["error"]["code"], "internal_error");
    let second = next_line(&mut p.from_bridge).await;
    assert_eq!(second["result"]["fine"], true);
    drop(sink);
    drop(p.to_bridge);
    tokio::time::timeout(Duration::from_secs(5), bridge.writer).await.unwrap().unwrap();
}

proptest! {
    /// Arbitrary bytes, arbitrarily split, never stop the bridge: a valid request appended
    /// afterwards on its own line is still served.
    #[test]
    fn arbitrary_input_never_stops_the_bridge(noise in proptest::collection::vec(any::<u8>(), 0..2000), split in 0usize..2000) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let limits = Limits { max_bytes: 256, ..Limits::default() };
            let (mut p, mut sink, _bridge) = pipes(limits);
            let mut input = noise;
            input.extend_from_slice(b"\n{\"v\":1,\"kind\":\"req\",\"id\":\"last\",\"method\":\"bb.init\"}\n");
            let at = split.min(input.len());
            let writer = tokio::spawn(async move {
                p.to_bridge.write_all(&input[..at]).await.unwrap();
                p.to_bridge.write_all(&input[at..]).await.unwrap();
                p.to_bridge
            });
            let mut last = None;
            while let Ok(Some(Inbound::Request(req))) = tokio::time::timeout(Duration::from_secs(5), sink.inbound.recv()).await {
                if req.id == "last" {
                    last = Some(req.id);
                    break;
                }
            }
            drop(writer.await.unwrap());
            assert_eq!(last.as_deref(), Some("last"));
        });
    }
}
