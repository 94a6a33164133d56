//! Framing tests over in-memory pipes: requests reach the service, bad lines are answered or
//! logged, over-long lines are skipped without stopping the bridge, invalid outbound envelopes
//! never reach the wire.

use std::time::Duration;

use bb_protocol::v1::{V1Call, V1Error, V1Response};
use bb_protocol::{Limits, V1Message};
use bb_service::{Inbound, WebviewSink};
use proptest::prelude::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;

use crate::spawn_io;

struct Pipes {
    to_bridge: DuplexStream,
    from_bridge: tokio::io::Lines<BufReader<DuplexStream>>,
}

/// The service's side, as a test sees it: requests, and a sender of envelopes. A relay task
/// plays the service's part for refused lines, writing their answers in turn.
struct Relayed {
    inbound: mpsc::Receiver<Inbound>,
    outbound: mpsc::Sender<V1Message>,
}

fn pipes(limits: Limits) -> (Pipes, Relayed, crate::Bridge) {
    let (to_bridge, bridge_in) = tokio::io::duplex(1 << 16);
    let (bridge_out, from_bridge) = tokio::io::duplex(1 << 16);
    let (sink, bridge) = spawn_io(bridge_in, bridge_out, limits, std::future::pending());
    let WebviewSink { mut inbound, outbound, .. } = sink;
    let (tx, rx) = mpsc::channel(16);
    let relay_out = outbound.clone();
    tokio::spawn(async move {
        while let Some(msg) = inbound.recv().await {
            match msg {
                Inbound::Rejected(response) => {
                    let _ = relay_out.send(V1Message::Response(*response)).await;
                }
                other => {
                    let _ = tx.send(other).await;
                }
            }
        }
    });
    let relayed = Relayed { inbound: rx, outbound };
    (Pipes { to_bridge, from_bridge: BufReader::new(from_bridge).lines() }, relayed, bridge)
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
    let answer = next_line(&mut p.from_bridge).await;
    assert_eq!(answer["id"], "big");
    assert_eq!(answer["error"]["code"], "payload_too_large");
    assert_eq!(answer["error"]["details"]["limit"], "maxBytes");
    assert_eq!(answer["error"]["details"]["max"], 1024);
    drop(writer.await.unwrap());
    assert!(sink.inbound.recv().await.is_none());
}

/// Each bad line whose id can be read gets exactly one error response naming the limit,
/// in input order; lines without a readable id get none.
#[tokio::test]
async fn bad_lines_with_a_readable_id_get_exactly_one_answer() {
    let (mut p, mut sink, _bridge) = pipes(Limits::default());
    let huge = format!(
        "{{\"v\":1,\"kind\":\"req\",\"id\":\"huge\",\"method\":\"bb.sendMessage\",\"params\":{{\"sessionId\":\"s\",\"text\":\"{}\"}}}}\n",
        "x".repeat(2 * 1024 * 1024)
    );
    let late = format!(
        "{{\"params\":{{\"text\":\"{}\"}},\"v\":1,\"kind\":\"req\",\"method\":\"bb.init\",\"id\":\"late\"}}\n",
        "y".repeat(2 * 1024 * 1024)
    );
    let deep = format!(
        "{{\"v\":1,\"kind\":\"req\",\"id\":\"deep\",\"method\":\"bb.init\",\"params\":{{\"x\":{}{}}}}}\n",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let mut utf8 =
        b"{\"v\":1,\"kind\":\"req\",\"id\":\"utf8\",\"method\":\"bb.init\",\"params\":{\"x\":\""
            .to_vec();
    utf8.extend_from_slice(&[0xc3, 0x28, b'"', b'}', b'}', b'\n']);
    let mut input = Vec::new();
    for line in [huge.as_bytes(), late.as_bytes(), deep.as_bytes(), &utf8, b"{\"no\":\"id\"\n"] {
        input.extend_from_slice(line);
    }
    input.extend_from_slice(b"{\"v\":1,\"kind\":\"req\",\"id\":\"ok\",\"method\":\"bb.init\"}\n");
    let writer = tokio::spawn(async move {
        p.to_bridge.write_all(&input).await.unwrap();
        p.to_bridge
    });
    let expected = [
        (
            "huge",
            "payload_too_large",
            json!({"limit": "maxBytes", "max": 1024 * 1024, "size": huge.len() - 1}),
        ),
        (
            "late",
            "payload_too_large",
            json!({"limit": "maxBytes", "max": 1024 * 1024, "size": late.len() - 1}),
        ),
        ("deep", "invalid_json", json!({"limit": "maxDepth", "max": 100})),
        ("utf8", "invalid_json", json!({"encoding": "utf-8", "offset": utf8.len() - 6})),
    ];
    for (id, code, details) in expected {
        let answer = next_line(&mut p.from_bridge).await;
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["ok"], false);
        assert_eq!(answer["error"]["code"], code, "{answer}");
        assert_eq!(answer["error"]["details"], details, "{answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains("send"), "{answer}");
    }
    let Some(Inbound::Request(req)) = sink.inbound.recv().await else { panic!("no request") };
    assert_eq!(req.id, "ok");
    let p_to_bridge = writer.await.unwrap();
    drop(p_to_bridge);
    assert!(sink.inbound.recv().await.is_none());
    drop(sink);
    // Nothing else was written: one answer per readable id.
    let rest = tokio::time::timeout(Duration::from_secs(5), p.from_bridge.next_line()).await;
    assert!(matches!(rest, Ok(Ok(None))), "{rest:?}");
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

/// The Unix socket listener: one owner per path, clients handed to the runtime, the linger.
mod socket {
    use std::time::Duration;

    use bb_protocol::Limits;
    use bb_service::Inbound;
    use tokio::io::AsyncWriteExt;
    use tokio::sync::mpsc;

    use crate::socket::{Bound, Ended, bind};

    #[test]
    fn a_second_bind_finds_the_owner_and_a_non_socket_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.sock");
        let Bound::Listening(first) = bind(&path).unwrap() else { panic!("not bound") };
        match bind(&path).unwrap() {
            Bound::Running { pid } => assert_eq!(pid, Some(std::process::id())),
            Bound::Listening(_) => panic!("two owners of one path"),
        }
        drop(first);
        assert!(!path.exists(), "the owner removes its socket");
        let file = dir.path().join("plain");
        std::fs::write(&file, "x").unwrap();
        let err = bind(&file).unwrap_err();
        assert!(err.to_string().contains("is not a socket"), "{err}");
    }

    #[tokio::test(start_paused = true)]
    #[allow(clippy::disallowed_methods)] // tokio's paused clock: the linger is measured on it
    async fn clients_reach_the_runtime_and_the_linger_ends_serving() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.sock");
        let Bound::Listening(mut listener) = bind(&path).unwrap() else { panic!("not bound") };
        let (tx, mut rx) = mpsc::channel(4);
        let linger = Duration::from_secs(30);
        let serving = tokio::spawn(async move {
            let ended = listener.serve(tx, Limits::default(), linger, std::future::pending()).await;
            (listener, ended)
        });
        let mut client = tokio::net::UnixStream::connect(&path).await.unwrap();
        client
            .write_all(b"{\"v\":1,\"kind\":\"req\",\"id\":\"1\",\"method\":\"bb.init\"}\n")
            .await
            .unwrap();
        let mut sink = rx.recv().await.unwrap();
        let Some(Inbound::Request(request)) = sink.inbound.recv().await else {
            panic!("no request")
        };
        assert_eq!(request.id, "1");
        let started = tokio::time::Instant::now();
        drop(client);
        assert!(sink.inbound.recv().await.is_none(), "the client's input closed");
        drop(sink);
        let (_listener, (ended, _writers)) = serving.await.unwrap();
        assert_eq!(ended, Ended::Linger);
        assert!(
            started.elapsed() >= linger,
            "served {:?} after the last client",
            started.elapsed()
        );
        assert!(rx.recv().await.is_none(), "the connection channel is closed");
        assert!(!path.exists());
    }
}
