//! Test harness: the real Kilo binary, the mock LLM, an isolated HOME/XDG world, a hub with
//! its event receiver, and process inspection through `/proc`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use bb_acp::{AcpEvent, AcpEventKind, AcpHub, LaunchPolicy};
use bb_supervisor::TokioSpawner;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::sync::mpsc;

/// Bound on an agent start plus one turn on a loaded 2-core machine.
pub(crate) const LONG: Duration = Duration::from_secs(120);

pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The real Kilo binary: `$BB_KILO_BIN`, else what `scripts/engine.sh` installs; the test
/// fails with the reason when neither works.
pub(crate) fn real_engine() -> PathBuf {
    if let Some(bin) = std::env::var_os("BB_KILO_BIN") {
        let bin = PathBuf::from(bin);
        assert!(bin.is_file(), "BB_KILO_BIN={} is not a file", bin.display());
        return bin;
    }
    let script = repo_root().join("scripts/engine.sh");
    let out = Command::new("bash").arg(&script).stderr(Stdio::inherit()).output().unwrap();
    assert!(
        out.status.success(),
        "the real Kilo engine is needed: {} failed; run it by hand (npm needed) or set BB_KILO_BIN",
        script.display()
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Workspace, isolated HOME/XDG, the mock LLM and the Kilo config naming it.
pub(crate) struct World {
    pub(crate) dir: TempDir,
    mock: Option<Child>,
}

impl World {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["project", "home", "xdg/config/kilo", "xdg/data", "xdg/state", "xdg/cache"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        Self { dir, mock: None }
    }

    pub(crate) fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    /// Starts the mock LLM and writes the Kilo config (`bash` and `edit` ask).
    pub(crate) fn with_kilo(mut self) -> Self {
        let script = repo_root().join("apps/sidecar/tests/it/mock_llm.py");
        let port_file = self.path("mock.port");
        let child = Command::new("python3")
            .arg(script)
            .args(["--host", "127.0.0.1", "--port", "0", "--delay", "0.05", "--slow-seconds", "60"])
            .arg("--port-file")
            .arg(&port_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 is needed for the mock LLM");
        self.mock = Some(child);
        let mut port = 0u16;
        for _ in 0..400 {
            port = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0);
            if port != 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_ne!(port, 0, "the mock LLM did not write its port");
        let cfg = json!({
            "$schema": "https://app.kilo.ai/config.json",
            "model": "mock/mock-model",
            "small_model": "mock/mock-model",
            "autoupdate": false,
            "share": "disabled",
            "provider": {"mock": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Mock LLM",
                "options": {"baseURL": format!("http://127.0.0.1:{port}/v1"), "apiKey": "mock-key"},
                "models": {"mock-model": {"name": "Mock Model", "tool_call": true,
                                          "limit": {"context": 128000, "output": 4096}}}}},
            "permission": {"bash": "ask", "edit": "ask"},
            "enabled_providers": ["mock"],
            "snapshot": false
        });
        std::fs::write(self.path("xdg/config/kilo/kilo.json"), cfg.to_string()).unwrap();
        self
    }

    /// The agent's environment: what a user's configuration would hold.
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

    /// A hub whose agents inherit exactly [`World::env`], workspace = the project.
    pub(crate) fn hub(&self) -> (AcpHub, Events) {
        let policy = LaunchPolicy {
            workspace: self.path("project").canonicalize().unwrap(),
            trusted: false,
            inherited_env: self.env().into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
        };
        let (hub, rx) = AcpHub::new(policy, Arc::new(TokioSpawner::default()));
        (hub, Events { rx, seen: Vec::new() })
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if let Some(mut child) = self.mock.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A hub's event receiver with everything read so far.
pub(crate) struct Events {
    rx: mpsc::Receiver<AcpEvent>,
    pub(crate) seen: Vec<AcpEvent>,
}

impl Events {
    /// Reads until `pred` holds for an event (returned), failing after `within`.
    pub(crate) async fn wait_for(
        &mut self,
        within: Duration,
        what: &str,
        pred: impl Fn(&AcpEvent) -> bool,
    ) -> AcpEvent {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let ev = tokio::time::timeout_at(deadline, self.rx.recv())
                .await
                .unwrap_or_else(|_| panic!("timed out waiting for {what}; seen {:#?}", self.seen))
                .unwrap_or_else(|| panic!("event channel closed waiting for {what}"));
            self.seen.push(ev.clone());
            if pred(&ev) {
                return ev;
            }
        }
    }

    /// Reads what is already queued.
    pub(crate) fn drain(&mut self) {
        while let Ok(ev) = self.rx.try_recv() {
            self.seen.push(ev);
        }
    }

    /// The text of every `agent_message_chunk` of a session seen so far, joined.
    pub(crate) fn agent_text(&self, session: &str) -> String {
        self.seen
            .iter()
            .filter_map(|e| match &e.kind {
                AcpEventKind::SessionUpdate { session_id, update }
                    if session_id == session
                        && update["sessionUpdate"] == "agent_message_chunk" =>
                {
                    update["content"]["text"].as_str().map(str::to_owned)
                }
                _ => None,
            })
            .collect()
    }

    /// Every update of a session seen so far.
    pub(crate) fn updates(&self, session: &str) -> Vec<Value> {
        self.seen
            .iter()
            .filter_map(|e| match &e.kind {
                AcpEventKind::SessionUpdate { session_id, update } if session_id == session => {
                    Some(update.clone())
                }
                _ => None,
            })
            .collect()
    }
}

/// Whether a process is gone (no `/proc` entry, or a zombie).
pub(crate) fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Live (non-zombie) processes whose process group is `pgid`.
pub(crate) fn group_members(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some(rest) = stat.rsplit(')').next() else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // fields[0] = state, [1] = ppid, [2] = pgrp
        if fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string() {
            out.push(pid);
        }
    }
    out
}
