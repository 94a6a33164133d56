//! Helpers: an in-process fake engine with an HTTP transport to it, turn scripts, and
//! bounded collection of stream updates.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bb_breadboard::client::{
    BbEvent, BreadboardClient, CreateSession, SessionStream, StreamOptions, StreamUpdate,
};
use bb_engine_client::sse::ReconnectPolicy;
use bb_engine_client::transport::{EngineAuth, HttpOptions, HttpTransport};
use bb_fake_engine::{EngineConfig, FakeEngine, RunningEngine};

/// Upper bound on any wait in these tests; never reached when things work.
pub(super) const BOUND: Duration = Duration::from_secs(20);

pub(super) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine/breadboard")
}

pub(super) struct Engine {
    pub(super) running: RunningEngine,
    pub(super) client: BreadboardClient,
    pub(super) dir: tempfile::TempDir,
}

impl Engine {
    pub(super) async fn start(mut config: EngineConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        config.default_workspace = dir.path().to_path_buf();
        let token = config.token.clone();
        let running = FakeEngine::new(config).serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let auth = token.map_or(EngineAuth::None, EngineAuth::Bearer);
        let client = client_for(running.url(), auth);
        Self { running, client, dir }
    }

    pub(super) fn engine(&self) -> &FakeEngine {
        self.running.engine()
    }

    /// Writes a turn script (upstream replay format) and returns the `replay:` input for it.
    pub(super) fn script(&self, name: &str, lines: &[&str]) -> String {
        let path = self.dir.path().join(format!("{name}.jsonl"));
        std::fs::write(&path, lines.join("\n")).unwrap();
        format!("replay:{}", path.display())
    }

    pub(super) async fn session(&self) -> String {
        let created = self
            .client
            .create_session(&CreateSession {
                config_path: "test.yaml".into(),
                workspace: Some(self.dir.path().display().to_string()),
                ..CreateSession::default()
            })
            .await
            .unwrap();
        created.session_id
    }
}

pub(super) fn client_for(url: &str, auth: EngineAuth) -> BreadboardClient {
    let transport = HttpTransport::new(url, auth, HttpOptions::default()).unwrap();
    BreadboardClient::new(Arc::new(transport))
}

/// Fast reconnects so that tests do not wait on back-off.
pub(super) fn fast() -> StreamOptions {
    StreamOptions {
        policy: ReconnectPolicy {
            initial_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(20),
            max_attempts: 6,
            read_timeout: Duration::from_secs(10),
        },
        refill_attempts: 8,
        busy_read_timeout: Duration::from_secs(10),
    }
}

/// Seven events with no delays: four deltas, the message, the file's run_finished (the
/// engine then adds completion).
pub(super) const STREAMING: &[&str] = &[
    r#"{"type":"assistant_delta","payload":{"message_id":"m1","text":"a"}}"#,
    r#"{"type":"assistant_delta","payload":{"message_id":"m1","text":"b"}}"#,
    r#"{"type":"assistant_delta","payload":{"message_id":"m1","text":"c"}}"#,
    r#"{"type":"assistant_delta","payload":{"message_id":"m1","text":"d"}}"#,
    r#"{"type":"assistant_message","payload":{"message_id":"m1","text":"abcd"}}"#,
    r#"{"type":"run_finished","payload":{"eventCount":6,"completed":true,"reason":"replay","logging_dir":null}}"#,
];

/// Reads updates until `stop` says so or the stream ends, within [`BOUND`].
pub(super) async fn collect_until(
    stream: &mut SessionStream,
    mut stop: impl FnMut(&StreamUpdate) -> bool,
) -> Vec<StreamUpdate> {
    let mut out = Vec::new();
    let read = async {
        while let Some(item) = stream.next().await {
            let update = item.unwrap();
            let done = stop(&update);
            out.push(update);
            if done {
                break;
            }
        }
    };
    tokio::time::timeout(BOUND, read).await.expect("stream did not reach the expected update");
    out
}

pub(super) fn is_kind(update: &StreamUpdate, kind: &str) -> bool {
    matches!(update, StreamUpdate::Event(e) if e.kind == kind)
}

pub(super) fn events(updates: &[StreamUpdate]) -> Vec<&BbEvent> {
    updates
        .iter()
        .filter_map(|u| match u {
            StreamUpdate::Event(e) => Some(e),
            _ => None,
        })
        .collect()
}

pub(super) fn seqs(updates: &[StreamUpdate]) -> Vec<u64> {
    events(updates).iter().filter_map(|e| e.seq).collect()
}

/// Waits until the session has published its `completion` for turn `n` (1-based), reading a
/// separate stream.
pub(super) async fn wait_turns(client: &BreadboardClient, session: &str, n: usize) {
    let mut stream = SessionStream::open(client, session, None, fast()).unwrap();
    let mut seen = 0;
    collect_until(&mut stream, |u| {
        if is_kind(u, "completion") {
            seen += 1;
        }
        seen >= n
    })
    .await;
}
