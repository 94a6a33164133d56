//! Test harness: the real engine (or a clear failure), the mock LLM, the sidecar process with
//! a line reader, bounded waits, and process inspection through `/proc`.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

/// Bound on engine start-up plus one turn on a loaded 2-core machine.
pub(crate) const LONG: Duration = Duration::from_secs(120);

pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The real Kilo binary: `$BB_KILO_BIN`, else what `scripts/engine.sh` installs. Fails the
/// test with the reason when it cannot be had, unless `BB_SKIP_REAL_ENGINE=1`, in which case
/// `None` (the caller returns, saying so).
pub(crate) fn real_engine() -> Option<PathBuf> {
    let skip = std::env::var("BB_SKIP_REAL_ENGINE").is_ok_and(|v| v == "1");
    let found = match std::env::var_os("BB_KILO_BIN") {
        Some(bin) => {
            let bin = PathBuf::from(bin);
            if bin.is_file() {
                Ok(bin)
            } else {
                Err(format!("BB_KILO_BIN={} is not a file", bin.display()))
            }
        }
        None => {
            let script = repo_root().join("scripts/engine.sh");
            match Command::new("bash").arg(&script).stderr(Stdio::inherit()).output() {
                Ok(out) if out.status.success() => {
                    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_owned()))
                }
                Ok(out) => Err(format!("{} failed with {}", script.display(), out.status)),
                Err(err) => Err(format!("cannot run {}: {err}", script.display())),
            }
        }
    };
    match found {
        Ok(bin) => Some(bin),
        Err(why) if skip => {
            eprintln!("BB_SKIP_REAL_ENGINE=1: skipping a real-engine test ({why})");
            None
        }
        Err(why) => panic!(
            "the real Kilo engine is needed for this test and cannot be had: {why}. \
             Run `bash scripts/engine.sh` (npm needed) or set BB_KILO_BIN; \
             BB_SKIP_REAL_ENGINE=1 opts out explicitly."
        ),
    }
}

/// Polls `cond` until it holds or `within` passes.
pub(crate) fn eventually(within: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out after {within:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A scratch world: workspace, isolated HOME/XDG dirs.
pub(crate) struct World {
    pub(crate) dir: TempDir,
}

impl World {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["project", "home", "xdg/config/kilo", "xdg/data", "xdg/state", "xdg/cache"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        std::fs::write(dir.path().join("project/hello.txt"), "hello world\n").unwrap();
        Self { dir }
    }

    pub(crate) fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    /// The environment a user's engine configuration lives in (passed to the sidecar, which
    /// must forward it to the engine through its allow-list), plus a decoy that must not pass.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        let p = |s: &str| self.path(s).display().to_string();
        let mut env = vec![
            ("PATH".to_owned(), std::env::var("PATH").unwrap_or_default()),
            ("HOME".to_owned(), p("home")),
            ("XDG_CONFIG_HOME".to_owned(), p("xdg/config")),
            ("XDG_DATA_HOME".to_owned(), p("xdg/data")),
            ("XDG_STATE_HOME".to_owned(), p("xdg/state")),
            ("XDG_CACHE_HOME".to_owned(), p("xdg/cache")),
            ("KILO_TELEMETRY_LEVEL".to_owned(), "off".to_owned()),
            ("RUST_LOG".to_owned(), "info".to_owned()),
            ("BB_TEST_DECOY_SECRET".to_owned(), "decoy-must-not-reach-the-engine".to_owned()),
        ];
        for flag in [
            "AUTOUPDATE",
            "MODELS_FETCH",
            "DEFAULT_PLUGINS",
            "SHARE",
            "LSP_DOWNLOAD",
            "CLAUDE_CODE",
            "SESSION_INGEST",
        ] {
            env.push((format!("KILO_DISABLE_{flag}"), "1".to_owned()));
        }
        env
    }

    /// Writes the engine config exactly as `engine-peer/run-engine.sh` does; `bash` is the
    /// engine's permission for its shell tool (`"ask"` or `"allow"`).
    #[allow(dead_code)] // for tests that set only the shell tool's permission
    pub(crate) fn write_kilo_config(&self, mock_port: u16, bash: &str) {
        self.write_kilo_config_with(mock_port, bash, "ask");
    }

    /// As [`World::write_kilo_config`], with the permission for the edit tool too.
    pub(crate) fn write_kilo_config_with(&self, mock_port: u16, bash: &str, edit: &str) {
        let cfg = json!({
            "$schema": "https://app.kilo.ai/config.json",
            "model": "mock/mock-model",
            "small_model": "mock/mock-model",
            "autoupdate": false,
            "share": "disabled",
            "provider": {"mock": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Mock LLM",
                "options": {"baseURL": format!("http://127.0.0.1:{mock_port}/v1"), "apiKey": "mock-key"},
                "models": {"mock-model": {"name": "Mock Model", "tool_call": true,
                                          "limit": {"context": 128000, "output": 4096}}}}},
            "permission": {"bash": bash, "edit": edit},
            "enabled_providers": ["mock"],
            "snapshot": false
        });
        std::fs::write(
            self.path("xdg/config/kilo/kilo.json"),
            serde_json::to_vec_pretty(&cfg).unwrap(),
        )
        .unwrap();
    }
}

/// The scripted mock LLM (`tests/it/mock_llm.py`), killed on drop.
pub(crate) struct MockLlm {
    child: Child,
    pub(crate) port: u16,
}

impl MockLlm {
    pub(crate) fn start(world: &World) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/mock_llm.py");
        let port_file = world.path("mock.port");
        let child = Command::new("python3")
            .arg(script)
            .args(["--host", "127.0.0.1", "--port", "0", "--delay", "0.02", "--slow-seconds", "60"])
            .arg("--port-file")
            .arg(&port_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 is needed for the mock LLM");
        let mut port = 0;
        eventually(Duration::from_secs(20), "the mock LLM port file", || {
            port = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0);
            port != 0
        });
        Self { child, port }
    }
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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

/// Pids whose parent is `pid`.
pub(crate) fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(child) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Some((ppid, _)) = stat(child)
            && ppid == pid
        {
            out.push(child);
        }
    }
    out
}

/// Pids descending from `pid` (children, their children, …), in no particular order.
pub(crate) fn descendants_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for child in children_of(parent) {
            out.push(child);
            frontier.push(child);
        }
    }
    out
}

/// (ppid, state) from `/proc/PID/stat`.
fn stat(pid: u32) -> Option<(u32, char)> {
    let (ppid, state, _, _) = stat_ids(pid)?;
    Some((ppid, state))
}

/// (ppid, state, process group, session) from `/proc/PID/stat`.
pub(crate) fn stat_ids(pid: u32) -> Option<(u32, char, u32, u32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    Some((ppid, state, pgrp, session))
}

/// Gone, or a zombie nobody reaped yet (it no longer runs or holds ports).
pub(crate) fn is_dead(pid: u32) -> bool {
    stat(pid).is_none_or(|(_, state)| state == 'Z' || state == 'X')
}

/// One variable of a process's environment.
pub(crate) fn environ_var(pid: u32, name: &str) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    raw.split(|&b| b == 0).find_map(|kv| {
        let kv = String::from_utf8_lossy(kv);
        kv.strip_prefix(&format!("{name}=")).map(str::to_owned)
    })
}

pub(crate) fn environ_names(pid: u32) -> Vec<String> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    raw.split(|&b| b == 0)
        .filter_map(|kv| String::from_utf8_lossy(kv).split_once('=').map(|(k, _)| k.to_owned()))
        .collect()
}

pub(crate) fn cmdline(pid: u32) -> String {
    String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default())
        .replace('\0', " ")
}

/// Text streamed for a session: `message.part.delta` deltas concatenated.
pub(crate) fn streamed_text(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "message.part.delta" && e["payload"]["field"] == "text")
        .filter_map(|e| e["payload"]["delta"].as_str())
        .collect()
}
