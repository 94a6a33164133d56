//! The HTTP transport keeps its secret out of `Debug`; only plain ids become path segments;
//! its streams (each on its own connection, read in the stream's task) against a raw TCP
//! server that writes the bytes a test wants, where it wants them split or cut.

use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use futures_util::StreamExt as _;
use proptest::prelude::*;
use secrecy::SecretString;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use crate::sse::{DropReason, NoJitter, ReconnectPolicy, SseClient, SseClientEvent};
use crate::transport::own_conn::{Chunked, Framing};
use crate::transport::{
    ByteStream, EngineAuth, EngineRequest, EngineTransport as _, HttpOptions, HttpTransport,
    TransportError, is_path_segment,
};

#[test]
fn debug_output_never_shows_the_secret() {
    for auth in [
        EngineAuth::Basic { user: "kilo".into(), password: SecretString::from("hunter2-pass") },
        EngineAuth::Bearer(SecretString::from("hunter2-pass")),
    ] {
        let transport =
            HttpTransport::new("http://127.0.0.1:4096", auth, HttpOptions::default()).unwrap();
        let shown = format!("{transport:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}

#[test]
fn path_segments_are_plain_ids_only() {
    let long = "a".repeat(129);
    for ok in ["ses_01JX", "per-1", "0b6c4d2e-9f1a-4c55-8f62-3e0d8f1b2a77", &long[..128]] {
        assert!(is_path_segment(ok), "{ok:?}");
    }
    for bad in ["", "..", "../config", "a/b", "a?x=1", "a#b", "a%2F", "é", " a", &long[..]] {
        assert!(!is_path_segment(bad), "{bad:?}");
    }
}

const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

/// A listener on a loopback port and a transport pointed at it.
async fn server(auth: EngineAuth) -> (TcpListener, HttpTransport) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}/", listener.local_addr().unwrap().port());
    (listener, HttpTransport::new(&base, auth, HttpOptions::default()).unwrap())
}

/// Accepts one connection and reads its request head (up to the blank line).
async fn accept(listener: &TcpListener) -> (TcpStream, String) {
    let (mut socket, _) = listener.accept().await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8];
        assert_eq!(socket.read(&mut byte).await.unwrap(), 1, "request cut: {head:?}");
        head.push(byte[0]);
    }
    (socket, String::from_utf8(head).unwrap())
}

/// Reads from `stream` until `want` bytes came, in whatever chunks.
async fn read_exactly(stream: &mut ByteStream, want: &str) {
    let mut got = Vec::new();
    while got.len() < want.len() {
        got.extend_from_slice(&stream.next().await.unwrap().unwrap());
    }
    assert_eq!(String::from_utf8_lossy(&got), want);
}

#[tokio::test]
async fn a_chunked_body_split_across_reads_yields_its_bytes_in_order() {
    let (listener, transport) = server(EngineAuth::None).await;
    let (more_tx, more_rx) = oneshot::channel::<()>();
    let (last_tx, last_rx) = oneshot::channel::<()>();
    let engine = tokio::spawn(async move {
        let (mut socket, _) = accept(&listener).await;
        socket.write_all(format!("{SSE_HEAD}d\r\ndata: h").as_bytes()).await.unwrap();
        more_rx.await.unwrap();
        // The rest of the chunk, then a chunk-size line cut after its first digit.
        socket.write_all(b"ello\n\n\r\n1").await.unwrap();
        last_rx.await.unwrap();
        socket.write_all(b"0\r\ndata: seconds!\n\n\r\n0\r\n\r\n").await.unwrap();
        socket
    });
    let mut stream = transport.open_stream(EngineRequest::get("/event")).await.unwrap();
    read_exactly(&mut stream, "data: h").await;
    more_tx.send(()).unwrap();
    read_exactly(&mut stream, "ello\n\n").await;
    last_tx.send(()).unwrap();
    read_exactly(&mut stream, "data: seconds!\n\n").await;
    assert!(stream.next().await.is_none(), "the last chunk ends the stream");
    drop(engine.await.unwrap());
}

#[tokio::test]
async fn a_body_cut_mid_chunk_is_a_retryable_body_error() {
    let (listener, transport) = server(EngineAuth::None).await;
    let engine = tokio::spawn(async move {
        let (mut socket, _) = accept(&listener).await;
        socket.write_all(format!("{SSE_HEAD}20\r\ndata: partial").as_bytes()).await.unwrap();
        // Dropped here: the connection closes 19 bytes into a 32-byte chunk.
    });
    let mut stream = transport.open_stream(EngineRequest::get("/event")).await.unwrap();
    read_exactly(&mut stream, "data: partial").await;
    engine.await.unwrap();
    let error = stream.next().await.unwrap().unwrap_err();
    assert!(matches!(error, TransportError::Body(_)), "{error:?}");
    assert!(error.is_retryable());
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn a_close_delimited_body_ends_at_eof() {
    let (listener, transport) = server(EngineAuth::None).await;
    let engine = tokio::spawn(async move {
        let (mut socket, _) = accept(&listener).await;
        let head =
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        socket.write_all(format!("{head}data: a\n\n").as_bytes()).await.unwrap();
    });
    let mut stream = transport.open_stream(EngineRequest::get("/event")).await.unwrap();
    read_exactly(&mut stream, "data: a\n\n").await;
    engine.await.unwrap();
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn a_refused_connection_is_a_retryable_connect_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}/", listener.local_addr().unwrap().port());
    drop(listener);
    let transport = HttpTransport::new(&base, EngineAuth::None, HttpOptions::default()).unwrap();
    let Err(error) = transport.open_stream(EngineRequest::get("/event")).await else {
        panic!("nothing listens there")
    };
    assert!(matches!(error, TransportError::Connect(_)), "{error:?}");
    assert!(error.is_retryable());
}

#[tokio::test]
async fn a_stream_request_carries_its_headers_auth_and_origin_form_target() {
    for (auth, expected) in [
        (EngineAuth::Bearer(SecretString::from("tok-1")), "authorization: Bearer tok-1\r\n"),
        (
            EngineAuth::Basic { user: "kilo".into(), password: SecretString::from("hunter2-pass") },
            "authorization: Basic a2lsbzpodW50ZXIyLXBhc3M=\r\n",
        ),
    ] {
        let (listener, transport) = server(auth).await;
        let port = listener.local_addr().unwrap().port();
        let engine = tokio::spawn(async move {
            let (mut socket, head) = accept(&listener).await;
            socket.write_all(format!("{SSE_HEAD}0\r\n\r\n").as_bytes()).await.unwrap();
            head
        });
        let request = EngineRequest::get("/v1/sessions/s-1/events")
            .with_query("after", "3")
            .with_header("last-event-id", "41");
        let mut stream = transport.open_stream(request).await.unwrap();
        assert!(stream.next().await.is_none());
        let head = engine.await.unwrap();
        assert!(head.starts_with("GET /v1/sessions/s-1/events?after=3 HTTP/1.1\r\n"), "{head}");
        for line in [
            &format!("host: 127.0.0.1:{port}\r\n")[..],
            "accept: text/event-stream\r\n",
            "last-event-id: 41\r\n",
            expected,
        ] {
            assert!(head.contains(line), "{line:?} not in {head}");
        }
    }
}

#[tokio::test]
async fn refusals_and_other_content_types_are_typed_errors() {
    let long = "x".repeat(10_000);
    let answers = [
        ("HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n".to_owned(), "auth"),
        (format!("HTTP/1.1 500 Oops\r\ncontent-length: 10000\r\n\r\n{long}"), "http"),
        // An empty body on a connection kept open: its end is its length, not the close.
        ("HTTP/1.1 503 Busy\r\ncontent-length: 0\r\n\r\n".to_owned(), "empty"),
        (
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
                .to_owned(),
            "type",
        ),
    ];
    for (answer, kind) in answers {
        let (listener, transport) = server(EngineAuth::None).await;
        let engine = tokio::spawn(async move {
            let (mut socket, _) = accept(&listener).await;
            socket.write_all(answer.as_bytes()).await.unwrap();
            socket
        });
        let Err(error) = transport.open_stream(EngineRequest::get("/event")).await else {
            panic!("{kind}: not a stream")
        };
        match (kind, &error) {
            ("auth", TransportError::Auth { status: 401 }) => {}
            ("http", TransportError::Http { status: 500, body }) => {
                assert_eq!(body.len(), 4096);
                assert!(error.is_retryable());
            }
            ("empty", TransportError::Http { status: 503, body }) => assert_eq!(body, ""),
            ("type", TransportError::NotEventStream { content_type }) => {
                assert_eq!(content_type, "application/json");
            }
            _ => panic!("{kind}: {error:?}"),
        }
        drop(engine.await.unwrap());
    }
}

fn sse_client(transport: HttpTransport, read_timeout: Duration) -> SseClient {
    let policy = ReconnectPolicy {
        initial_delay: Duration::from_millis(1),
        read_timeout,
        ..ReconnectPolicy::default()
    };
    SseClient::new(Arc::new(transport), EngineRequest::get("/event"))
        .with_policy(policy)
        .with_jitter(NoJitter)
}

#[tokio::test]
async fn the_sse_client_reconnects_over_it_with_the_last_event_id() {
    let (listener, transport) = server(EngineAuth::None).await;
    let engine = tokio::spawn(async move {
        let (mut socket, first) = accept(&listener).await;
        let events = format!("{SSE_HEAD}f\r\nid: 7\ndata: a\n\n\r\n0\r\n\r\n");
        socket.write_all(events.as_bytes()).await.unwrap();
        let (mut socket, second) = accept(&listener).await;
        socket.write_all(format!("{SSE_HEAD}9\r\ndata: b\n\n\r\n").as_bytes()).await.unwrap();
        (first, second, socket)
    });
    let mut client = sse_client(transport, Duration::from_secs(15));
    let mut seen = Vec::new();
    while seen.len() < 5 {
        seen.push(client.next().await.unwrap().unwrap());
    }
    assert!(matches!(seen[0], SseClientEvent::Connected { reconnects: 0 }), "{seen:?}");
    assert!(
        matches!(&seen[1], SseClientEvent::Event(e) if e.data == "a" && e.last_event_id == "7")
    );
    assert!(
        matches!(&seen[2], SseClientEvent::Disconnected { reason: DropReason::Eof, .. }),
        "{seen:?}"
    );
    assert!(matches!(seen[3], SseClientEvent::Connected { reconnects: 1 }), "{seen:?}");
    assert!(matches!(&seen[4], SseClientEvent::Event(e) if e.data == "b"), "{seen:?}");
    let (first, second, _socket) = engine.await.unwrap();
    assert!(!first.contains("last-event-id"), "{first}");
    assert!(second.contains("last-event-id: 7\r\n"), "{second}");
}

#[tokio::test(start_paused = true)]
async fn a_silent_stream_is_dropped_after_the_read_timeout() {
    let (listener, transport) = server(EngineAuth::None).await;
    let (_hold, held) = oneshot::channel::<()>();
    let engine = tokio::spawn(async move {
        let (mut socket, _) = accept(&listener).await;
        socket.write_all(format!("{SSE_HEAD}9\r\ndata: a\n\n\r\n").as_bytes()).await.unwrap();
        let _ = held.await;
        socket
    });
    let mut client = sse_client(transport, Duration::from_secs(15));
    let mut seen = Vec::new();
    while seen.len() < 3 {
        seen.push(client.next().await.unwrap().unwrap());
    }
    assert!(matches!(&seen[1], SseClientEvent::Event(e) if e.data == "a"), "{seen:?}");
    assert!(
        matches!(
            &seen[2],
            SseClientEvent::Disconnected { reason: DropReason::ReadTimeout(after), .. }
                if *after == Duration::from_secs(15)
        ),
        "{seen:?}"
    );
    engine.abort();
}

/// Feeds `wire` to a chunked decoder in pieces cut at `cuts`; the data it gave, and whether
/// it reached the body's end.
fn decode_in_pieces(wire: &[u8], cuts: &[usize]) -> Result<(Vec<u8>, bool), String> {
    let mut framing = Framing::Chunked(Chunked::Size);
    let (mut buf, mut out) = (BytesMut::new(), BytesMut::new());
    let mut from = 0;
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (wire.len() + 1)).collect();
    bounds.sort_unstable();
    bounds.push(wire.len());
    for to in bounds {
        buf.extend_from_slice(&wire[from..to]);
        from = to;
        framing.decode(&mut buf, &mut out)?;
    }
    Ok((out.to_vec(), framing == Framing::Ended && buf.is_empty()))
}

proptest! {
    /// However the engine's chunks are cut into reads, the decoder gives their data in order
    /// and ends at the last chunk (with or without extensions, trailers and bare `\n` ends).
    #[test]
    fn chunked_bodies_decode_whatever_the_reads(
        chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..300), 0..6),
        upper in any::<bool>(),
        extension in any::<bool>(),
        trailer in any::<bool>(),
        bare_lf in any::<bool>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
    ) {
        let end: &[u8] = if bare_lf { b"\n" } else { b"\r\n" };
        let mut wire = Vec::new();
        for chunk in &chunks {
            let size = if upper { format!("{:X}", chunk.len()) } else { format!("{:x}", chunk.len()) };
            wire.extend_from_slice(size.as_bytes());
            if extension {
                wire.extend_from_slice(b";name=\"v\"");
            }
            wire.extend_from_slice(end);
            wire.extend_from_slice(chunk);
            wire.extend_from_slice(end);
        }
        wire.extend_from_slice(b"0");
        wire.extend_from_slice(end);
        if trailer {
            wire.extend_from_slice(b"x-trailer: 1");
            wire.extend_from_slice(end);
        }
        wire.extend_from_slice(end);
        let (data, ended) = decode_in_pieces(&wire, &cuts).unwrap();
        prop_assert_eq!(data, chunks.concat());
        prop_assert!(ended);
    }
}

#[test]
fn broken_chunk_framing_is_an_error_naming_it() {
    for (wire, says) in [
        (&b"zz\r\n"[..], "bad chunk-size line"),
        (b"\r\n", "bad chunk-size line"),
        (b"3 x\r\nabc\r\n", "bad chunk-size line"),
        (b"11111111111111111\r\n", "bad chunk-size line"),
        (b"3\r\nabcd\r\n", "longer than its size line"),
        (&[b'1'; 5000][..], "longer than 4096 bytes"),
    ] {
        let error = decode_in_pieces(wire, &[]).unwrap_err();
        assert!(error.contains(says), "{:?}: {error}", String::from_utf8_lossy(wire));
    }
}

#[test]
fn a_length_body_ends_at_its_length_and_a_close_body_takes_everything() {
    let mut framing = Framing::Length(5);
    let (mut buf, mut out) = (BytesMut::from(&b"abc"[..]), BytesMut::new());
    framing.decode(&mut buf, &mut out).unwrap();
    assert_eq!((&out[..], framing), (&b"abc"[..], Framing::Length(2)));
    buf.extend_from_slice(b"defgh");
    framing.decode(&mut buf, &mut out).unwrap();
    assert_eq!((&out[..], &buf[..], framing), (&b"abcde"[..], &b"fgh"[..], Framing::Ended));
    let mut framing = Framing::Close;
    framing.decode(&mut buf, &mut out).unwrap();
    assert_eq!((&out[..], buf.is_empty(), framing), (&b"abcdefgh"[..], true, Framing::Close));
}

#[tokio::test]
async fn an_interim_answer_is_skipped_for_the_real_one() {
    let (listener, transport) = server(EngineAuth::None).await;
    let engine = tokio::spawn(async move {
        let (mut socket, _) = accept(&listener).await;
        let answer =
            format!("HTTP/1.1 100 Continue\r\n\r\n{SSE_HEAD}9\r\ndata: a\n\n\r\n0\r\n\r\n");
        socket.write_all(answer.as_bytes()).await.unwrap();
        socket
    });
    let mut stream = transport.open_stream(EngineRequest::get("/event")).await.unwrap();
    read_exactly(&mut stream, "data: a\n\n").await;
    assert!(stream.next().await.is_none());
    drop(engine.await.unwrap());
}
