//! Test harness: the hub's world on the shared Kilo setup (`bb-test-support`), a hub with its
//! event receiver.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bb_acp::{AcpEvent, AcpEventKind, AcpHub, LaunchPolicy};
pub(crate) use bb_kilo::testing::kilo_bin;
use bb_kilo::testing::{KiloWorld, MockLlm};
use bb_protocol::ws::{AcpConnectParams, AcpSessionNewParams};
use bb_supervisor::TokioSpawner;
pub(crate) use bb_test_support::procfs::{group_members, is_dead};
pub(crate) use bb_test_support::repo_root;
use serde_json::Value;
use tokio::sync::mpsc;

/// Bound on an agent start plus one turn on a loaded 2-core machine.
pub(crate) const LONG: Duration = Duration::from_secs(120);

/// Workspace, isolated HOME/XDG and, once [`World::with_kilo`], the mock LLM and the Kilo
/// config naming it.
pub(crate) struct World {
    kilo: KiloWorld,
    _mock: Option<MockLlm>,
}

impl World {
    pub(crate) fn new() -> Self {
        Self { kilo: KiloWorld::new(), _mock: None }
    }

    pub(crate) fn path(&self, sub: &str) -> PathBuf {
        self.kilo.path(sub)
    }

    /// Starts the mock LLM and writes the Kilo config (`bash` and `edit` ask).
    pub(crate) fn with_kilo(mut self) -> Self {
        self._mock = Some(self.kilo.start_mock_llm(Duration::from_millis(50), "ask", "ask"));
        self
    }

    /// The agent's environment: what a user's configuration would hold.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        let mut env = vec![("PATH".to_owned(), std::env::var("PATH").unwrap_or_default())];
        env.extend(self.kilo.env());
        env
    }

    /// A hub whose agents inherit exactly [`World::env`], workspace = the project.
    pub(crate) fn hub(&self) -> (AcpHub, Events) {
        self.hub_with(false)
    }

    /// As [`World::hub`], the workspace trusted.
    pub(crate) fn hub_trusted(&self) -> (AcpHub, Events) {
        self.hub_with(true)
    }

    fn hub_with(&self, trusted: bool) -> (AcpHub, Events) {
        let policy = LaunchPolicy {
            workspace: self.path("project").canonicalize().unwrap(),
            trusted,
            inherited_env: self.env().into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
        };
        let (hub, rx) = AcpHub::new(policy, Arc::new(TokioSpawner::default()));
        (hub, Events { rx, seen: Vec::new() })
    }
}

/// Connects `python3 <script> <args…>` (a script under `fixtures/acp/`) and creates a
/// session: the connection's id, its agent's name, the session's id.
pub(crate) async fn script_session(
    hub: &AcpHub,
    script: &str,
    args: &[&str],
) -> (String, String, String) {
    let mut argv = vec![repo_root().join("fixtures/acp").join(script).display().to_string()];
    argv.extend(args.iter().map(|a| (*a).to_owned()));
    let params =
        AcpConnectParams { command: "python3".to_owned(), args: Some(argv), env: None, cwd: None };
    let info = hub.connect(params).await.unwrap();
    let new = AcpSessionNewParams { connection_id: info.id.clone(), cwd: None, mcp_servers: None };
    let session = hub.session_new(new).await.unwrap();
    (info.id, info.agent_info.name, session)
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
