//! The engines the bench drives the sidecar with: a fake Kilo server (one `GET /event` stream
//! for every session) and a fake BreadBoard engine (one stream per session, framed as the
//! real engine frames it: HTTP chunked, each event in two chunks, `id:` then `data:`). Their
//! REST answers are canned; their streams are handed to the bench, which writes and times
//! every event itself.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Mutex, mpsc};

/// Which engine a streaming run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// Kilo: one stream, routed by `properties.sessionID`.
    Kilo,
    /// BreadBoard: a stream per session.
    Breadboard,
}

impl Shape {
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Kilo => "kilo",
            Self::Breadboard => "breadboard",
        }
    }
}

/// A fake engine on loopback whose event streams the bench gets.
pub(super) struct FakeEngine {
    pub(super) url: String,
    shape: Shape,
    streams: Arc<Mutex<mpsc::Receiver<(String, TcpStream)>>>,
}

impl FakeEngine {
    /// Serves `shape` with `sessions` sessions (`ses_0`, `ses_1`, …; BreadBoard lists them).
    pub(super) async fn start(shape: Shape, sessions: usize) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let (tx, rx) = mpsc::channel(sessions.max(1) + 4);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(shape, sessions, socket, tx.clone()));
            }
        });
        Ok(Self { url, shape, streams: Arc::new(Mutex::new(rx)) })
    }

    /// The next event stream the sidecar opens (its session for BreadBoard, `""` for Kilo),
    /// its head written.
    pub(super) async fn next_stream(&self) -> Option<(String, TcpStream)> {
        let mut rx = self.streams.lock().await;
        tokio::time::timeout(Duration::from_secs(30), rx.recv()).await.ok().flatten()
    }

    pub(super) fn shape(&self) -> Shape {
        self.shape
    }
}

/// The open streams of a run, and how an event is framed on them.
pub(super) struct Feed {
    shape: Shape,
    /// Kilo: one stream; BreadBoard: one per session, by index.
    streams: Vec<TcpStream>,
    /// BreadBoard `seq` per session.
    seqs: Vec<u64>,
}

impl Feed {
    /// Collects the streams of `sessions` sessions from `engine` (one for Kilo).
    pub(super) async fn collect(engine: &FakeEngine, sessions: usize) -> anyhow::Result<Self> {
        let wanted = if engine.shape == Shape::Kilo { 1 } else { sessions };
        let mut by_session: HashMap<usize, TcpStream> = HashMap::new();
        while by_session.len() < wanted {
            let Some((session, stream)) = engine.next_stream().await else {
                anyhow::bail!("the sidecar opened {} of {wanted} event streams", by_session.len());
            };
            let index = session.strip_prefix("ses_").and_then(|i| i.parse().ok()).unwrap_or(0);
            by_session.insert(index, stream);
        }
        let streams = (0..wanted).filter_map(|i| by_session.remove(&i)).collect::<Vec<_>>();
        anyhow::ensure!(streams.len() == wanted, "a session's stream is missing");
        Ok(Self { shape: engine.shape, streams, seqs: vec![0; sessions] })
    }

    /// Writes `turns` Kilo turns of `ses_0` (a user message and an assistant reply, each
    /// its `message.updated` and one text part: four events a turn), in writes of ~64 KiB;
    /// the last reply's text ends with `@end;`. Returns the bytes written.
    pub(super) async fn write_turns(&mut self, turns: usize) -> std::io::Result<usize> {
        let mut buf = String::with_capacity(80 * 1024);
        let mut written = 0;
        let filler = "lorem ipsum dolor sit amet ".repeat(8);
        for i in 0..turns {
            for role in ["user", "assistant"] {
                let msg = format!("msg_{role}_{i}");
                let text = if role == "user" {
                    format!("Question {i}: {filler}")
                } else {
                    format!("Answer {i}: {filler}{}", if i + 1 == turns { "@end;" } else { "" })
                };
                let info = json!({"id": format!("evt_{role}_{i}_1"), "type": "message.updated",
                    "properties": {"sessionID": "ses_0", "info": {"id": msg, "sessionID": "ses_0",
                    "role": role, "time": {"created": 1_795_306_889_718u64}}}});
                let part = json!({"id": format!("evt_{role}_{i}_2"), "type": "message.part.updated",
                    "properties": {"sessionID": "ses_0", "part": {"id": format!("prt_{role}_{i}"),
                    "messageID": msg, "sessionID": "ses_0", "type": "text", "text": text}}});
                buf.push_str(&format!("data: {info}\n\ndata: {part}\n\n"));
            }
            if buf.len() >= 64 * 1024 || i + 1 == turns {
                self.streams[0].write_all(buf.as_bytes()).await?;
                written += buf.len();
                buf.clear();
            }
        }
        Ok(written)
    }

    /// Writes event `n` of `session`: a text delta whose text is `@n;` (what the bench looks
    /// for in the sidecar's output).
    pub(super) async fn write(&mut self, n: usize, session: usize) -> std::io::Result<()> {
        match self.shape {
            Shape::Kilo => {
                let event = json!({"id": format!("evt_{n}"), "type": "message.part.delta",
                    "properties": {"sessionID": format!("ses_{session}"),
                    "messageID": format!("msg_{session}"), "partID": "prt_1", "field": "text",
                    "delta": format!("@{n};")}});
                self.streams[0].write_all(format!("data: {event}\n\n").as_bytes()).await
            }
            Shape::Breadboard => {
                let seq = &mut self.seqs[session];
                *seq += 1;
                let event = json!({"id": format!("evt-{n}"), "seq": *seq,
                    "type": "assistant.message.delta", "session_id": format!("ses_{session}"),
                    "turn": 1, "timestamp": 1_795_306_812_857u64,
                    "timestamp_ms": 1_795_306_812_857u64, "protocol_version": "1.0",
                    "payload": {"item_id": format!("msg_{session}"), "delta": format!("@{n};"),
                    "seq": *seq}, "classification": "bridge_stream", "family": "message.assistant",
                    "actor": {"kind": "engine"}, "visibility": "transcript"});
                let stream = &mut self.streams[session];
                // As the engine writes it: two chunks, two writes.
                stream.write_all(chunk(&format!("id: {seq}\n")).as_bytes()).await?;
                stream.write_all(chunk(&format!("data: {event}\n\n")).as_bytes()).await
            }
        }
    }
}

fn chunk(body: &str) -> String {
    format!("{:x}\r\n{body}\r\n", body.len())
}

async fn serve(
    shape: Shape,
    sessions: usize,
    mut socket: TcpStream,
    streams: mpsc::Sender<(String, TcpStream)>,
) {
    let _ = socket.set_nodelay(true);
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match socket.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let target = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let path = target.split('?').next().unwrap_or("/").to_owned();
    let stream_of = match shape {
        Shape::Kilo => (path == "/event").then(String::new),
        Shape::Breadboard => path
            .strip_prefix("/v1/sessions/")
            .and_then(|rest| rest.strip_suffix("/events"))
            .map(str::to_owned),
    };
    if let Some(session) = stream_of {
        let start = match shape {
            Shape::Kilo => {
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\ndata: {\"type\":\"server.connected\",\"properties\":{}}\n\n"
            }
            Shape::Breadboard => {
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n"
            }
        };
        if socket.write_all(start.as_bytes()).await.is_ok() {
            let _ = streams.send((session, socket)).await;
        }
        return;
    }
    let body = match shape {
        Shape::Kilo => kilo_answer(&path),
        Shape::Breadboard => breadboard_answer(&path, sessions),
    }
    .to_string();
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = socket.write_all(response.as_bytes()).await;
    let _ = socket.shutdown().await;
}

fn kilo_answer(path: &str) -> Value {
    match path {
        "/global/health" => json!({"healthy": true, "version": "7.7.9"}),
        // Lists, as the real server answers them (`GET /question` is `QuestionRequest[]`
        // in its OpenAPI document, `fixtures/openapi.json` of the engine peer).
        "/session" | "/permission" | "/question" => json!([]),
        p if p.ends_with("/message") => json!([]),
        "/session/status" | "/config" => json!({}),
        p if p.starts_with("/session/") => {
            let id = p.trim_start_matches("/session/");
            json!({"id": id, "title": "bench", "time": {"created": 1, "updated": 1}})
        }
        _ => json!({}),
    }
}

fn breadboard_summary(id: &str) -> Value {
    json!({"session_id": id, "status": "running", "created_at": "2026-01-01T00:00:00Z",
        "last_activity_at": "2026-01-01T00:00:00Z"})
}

fn breadboard_answer(path: &str, sessions: usize) -> Value {
    match path {
        "/health" => json!({"status": "ok", "protocol_version": "1.0",
            "engine_version": "bench", "started_at": "2026-01-01T00:00:00Z",
            "started_at_unix": 1_767_225_600.0, "pid": 1}),
        "/v1/sessions" => {
            Value::Array((0..sessions).map(|i| breadboard_summary(&format!("ses_{i}"))).collect())
        }
        p if p.starts_with("/v1/sessions/") => {
            breadboard_summary(p.trim_start_matches("/v1/sessions/"))
        }
        _ => json!({}),
    }
}
