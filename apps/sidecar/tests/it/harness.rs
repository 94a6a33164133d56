//! Test harness: the sidecar's world on the shared Kilo setup (`bb-test-support`), the sidecar
//! process with a line reader and bounded waits.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bb_kilo::testing::KiloWorld;
pub(crate) use bb_kilo::testing::{MockLlm, kilo_bin_or_skip};
pub(crate) use bb_test_support::procfs::{
    children_of, cmdline, descendants_of, environ_names, environ_var, is_dead, stat_ids,
};
pub(crate) use bb_test_support::{eventually, repo_root};
use serde_json::{Value, json};

/// Bound on engine start-up plus one turn on a loaded 2-core machine.
pub(crate) const LONG: Duration = Duration::from_secs(120);

/// A scratch world: the shared Kilo world with `project/hello.txt`, and the environment the
/// sidecar is started with.
pub(crate) struct World {
    kilo: KiloWorld,
}

impl World {
    pub(crate) fn new() -> Self {
        let kilo = KiloWorld::new();
        std::fs::write(kilo.path("project/hello.txt"), "hello world\n").unwrap();
        Self { kilo }
    }

    pub(crate) fn path(&self, sub: &str) -> PathBuf {
        self.kilo.path(sub)
    }

    /// The environment a user's engine configuration lives in (passed to the sidecar, which
    /// must forward it to the engine through its allow-list), plus a decoy that must not pass.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        let mut env = vec![("PATH".to_owned(), std::env::var("PATH").unwrap_or_default())];
        env.extend(self.kilo.env());
        env.push(("RUST_LOG".to_owned(), "info".to_owned()));
        env.push(("BB_TEST_DECOY_SECRET".to_owned(), "decoy-must-not-reach-the-engine".to_owned()));
        env
    }

    /// Starts the mock LLM and writes the engine config naming it; `bash` and `edit` are the
    /// engine's permissions for its shell and edit tools (`"ask"` or `"allow"`).
    pub(crate) fn start_mock_llm(&self, bash: &str, edit: &str) -> MockLlm {
        self.kilo.start_mock_llm(Duration::from_millis(20), bash, edit)
    }

    /// As [`World::start_mock_llm`], with the reply's chunks `delay` apart.
    pub(crate) fn start_mock_llm_with_delay(
        &self,
        bash: &str,
        edit: &str,
        delay: Duration,
    ) -> MockLlm {
        self.kilo.start_mock_llm(delay, bash, edit)
    }
}

/// One webview's line-level view of a bridge: requests written, every line read kept in
/// `seen`. Over the sidecar's stdio ([`Sidecar`]) or one client of its socket
/// ([`Peer::connect`]).
pub(crate) struct Peer {
    writer: Option<Box<dyn Write + Send>>,
    /// A socket client's stream, to shut it down.
    socket: Option<UnixStream>,
    lines: mpsc::Receiver<String>,
    pending: VecDeque<Value>,
    pub(crate) seen: Vec<String>,
    /// The latest `bb/state` payload read so far.
    latest_state: Option<Value>,
    pub(crate) stderr_path: PathBuf,
    next_id: u64,
}

/// A running `bb-sidecar` spoken to over stdio (its [`Peer`] is reached through `Deref`).
pub(crate) struct Sidecar {
    pub(crate) child: Child,
    peer: Peer,
}

impl std::ops::Deref for Sidecar {
    type Target = Peer;
    fn deref(&self) -> &Peer {
        &self.peer
    }
}

impl std::ops::DerefMut for Sidecar {
    fn deref_mut(&mut self) -> &mut Peer {
        &mut self.peer
    }
}

fn line_reader(read: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(read).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    lines
}

impl Sidecar {
    pub(crate) fn spawn(args: &[&str], env: &[(String, String)], stderr_path: PathBuf) -> Self {
        let stderr = std::fs::File::create(&stderr_path).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_bb-sidecar"))
            .args(args)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let lines = line_reader(child.stdout.take().unwrap());
        let writer = child.stdin.take().map(|w| Box::new(w) as Box<dyn Write + Send>);
        let peer = Peer::new(writer, None, lines, stderr_path);
        Self { child, peer }
    }

    pub(crate) fn wait_exit(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // Drain what is left so the password scan sees everything.
                while let Ok(line) = self.peer.lines.recv_timeout(Duration::from_secs(2)) {
                    self.peer.seen.push(line);
                }
                return status;
            }
            if Instant::now() >= deadline {
                self.fail(&format!("the sidecar did not exit within {within:?}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The engine process: the sidecar's child.
    pub(crate) fn engine_pid(&self) -> u32 {
        let me = self.child.id();
        let mut found = None;
        eventually(LONG, "the engine process", || {
            found = children_of(me).into_iter().next();
            found.is_some()
        });
        found.unwrap()
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Peer {
    fn new(
        writer: Option<Box<dyn Write + Send>>,
        socket: Option<UnixStream>,
        lines: mpsc::Receiver<String>,
        stderr_path: PathBuf,
    ) -> Self {
        Self {
            writer,
            socket,
            lines,
            pending: VecDeque::new(),
            seen: Vec::new(),
            latest_state: None,
            stderr_path,
            next_id: 0,
        }
    }

    /// A client of a `--listen` sidecar's socket (whose log is `stderr_path`).
    pub(crate) fn connect(path: &std::path::Path, stderr_path: PathBuf) -> Self {
        let stream = UnixStream::connect(path)
            .unwrap_or_else(|e| panic!("connecting to {}: {e}", path.display()));
        let lines = line_reader(stream.try_clone().unwrap());
        let writer = Box::new(stream.try_clone().unwrap());
        Self::new(Some(writer), Some(stream), lines, stderr_path)
    }

    /// Closes a socket client's connection both ways (the webview went away).
    pub(crate) fn disconnect(mut self) {
        self.writer = None;
        if let Some(socket) = self.socket.take() {
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
    }

    pub(crate) fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    fn fail(&self, what: &str) -> ! {
        let tail: Vec<String> =
            self.seen.iter().rev().take(15).rev().map(|l| l.chars().take(300).collect()).collect();
        panic!(
            "{what}\n--- last stdout lines:\n{}\n--- stderr:\n{}",
            tail.join("\n"),
            self.stderr()
        );
    }

    pub(crate) fn send_line(&mut self, line: &str) {
        let stdin = self.writer.as_mut().expect("input open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Writes raw bytes (no terminator added): for input that is not UTF-8.
    pub(crate) fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.writer.as_mut().expect("input open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    pub(crate) fn close_stdin(&mut self) {
        self.writer = None;
    }

    /// The next line as it is (not JSON), within `within`.
    pub(crate) fn raw_line(&mut self, within: Duration) -> String {
        match self.lines.recv_timeout(within) {
            Ok(line) => line,
            Err(_) => self.fail(&format!("no line within {within:?}")),
        }
    }

    /// Reads the next stdout line as JSON, within `within`.
    fn read(&mut self, within: Duration) -> Option<Value> {
        match self.lines.recv_timeout(within) {
            Ok(line) => {
                self.seen.push(line.clone());
                match serde_json::from_str::<Value>(&line) {
                    Ok(v) => {
                        if v["topic"] == "bb/state" {
                            self.latest_state = Some(v["payload"].clone());
                        }
                        Some(v)
                    }
                    Err(e) => self.fail(&format!("stdout line is not JSON ({e}): {line}")),
                }
            }
            Err(_) => None,
        }
    }

    /// Sends a request; returns the whole response envelope. Events read meanwhile are kept.
    pub(crate) fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = format!("t{}", self.next_id);
        let req = json!({"v": 1, "kind": "req", "id": id, "method": method, "params": params});
        self.send_line(&req.to_string());
        self.response(&id, LONG)
    }

    /// Waits for the response with this id.
    pub(crate) fn response(&mut self, id: &str, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(msg) = self.read(left) else {
                self.fail(&format!("no response to {id} within {within:?}"))
            };
            if msg["kind"] == "res" && msg["id"] == id {
                return msg;
            }
            self.pending.push_back(msg);
        }
    }

    /// Sends a request that must succeed; returns its result.
    pub(crate) fn ok(&mut self, method: &str, params: Value) -> Value {
        let res = self.call(method, params);
        if res["ok"] != true {
            self.fail(&format!("{method} failed: {res}"));
        }
        res["result"].clone()
    }

    /// The first event (kept or new) matching `pred`, within `within`; earlier events that do
    /// not match are consumed and passed to `also`.
    pub(crate) fn wait_event(
        &mut self,
        within: Duration,
        what: &str,
        mut pred: impl FnMut(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let msg = match self.pending.pop_front() {
                Some(m) => m,
                None => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    match self.read(left) {
                        Some(m) => m,
                        None => {
                            self.fail(&format!("timed out after {within:?} waiting for {what}"))
                        }
                    }
                }
            };
            if msg["kind"] == "evt" && pred(&msg) {
                return msg;
            }
        }
    }

    /// Collects `bb/events` of `session` until an event of type `until` arrives; returns all
    /// events of that session seen, in order.
    pub(crate) fn session_events_until(
        &mut self,
        session: &str,
        until: &str,
        within: Duration,
    ) -> Vec<Value> {
        let mut events = Vec::new();
        let mut done = false;
        let what = format!("a `{until}` event of {session}");
        while !done {
            let batch = self.wait_event(within, &what, |m| {
                m["topic"] == "bb/events" && m["payload"]["sessionId"] == session
            });
            for e in batch["payload"]["events"].as_array().unwrap() {
                done |= e["type"] == until;
                events.push(e.clone());
            }
        }
        events
    }

    /// Reads every line that arrives until none came for `quiet` (what a webview read before
    /// it went away); kept in `seen`.
    pub(crate) fn read_for(&mut self, quiet: Duration) {
        while let Some(msg) = self.read(quiet) {
            self.pending.push_back(msg);
        }
    }

    /// Waits until the current `bb/state` (the latest read, or a later one) satisfies `pred`.
    pub(crate) fn state(
        &mut self,
        within: Duration,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        if let Some(state) = self.latest_state.clone().filter(|s| pred(s)) {
            return state;
        }
        self.wait_event(within, what, |m| m["topic"] == "bb/state" && pred(&m["payload"]))["payload"].clone()
    }
}

/// The engine's descendant running `command` (its shell tool), once there is one; killed on
/// drop if still alive.
pub(crate) fn engine_tool(engine: u32, command: &str) -> KillOnDrop {
    let mut tool = None;
    eventually(LONG, &format!("the engine's shell tool to run `{command}`"), || {
        tool = descendants_of(engine).into_iter().find(|&p| cmdline(p).trim() == command);
        tool.is_some()
    });
    KillOnDrop(tool.unwrap())
}

/// The request id of the first `kind` event (`permission.asked`, `permission_request`, …) of
/// `session` that `peer` is sent (`request_id` for BreadBoard, `id` for Kilo).
pub(crate) fn asked(peer: &mut Peer, session: &str, kind: &str) -> String {
    let batch = peer.wait_event(LONG, kind, |m| {
        m["topic"] == "bb/events"
            && m["payload"]["sessionId"] == session
            && m["payload"]["events"].as_array().unwrap().iter().any(|e| e["type"] == kind)
    });
    let events = batch["payload"]["events"].as_array().unwrap();
    let p = &events.iter().find(|e| e["type"] == kind).unwrap()["payload"];
    p["request_id"].as_str().or_else(|| p["id"].as_str()).unwrap().to_owned()
}

/// `bb/events` payloads (of `session`, when given) until one holds an event of type `until`.
pub(crate) fn messages_until(peer: &mut Peer, session: Option<&str>, until: &str) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        let m = peer.wait_event(LONG, until, |m| {
            m["topic"] == "bb/events" && session.is_none_or(|s| m["payload"]["sessionId"] == s)
        });
        let done = m["payload"]["events"].as_array().unwrap().iter().any(|e| e["type"] == until);
        out.push(m["payload"].clone());
        if done {
            return out;
        }
    }
}

/// Kills a process left behind by a failed assertion, so a failing test leaks nothing.
pub(crate) struct KillOnDrop(pub(crate) u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if !is_dead(self.0) {
            // SAFETY: a plain signal to a process the test found among the engine's.
            unsafe { libc::kill(i32::try_from(self.0).unwrap_or(0), libc::SIGKILL) };
        }
    }
}

/// Text streamed for a session: `message.part.delta` deltas concatenated.
pub(crate) fn streamed_text(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "message.part.delta" && e["payload"]["field"] == "text")
        .filter_map(|e| e["payload"]["delta"].as_str())
        .collect()
}

/// The `permissionRequest` update of `request` in a `bb/events` message that satisfies
/// `pred`, if any.
fn card_in(message: &Value, request: &str, pred: &impl Fn(&Value) -> bool) -> Option<Value> {
    (message["topic"] == "bb/events")
        .then(|| message["payload"]["updates"].as_array())
        .flatten()?
        .iter()
        .find(|u| u["kind"] == "permissionRequest" && u["permissionId"] == request && pred(u))
        .cloned()
}

/// Waits for an update of `request`'s approval card (a webview that receives updates) that
/// satisfies `pred`, and returns it.
pub(crate) fn wait_card(peer: &mut Peer, request: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let what = format!("the card of {request}");
    let message = peer.wait_event(LONG, &what, |m| card_in(m, request, &pred).is_some());
    card_in(&message, request, &pred).unwrap()
}
