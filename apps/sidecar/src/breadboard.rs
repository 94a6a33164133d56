//! `--engine breadboard` (attach to a BreadBoard engine by URL) and `--engine demo` (the
//! offline default: a fake BreadBoard engine in-process playing a recorded turn).

use super::{Args, EngineKind, serve};
use std::sync::Arc;

use anyhow::{Context, bail};
use bb_engine_client::breadboard::BreadboardClient;
use bb_engine_client::transport::{EngineAuth, HttpOptions, HttpTransport};
use bb_fake_engine::{EngineConfig, FakeEngine, ScriptSource};
use bb_service::breadboard::{BreadboardAdapter, BreadboardConfig};
use bb_service::{ServiceConfig, SystemClock};
use secrecy::SecretString;

/// The recorded demo turn, compiled in so the demo works from any directory, offline.
const DEMO_TURN: &str = include_str!("../../../fixtures/demo/breadboard_demo.jsonl");

pub(super) async fn run(args: Args, config: ServiceConfig) -> anyhow::Result<()> {
    let root = match &args.workspace {
        Some(w) => {
            std::fs::canonicalize(w).with_context(|| format!("workspace {}", w.display()))?
        }
        None => std::env::current_dir().context("current directory")?,
    };
    // The demo's sessions live only as long as the sidecar: its state goes to a temporary
    // directory (removed at exit) unless one is named.
    let demo_state = match (&args.state_dir, args.engine) {
        (None, EngineKind::Demo) => Some(tempfile::tempdir().context("a temporary state dir")?),
        _ => None,
    };
    let state_dir = match (&args.state_dir, &demo_state) {
        (Some(dir), _) => dir.clone(),
        (None, Some(temp)) => temp.path().to_path_buf(),
        (None, None) => root.join(".bb-bridge").join("state"),
    };
    // Keeps the demo engine serving for the sidecar's lifetime.
    let mut _demo = None;
    let (url, auth, default_config) = if args.engine == EngineKind::Demo {
        let engine = FakeEngine::new(EngineConfig {
            default_workspace: root.clone(),
            scripts: vec![ScriptSource::Inline(DEMO_TURN.to_owned())],
            ..EngineConfig::default()
        });
        let running =
            engine.serve(([127, 0, 0, 1], 0).into()).await.context("starting the demo engine")?;
        tracing::info!(url = running.url(), "demo engine (offline fake BreadBoard) serving");
        let url = running.url().to_owned();
        _demo = Some(running);
        (url, EngineAuth::None, Some(args.engine_config.clone().unwrap_or_else(|| "demo".into())))
    } else {
        let Some(url) = args.engine_url.clone() else {
            bail!("--engine breadboard needs --engine-url URL (or use --engine demo)");
        };
        let auth = match &args.engine_token_env {
            Some(var) => EngineAuth::Bearer(SecretString::from(
                std::env::var(var)
                    .with_context(|| format!("reading the engine token from ${var}"))?,
            )),
            None => EngineAuth::None,
        };
        (url, auth, args.engine_config.clone())
    };
    let transport = HttpTransport::new(&url, auth, HttpOptions::default()).context("engine URL")?;
    let mut bb = BreadboardConfig::new(state_dir);
    bb.default_config_path = default_config;
    // The demo works in the project directory; a real engine gets a workspace only when one
    // is named (without it, its files routes answer "workspace not ready").
    bb.workspace = match args.engine {
        EngineKind::Demo => Some(root.clone()),
        _ => args.workspace.as_ref().map(|_| root.clone()),
    };
    let client = BreadboardClient::new(Arc::new(transport));
    let (adapter, updates) = BreadboardAdapter::new(client, bb, Arc::new(SystemClock));
    serve(config, adapter, updates, None).await
}
