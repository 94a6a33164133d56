//! One soak window: a webview's connection to a bridge (the stdio of a sidecar it spawned, a
//! client of a `--listen` sidecar's socket, or a gateway WebSocket), run as a task that reads
//! everything the bridge sends, drops what it was sent twice by `seq` as a page does, and
//! records each session's items for the verdict. The driver calls methods through it; the
//! fault schedule detaches it, pauses its reading, or (stdio) restarts its bridge. When its
//! connection drops under it (the bridge was killed) it reconnects, reattaches its tab with
//! `lastSeen` and selects its sessions again.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::Context as _;
use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

use super::procs;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How a window reaches its bridge.
#[derive(Debug, Clone)]
pub(crate) enum Dial {
    /// Spawns a stdio sidecar with these arguments and speaks over its stdin/stdout.
    Stdio { exe: PathBuf, args: Vec<String>, log: PathBuf },
    /// A client of a `--listen` sidecar's socket.
    Socket(PathBuf),
    /// A gateway WebSocket URL (token included).
    Ws(String),
}

/// One engine event as a window got it.
#[derive(Debug, Clone)]
pub(crate) struct Got {
    pub(crate) id: String,
    pub(crate) kind: String,
    /// A text delta's text (the merged text of a coalesced one).
    pub(crate) text: String,
    /// Which life of the window's bridge sent it (a bridge restart starts the next).
    pub(crate) life: u32,
    /// A `permission_request`'s request id.
    pub(crate) request: Option<String>,
}

/// What a window recorded of one session.
#[derive(Debug, Default, Clone)]
pub(crate) struct SessionLog {
    /// Items in the order received (engine events and the bridge's own).
    pub(crate) items: Vec<Got>,
    /// Positions in `items` where a declared resync replaced the view.
    pub(crate) resyncs: Vec<usize>,
    /// For each declared resync, in order: its position in `items` and the id of the last
    /// engine event its view covers (`view.debug.lastEventId`), when it names one.
    pub(crate) covered: Vec<(usize, String)>,
}

/// Everything a window recorded.
#[derive(Debug, Default)]
pub(crate) struct Record {
    pub(crate) sessions: HashMap<String, SessionLog>,
    /// The highest `seq` read per tab (what `lastSeen` names).
    pub(crate) last_seq: HashMap<String, u64>,
    /// Messages dropped because their `seq` was already seen (a replay overlapping).
    pub(crate) replayed: u64,
    /// Messages whose `seq` skipped numbers (a message lost between bridge and window).
    pub(crate) seq_gaps: u64,
    /// Reconnections after the bridge went away.
    pub(crate) reconnects: u64,
}

enum Cmd {
    Call { method: String, params: Value, reply: oneshot::Sender<Value> },
    Detach(Duration),
    Pause(Duration),
    RestartBridge,
    Close,
}

enum Step {
    Cmd(Option<Cmd>),
    Line(Option<String>),
}

/// A handle on a running window.
#[derive(Clone)]
pub(crate) struct Window {
    pub(crate) name: String,
    cmds: mpsc::UnboundedSender<Cmd>,
    pub(crate) record: Arc<Mutex<Record>>,
    pub(crate) changed: Arc<Notify>,
    /// The pid of a stdio window's sidecar (0 otherwise).
    pub(crate) bridge_pid: Arc<AtomicU32>,
    /// The bridge's current life, bumped when the window finds it restarted.
    pub(crate) life: Arc<AtomicU32>,
    /// Where every line read and every connection change is written (`--trace`).
    trace: Option<Arc<Mutex<std::fs::File>>>,
}

impl std::fmt::Debug for Window {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Window").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Window {
    /// Connects (retrying while the bridge comes up), sends `bb.init` and starts the task.
    pub(crate) async fn open(
        name: &str,
        dial: Dial,
        trace: Option<&std::path::Path>,
    ) -> anyhow::Result<Self> {
        let trace = match trace {
            Some(dir) => Some(Arc::new(Mutex::new(std::fs::File::create(
                dir.join(format!("window-{name}.jsonl")),
            )?))),
            None => None,
        };
        let (cmds, rx) = mpsc::unbounded_channel();
        let window = Self {
            name: name.to_owned(),
            cmds,
            record: Arc::default(),
            changed: Arc::default(),
            bridge_pid: Arc::default(),
            life: Arc::default(),
            trace,
        };
        let mut task = Task {
            window: window.clone(),
            dial,
            conn: None,
            pending: HashMap::new(),
            next_id: 0,
            selected: Vec::new(),
        };
        task.connect(false).await.with_context(|| format!("window {name}"))?;
        tokio::spawn(task.run(rx));
        Ok(window)
    }

    /// Calls a method; a window that lost its connection answers `{"ok": false}`.
    pub(crate) async fn call(&self, method: &str, params: Value) -> Value {
        let (reply, answer) = oneshot::channel();
        let cmd = Cmd::Call { method: method.to_owned(), params, reply };
        if self.cmds.send(cmd).is_err() {
            return json!({"ok": false, "error": {"code": "soak_window_gone"}});
        }
        match tokio::time::timeout(super::CALL_WAIT, answer).await {
            Ok(Ok(v)) => v,
            _ => json!({"ok": false, "error": {"code": "soak_no_answer", "method": method}}),
        }
    }

    pub(crate) fn detach(&self, away: Duration) {
        let _ = self.cmds.send(Cmd::Detach(away));
    }

    pub(crate) fn pause(&self, away: Duration) {
        let _ = self.cmds.send(Cmd::Pause(away));
    }

    /// Ends the window (a stdio window's sidecar with it).
    pub(crate) fn close(&self) {
        let _ = self.cmds.send(Cmd::Close);
    }

    pub(crate) fn restart_bridge(&self) {
        let _ = self.cmds.send(Cmd::RestartBridge);
    }

    fn trace(&self, line: &str) {
        if let Some(file) = &self.trace {
            use std::io::Write as _;
            let _ = writeln!(lock(file), "{line}");
        }
    }

    /// A copy of a session's log.
    pub(crate) fn log(&self, session: &str) -> SessionLog {
        lock(&self.record).sessions.get(session).cloned().unwrap_or_default()
    }
}

enum Conn {
    Lines {
        write: Box<dyn tokio::io::AsyncWrite + Unpin + Send>,
        read: Box<tokio::io::Lines<BufReader<Box<dyn tokio::io::AsyncRead + Unpin + Send>>>>,
        child: Option<Box<tokio::process::Child>>,
    },
    Ws(
        Box<
            tokio_tungstenite::WebSocketStream<
                tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
            >,
        >,
    ),
}

impl Conn {
    async fn send(&mut self, text: String) -> bool {
        match self {
            Conn::Lines { write, .. } => {
                let mut line = text.into_bytes();
                line.push(b'\n');
                write.write_all(&line).await.is_ok() && write.flush().await.is_ok()
            }
            Conn::Ws(ws) => ws.send(Message::Text(text.into())).await.is_ok(),
        }
    }

    /// The next message; `None` when the connection is gone.
    async fn recv(&mut self) -> Option<String> {
        match self {
            Conn::Lines { read, .. } => read.next_line().await.ok().flatten(),
            Conn::Ws(ws) => loop {
                match ws.next().await? {
                    Ok(Message::Text(text)) => return Some(text.to_string()),
                    Ok(Message::Close(_)) | Err(_) => return None,
                    Ok(_) => {}
                }
            },
        }
    }

    fn is_ws(&self) -> bool {
        matches!(self, Conn::Ws(_))
    }
}

/// A message from the bridge, either envelope.
enum Incoming {
    Response(String, Value),
    Event(String, Value),
    Other,
}

fn decode(text: &str) -> Incoming {
    let Ok(v) = serde_json::from_str::<Value>(text) else { return Incoming::Other };
    let id = || v["id"].as_str().unwrap_or_default().to_owned();
    match (v["kind"].as_str(), v["type"].as_str()) {
        (Some("res"), _) | (_, Some("response")) => Incoming::Response(id(), v.clone()),
        (Some("evt"), _) => Incoming::Event(
            v["topic"].as_str().unwrap_or_default().to_owned(),
            v["payload"].clone(),
        ),
        (_, Some("event")) => Incoming::Event(
            v["event"].as_str().unwrap_or_default().to_owned(),
            v["payload"].clone(),
        ),
        _ => Incoming::Other,
    }
}

struct Task {
    window: Window,
    dial: Dial,
    conn: Option<Conn>,
    /// Calls in flight: where to answer, and a create's tab.
    pending: HashMap<String, (oneshot::Sender<Value>, Option<String>)>,
    next_id: u64,
    /// Sessions this window's tabs show, with the tab (selected again after a bridge
    /// restart).
    selected: Vec<(String, String)>,
}

impl Task {
    async fn run(mut self, mut cmds: mpsc::UnboundedReceiver<Cmd>) {
        loop {
            let Some(mut conn) = self.conn.take() else {
                // Lost and not back: answer what waits, keep trying.
                self.fail_pending();
                tokio::time::sleep(Duration::from_millis(200)).await;
                let _ = self.connect(true).await;
                continue;
            };
            let step = tokio::select! {
                cmd = cmds.recv() => Step::Cmd(cmd),
                line = conn.recv() => Step::Line(line),
            };
            match step {
                Step::Cmd(None | Some(Cmd::Close)) => break,
                Step::Cmd(Some(Cmd::Call { method, params, reply })) => {
                    if method == "bb.selectSession"
                        && let (Some(session), Some(tab)) =
                            (params["sessionId"].as_str(), params["tabId"].as_str())
                    {
                        self.remember(session, tab);
                    }
                    let creating = (method == "bb.createSession")
                        .then(|| params["tabId"].as_str().map(str::to_owned))
                        .flatten();
                    let id = self.request_id();
                    if conn.send(envelope(conn.is_ws(), &id, &method, &params)).await {
                        self.pending.insert(id, (reply, creating));
                    } else {
                        let _ =
                            reply.send(json!({"ok": false, "error": {"code": "soak_send_failed"}}));
                    }
                    self.conn = Some(conn);
                }
                Step::Cmd(Some(Cmd::Detach(away))) => {
                    drop(conn);
                    self.fail_pending();
                    tokio::time::sleep(away).await;
                    let _ = self.connect(false).await;
                }
                Step::Cmd(Some(Cmd::Pause(away))) => {
                    tokio::time::sleep(away).await;
                    self.conn = Some(conn);
                }
                Step::Cmd(Some(Cmd::RestartBridge)) => {
                    if let Conn::Lines { child: Some(child), .. } = &mut conn {
                        let _ = child.start_kill();
                        let _ = child.wait().await;
                    }
                    // What the sidecar wrote before it died is still in the pipe: a webview
                    // reads it to the end, as this one does.
                    while let Some(text) = conn.recv().await {
                        self.handle(&text);
                    }
                    drop(conn);
                    self.fail_pending();
                    let _ = self.connect(true).await;
                }
                Step::Line(Some(text)) => {
                    self.handle(&text);
                    self.conn = Some(conn);
                }
                Step::Line(None) => {
                    // The bridge went away under the window: it was killed.
                    drop(conn);
                    self.fail_pending();
                    let _ = self.connect(true).await;
                }
            }
        }
    }

    fn request_id(&mut self) -> String {
        self.next_id += 1;
        format!("{}-{}", self.window.name, self.next_id)
    }

    fn fail_pending(&mut self) {
        for (_, (reply, _)) in self.pending.drain() {
            let _ = reply.send(json!({"ok": false, "error": {"code": "soak_disconnected"}}));
        }
    }

    /// Dials, `bb.init`s with `lastSeen` (once anything was seen) and, after a bridge
    /// restart, selects the tab's sessions again. Retries the dial for a while.
    async fn connect(&mut self, restarted: bool) -> anyhow::Result<()> {
        self.window.trace(&format!("# connect restarted={restarted}"));
        if restarted {
            self.window.life.fetch_add(1, Ordering::SeqCst);
            lock(&self.window.record).reconnects += 1;
        }
        let mut conn = None;
        let mut last_error = None;
        for _ in 0..300 {
            match dial(&self.dial).await {
                Ok(c) => {
                    conn = Some(c);
                    break;
                }
                Err(e) => last_error = Some(e),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let Some(mut conn) = conn else {
            return Err(last_error.unwrap_or_else(|| anyhow::anyhow!("no connection")));
        };
        if let Conn::Lines { child: Some(child), .. } = &conn {
            self.window.bridge_pid.store(child.id().unwrap_or(0), Ordering::SeqCst);
        }
        let last_seen = lock(&self.window.record).last_seq.clone();
        let mut params = json!({"workspaceTrusted": true});
        if !last_seen.is_empty() {
            params["lastSeen"] = json!(last_seen);
        }
        let init = self.call_inline(&mut conn, "bb.init", params).await;
        anyhow::ensure!(init["ok"] == true, "bb.init: {init}");
        if restarted {
            for (session, tab) in self.selected.clone() {
                let params = json!({"sessionId": session, "tabId": tab});
                self.call_inline(&mut conn, "bb.selectSession", params).await;
            }
        }
        self.conn = Some(conn);
        Ok(())
    }

    /// A call made by the task itself, reading (and recording) what comes before its answer.
    async fn call_inline(&mut self, conn: &mut Conn, method: &str, params: Value) -> Value {
        let id = self.request_id();
        if !conn.send(envelope(conn.is_ws(), &id, method, &params)).await {
            return json!({"ok": false});
        }
        let wait = async {
            while let Some(text) = conn.recv().await {
                match decode(&text) {
                    Incoming::Response(rid, v) if rid == id => return v,
                    _ => self.handle(&text),
                }
            }
            json!({"ok": false})
        };
        tokio::time::timeout(super::CALL_WAIT, wait).await.unwrap_or_else(|_| json!({"ok": false}))
    }

    fn handle(&mut self, text: &str) {
        self.window.trace(text);
        match decode(text) {
            Incoming::Response(id, v) => {
                if let Some((reply, creating)) = self.pending.remove(&id) {
                    if let (Some(tab), Some(session)) =
                        (creating, v["result"]["sessionId"].as_str())
                    {
                        self.remember(session, &tab);
                    }
                    let _ = reply.send(v);
                }
            }
            Incoming::Event(topic, payload) if topic == "bb/events" => self.events(&payload),
            _ => {}
        }
        self.window.changed.notify_waiters();
    }

    fn remember(&mut self, session: &str, tab: &str) {
        if !self.selected.iter().any(|(s, _)| s == session) {
            self.selected.push((session.to_owned(), tab.to_owned()));
        }
    }

    fn events(&mut self, payload: &Value) {
        let life = self.window.life.load(Ordering::SeqCst);
        let mut record = lock(&self.window.record);
        if let (Some(seq), Some(tab)) = (payload["seq"].as_u64(), payload["tabId"].as_str()) {
            let last = record.last_seq.get(tab).copied().unwrap_or(0);
            if seq <= last {
                record.replayed += 1;
                return;
            }
            if last > 0 && seq != last + 1 {
                record.seq_gaps += 1;
            }
            record.last_seq.insert(tab.to_owned(), seq);
        }
        let Some(session) = payload["sessionId"].as_str() else { return };
        let log = record.sessions.entry(session.to_owned()).or_default();
        if payload["resync"] == true {
            let at = log.items.len();
            log.resyncs.push(at);
            if let Some(id) = payload["view"]["debug"]["lastEventId"].as_str() {
                log.covered.push((at, id.to_owned()));
            }
        }
        for item in payload["events"].as_array().into_iter().flatten() {
            let kind = item["type"].as_str().unwrap_or_default().to_owned();
            let text = item["payload"]["delta"]
                .as_str()
                .or_else(|| {
                    (kind == "assistant_delta").then(|| item["payload"]["text"].as_str()).flatten()
                })
                .unwrap_or_default()
                .to_owned();
            let id = item["id"].as_str().unwrap_or_default().to_owned();
            let p = &item["payload"];
            let request = (kind == "permission_request")
                .then(|| p["request_id"].as_str().or_else(|| p["id"].as_str()))
                .flatten()
                .map(str::to_owned);
            log.items.push(Got { id, kind, text, life, request });
        }
    }
}

fn envelope(ws: bool, id: &str, method: &str, params: &Value) -> String {
    let v = if ws {
        json!({"type": "request", "id": id, "method": method, "params": params})
    } else {
        json!({"v": 1, "kind": "req", "id": id, "method": method, "params": params})
    };
    v.to_string()
}

async fn dial(dial: &Dial) -> anyhow::Result<Conn> {
    Ok(match dial {
        Dial::Stdio { exe, args, log } => {
            let mut child = procs::bridge_command(exe, args, log)?
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .with_context(|| format!("spawning {}", exe.display()))?;
            let write = Box::new(child.stdin.take().context("stdin")?);
            let read: Box<dyn tokio::io::AsyncRead + Unpin + Send> =
                Box::new(child.stdout.take().context("stdout")?);
            Conn::Lines {
                write,
                read: Box::new(BufReader::new(read).lines()),
                child: Some(Box::new(child)),
            }
        }
        Dial::Socket(path) => {
            let stream = tokio::net::UnixStream::connect(path).await?;
            let (read, write) = stream.into_split();
            let read: Box<dyn tokio::io::AsyncRead + Unpin + Send> = Box::new(read);
            Conn::Lines {
                write: Box::new(write),
                read: Box::new(BufReader::new(read).lines()),
                child: None,
            }
        }
        Dial::Ws(url) => {
            Conn::Ws(Box::new(tokio_tungstenite::connect_async(url.as_str()).await?.0))
        }
    })
}
