//! Test harness: the gateway process with its URL line, a WebSocket client speaking the
//! envelope, and bounded waits.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub(crate) use bb_test_support::repo_root;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{Message, http};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// Bound on any single wait (a loaded 2-core machine).
pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// A running gateway; killed on drop.
pub(crate) struct Gateway {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub(crate) addr: String,
    pub(crate) token: String,
    /// The whole URL line.
    pub(crate) line: String,
    pub(crate) workspace: tempfile::TempDir,
}

impl Gateway {
    pub(crate) fn start(extra: &[&str]) -> Self {
        Self::start_with(extra, &[])
    }

    /// A gateway on a fresh workspace (`notes.txt` in it) with extra flags and environment.
    pub(crate) fn start_with(extra: &[&str], env: &[(String, String)]) -> Self {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(workspace.path().join("notes.txt"), "hello\n").unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_bb-gateway"))
            .arg("--workspace")
            .arg(workspace.path())
            .args(extra)
            .env("RUST_LOG", "debug")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(workspace.path().join("gateway.log")).unwrap())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let line = line.trim_end().to_owned();
        let url = line.strip_prefix("open ").unwrap_or_else(|| panic!("URL line: {line:?}"));
        let rest = url.strip_prefix("http://").unwrap();
        let (addr, query) = rest.split_once("/?token=").unwrap();
        Gateway { child, addr: addr.to_owned(), token: query.to_owned(), line, workspace }
    }

    /// The gateway's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM and waits (bounded) for the exit status.
    pub(crate) fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = i32::try_from(self.child.id()).unwrap();
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(std::time::Instant::now() < deadline, "the gateway did not exit after SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Everything the gateway logged so far.
    pub(crate) fn logs(&self) -> String {
        std::fs::read_to_string(self.workspace.path().join("gateway.log")).unwrap_or_default()
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}/?token={}", self.addr, self.token)
    }

    pub(crate) fn ws_url(&self, path: &str, token: &str) -> String {
        format!("ws://{}{path}?token={token}", self.addr)
    }

    /// Opens the RPC WebSocket (`/ws`) with the right token.
    pub(crate) async fn connect(&self) -> Client {
        let (ws, _) = self.try_connect("/ws", &self.token, None, None).await.expect("connect");
        Client { ws }
    }

    /// Opens a WebSocket with the given token and optional Origin / Host headers.
    pub(crate) async fn try_connect(
        &self,
        path: &str,
        token: &str,
        origin: Option<&str>,
        host: Option<&str>,
    ) -> Result<
        (WebSocketStream<MaybeTlsStream<TcpStream>>, http::Response<Option<Vec<u8>>>),
        tokio_tungstenite::tungstenite::Error,
    > {
        let mut request = self.ws_url(path, token).into_client_request().unwrap();
        if let Some(origin) = origin {
            request.headers_mut().insert("origin", origin.parse().unwrap());
        }
        if let Some(host) = host {
            request.headers_mut().insert("host", host.parse().unwrap());
        }
        tokio_tungstenite::connect_async(request).await
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A WebSocket client speaking the gateway's envelope.
pub(crate) struct Client {
    pub(crate) ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

impl Client {
    pub(crate) async fn send_raw(&mut self, text: String) {
        self.ws.send(Message::Text(text.into())).await.unwrap();
    }

    pub(crate) async fn send(&mut self, id: &str, method: &str, params: Value) {
        let msg = json!({"type": "request", "id": id, "method": method, "params": params});
        self.send_raw(msg.to_string()).await;
    }

    /// The next message; panics on close or timeout.
    pub(crate) async fn next(&mut self) -> Value {
        self.next_within(WAIT).await
    }

    /// The next message within `within`; panics on close or timeout.
    pub(crate) async fn next_within(&mut self, within: Duration) -> Value {
        loop {
            let msg = tokio::time::timeout(within, self.ws.next())
                .await
                .unwrap_or_else(|_| panic!("no message within {within:?}"))
                .expect("the connection stays open")
                .expect("a valid frame");
            match msg {
                Message::Text(text) => return serde_json::from_str(&text).unwrap(),
                Message::Close(frame) => panic!("closed: {frame:?}"),
                _ => continue,
            }
        }
    }

    /// Reads until the response to `id`, collecting events on the way.
    pub(crate) async fn response(&mut self, id: &str, events: &mut Vec<Value>) -> Value {
        loop {
            let msg = self.next().await;
            if msg["type"] == "response" && msg["id"] == id {
                return msg;
            }
            assert_eq!(msg["type"], "event", "only events besides responses: {msg}");
            events.push(msg);
        }
    }

    /// Sends a request and returns its response.
    pub(crate) async fn call(
        &mut self,
        id: &str,
        method: &str,
        params: Value,
        events: &mut Vec<Value>,
    ) -> Value {
        self.send(id, method, params).await;
        self.response(id, events).await
    }

    /// Reads events until one satisfies `pred`.
    pub(crate) async fn event_until(
        &mut self,
        events: &mut Vec<Value>,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        self.event_until_within(WAIT, events, pred).await
    }

    /// Reads events until one satisfies `pred`, each within `within` of the one before (an
    /// engine that starts or boots a directory may say nothing for longer than [`WAIT`]).
    /// The bridge's heartbeats do not count as saying something: a wait for what never comes
    /// still fails after `within`.
    #[allow(clippy::disallowed_methods)] // a real gateway in real time: this bounds the wait
    pub(crate) async fn event_until_within(
        &mut self,
        within: Duration,
        events: &mut Vec<Value>,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let mut deadline = tokio::time::Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            assert!(!left.is_zero(), "nothing but heartbeats for {within:?}");
            let msg = self.next_within(left).await;
            events.push(msg.clone());
            if pred(&msg) {
                return msg;
            }
            if !msg["payload"]["heartbeat"].is_u64() {
                deadline = tokio::time::Instant::now() + within;
            }
        }
    }
}

/// A raw HTTP GET with the given Host header; returns (status line + headers, body).
pub(crate) fn http_get(
    addr: &str,
    path: &str,
    host: &str,
    origin: Option<&str>,
) -> (String, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    let origin = origin.map(|o| format!("Origin: {o}\r\n")).unwrap_or_default();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {host}\r\n{origin}Connection: close\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (head.to_owned(), body.to_owned())
}
