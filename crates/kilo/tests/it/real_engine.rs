//! The Kilo client against the real engine (`kilo serve` 7.7.9 with the scripted mock LLM),
//! started by `../shared/engine-peer/run-engine.sh`, which installs the pinned package into
//! `target/engines/kilo` when missing. Fails with the reason when the engine cannot be had,
//! unless `BB_SKIP_REAL_ENGINE=1`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use bb_engine_client::sse::SseClient;
use bb_engine_client::transport::{EngineAuth, HttpOptions, HttpTransport};
use bb_kilo::client::{
    CreateSession, KiloClient, KiloUpdate, PermissionReply, PromptRequest, RouterOptions,
};
use secrecy::SecretString;
use serde_json::Value;
use tokio::sync::mpsc;

/// Bound on the whole scenario: it fails rather than hangs.
const SCENARIO_BOUND: Duration = Duration::from_secs(120);

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[allow(clippy::disallowed_methods)] // tests start the engine through its script
fn run_script(args: &[&Path]) -> Output {
    let script = std::env::var_os("BB_RUN_ENGINE_SCRIPT")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/engine-peer/run-engine.sh"));
    Command::new("bash")
        .arg(&script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()))
}

/// Stops the engine when the test ends, however it ends.
struct Engine {
    work: tempfile::TempDir,
    env: HashMap<String, String>,
}

impl Engine {
    fn start() -> Self {
        let install = repo_root().join("target/engines/kilo");
        let work = tempfile::tempdir().unwrap();
        let out = run_script(&[Path::new("start"), &install, work.path()]);
        let engine = Self {
            env: String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            work,
        };
        assert!(
            out.status.success() && engine.env.contains_key("ENGINE_URL"),
            "the real Kilo engine could not be installed/started (set BB_SKIP_REAL_ENGINE=1 to \
             skip on purpose): {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        engine
    }

    fn var(&self, key: &str) -> &str {
        self.env.get(key).map_or("", String::as_str)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = run_script(&[Path::new("stop"), self.work.path()]);
    }
}

/// Collects the session's deltas until its turn closes.
async fn turn_text(rx: &mut mpsc::Receiver<KiloUpdate>, session: &str) -> (String, Vec<String>) {
    let mut text = String::new();
    let mut types = Vec::new();
    while let Some(update) = rx.recv().await {
        match update {
            KiloUpdate::Event { event } if event.session().as_deref() == Some(session) => {
                if event.event_type == "message.part.delta" {
                    let delta = event.body.get("delta").and_then(Value::as_str);
                    text.push_str(delta.unwrap_or_default());
                }
                types.push(event.event_type.to_string());
                if event.event_type == "session.turn.close" {
                    break;
                }
            }
            KiloUpdate::Sync(sync) if sync.session_id == session => {
                assert!(sync.seq.is_some(), "a sync echo carries its seq: {sync:?}");
                types.push("sync".to_owned());
            }
            KiloUpdate::Failed(err) => panic!("event stream failed: {err}"),
            _ => {}
        }
    }
    (text, types)
}

async fn scenario(engine: &Engine) {
    let auth = EngineAuth::Basic {
        user: engine.var("ENGINE_USERNAME").to_owned(),
        password: SecretString::from(engine.var("ENGINE_PASSWORD")),
    };
    let transport = HttpTransport::new(engine.var("ENGINE_URL"), auth, HttpOptions::default())
        .expect("engine URL");
    let kilo = KiloClient::new(Arc::new(transport));
    let health = kilo.health().await.expect("health");
    assert!(health.healthy);
    assert_eq!(health.version.as_deref(), Some("7.7.9"));
    kilo.config().await.expect("config");

    let sse = SseClient::new(kilo.transport().clone(), kilo.event_request())
        .with_policy(RouterOptions::default().policy);
    let (router, mut rx) = crate::spawn_router(kilo.clone(), sse, 1024);
    assert!(matches!(rx.recv().await, Some(KiloUpdate::Connected { reconnects: 0 })));

    let session = kilo.create_session(&CreateSession::default()).await.expect("create");
    assert!(session.id.starts_with("ses"), "{session:?}");
    router.track(&session.id);
    kilo.prompt_async(&session.id, &PromptRequest::text("MOCK:text:hello%20world"))
        .await
        .expect("prompt_async");
    let (text, types) = turn_text(&mut rx, &session.id).await;
    assert_eq!(text, "hello world", "events: {types:?}");
    assert!(types.iter().any(|t| t == "sync"), "sync events are routed too: {types:?}");

    let listed = kilo.list_sessions().await.expect("list");
    assert!(listed.iter().any(|s| s.id == session.id));
    assert_eq!(kilo.get_session(&session.id).await.expect("get").id, session.id);
    assert!(kilo.status().await.expect("status").get(&session.id).is_none_or(|s| s.kind == "idle"));
    assert!(kilo.permissions().await.expect("permissions").is_empty());

    router.rehydrate(&session.id);
    loop {
        match rx.recv().await.expect("router alive") {
            KiloUpdate::Rehydrated { session_id, messages, status, permissions, .. } => {
                assert_eq!(session_id, session.id);
                assert_eq!(messages.len(), 2, "user + assistant");
                assert_eq!(messages[1].info.role, "assistant");
                assert_eq!(status.kind, "idle");
                assert!(permissions.is_empty());
                break;
            }
            KiloUpdate::RehydrateFailed { error, .. } => panic!("rehydrate: {error}"),
            _ => {}
        }
    }

    // Restart the engine under the open stream: the router reconnects and rebuilds the
    // tracked session from REST before any live event of the new connection.
    let work = engine.work.path().to_owned();
    let restarted = tokio::task::spawn_blocking(move || run_script(&[Path::new("restart"), &work]))
        .await
        .expect("restart task");
    assert!(restarted.status.success(), "{}", String::from_utf8_lossy(&restarted.stderr));
    let mut seen = Vec::new();
    loop {
        let update = rx.recv().await.expect("router alive");
        match &update {
            KiloUpdate::Reconnecting { .. } => seen.push("reconnecting"),
            KiloUpdate::Connected { reconnects } => {
                assert!(*reconnects >= 1);
                seen.push("connected");
            }
            KiloUpdate::Rehydrated { session_id, messages, .. } if seen.contains(&"connected") => {
                assert_eq!(session_id, &session.id);
                assert_eq!(messages.len(), 2, "history survives the restart");
                break;
            }
            KiloUpdate::Event { .. } | KiloUpdate::Unrouted(_) => {
                assert!(!seen.contains(&"connected"), "live event before the rebuild: {update:?}");
            }
            KiloUpdate::RehydrateFailed { error, .. } => panic!("rehydrate: {error}"),
            KiloUpdate::Failed(err) => panic!("event stream failed: {err}"),
            _ => {}
        }
    }
    assert_eq!(seen.first(), Some(&"reconnecting"), "{seen:?}");

    // A permission round trip: the bash tool asks, `POST /permission/:id/reply` allows once.
    kilo.prompt_async(&session.id, &PromptRequest::text("Run it MOCK:bash:echo%20bb-kilo1"))
        .await
        .expect("prompt_async (bash)");
    let asked = loop {
        match rx.recv().await.expect("router alive") {
            KiloUpdate::Event { event }
                if event.session().as_deref() == Some(session.id.as_str())
                    && event.event_type == "permission.asked" =>
            {
                break event;
            }
            KiloUpdate::Failed(err) => panic!("event stream failed: {err}"),
            _ => {}
        }
    };
    let permission_id = asked.body.get("id").and_then(Value::as_str).unwrap();
    let pending = kilo.permissions().await.expect("permissions");
    assert!(pending.iter().any(|p| p.id == permission_id && p.permission == "bash"));
    assert!(
        kilo.reply_permission(permission_id, PermissionReply::Once, None).await.expect("reply")
    );
    let (_, types) = turn_text(&mut rx, &session.id).await;
    assert!(types.iter().any(|t| t == "permission.replied"), "{types:?}");
    assert!(kilo.permissions().await.expect("permissions").is_empty());

    assert!(kilo.abort(&session.id).await.expect("abort"));
    assert!(kilo.delete_session(&session.id).await.expect("delete"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kilo_client_streams_a_turn_from_the_real_engine() {
    if std::env::var("BB_SKIP_REAL_ENGINE").is_ok_and(|v| v == "1") {
        eprintln!("BB_SKIP_REAL_ENGINE=1: real-engine test skipped on request");
        return;
    }
    let engine = Engine::start();
    tokio::time::timeout(SCENARIO_BOUND, scenario(&engine))
        .await
        .expect("real-engine scenario took longer than its bound");
}
