//! Test harness: the sidecar's world on the shared Kilo setup (`bb-test-support`), the sidecar
//! process with a line reader and bounded waits.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
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
}

/// A running `bb-sidecar` spoken to over stdio. Every stdout line is kept in `seen`.
pub(crate) struct Sidecar {
    pub(crate) child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    pending: VecDeque<Value>,
    pub(crate) seen: Vec<String>,
    /// The latest `bb/state` payload read so far.
    latest_state: Option<Value>,
    pub(crate) stderr_path: PathBuf,
    next_id: u64,
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
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            lines,
            pending: VecDeque::new(),
            seen: Vec::new(),
            latest_state: None,
            stderr_path,
            next_id: 0,
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
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Writes raw bytes (no terminator added): for input that is not UTF-8.
    pub(crate) fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    pub(crate) fn close_stdin(&mut self) {
        self.stdin = None;
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

    pub(crate) fn wait_exit(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // Drain what is left so the password scan sees everything.
                while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
                    self.seen.push(line);
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

/// Text streamed for a session: `message.part.delta` deltas concatenated.
pub(crate) fn streamed_text(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "message.part.delta" && e["payload"]["field"] == "text")
        .filter_map(|e| e["payload"]["delta"].as_str())
        .collect()
}
