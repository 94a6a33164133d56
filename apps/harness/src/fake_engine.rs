//! `bb-harness fake-engine`: serves a fake engine on loopback and prints its URL once
//! listening.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use anyhow::Context as _;
use bb_fake_engine::{EngineConfig, FakeEngine, Faults, ScriptSource};
use secrecy::SecretString;

/// Which engine the fake emulates.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Flavor {
    /// The BreadBoard CLI-bridge engine.
    Breadboard,
}

/// Options of `fake-engine`.
#[derive(Debug, clap::Args)]
pub(crate) struct FakeEngineArgs {
    /// The engine to emulate.
    #[arg(long, value_enum)]
    flavor: Flavor,
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Environment variable holding the bearer token every route then requires.
    #[arg(long)]
    token_env: Option<String>,
    /// Events kept per session for resume (a small ring triggers 409s quickly).
    #[arg(long, default_value_t = 1000)]
    ring: usize,
    /// Do not write every Nth live event of a connection (seq gaps).
    #[arg(long)]
    drop_every: Option<u64>,
    /// Delay before writing each event.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// Cut every event stream after this many events.
    #[arg(long)]
    cut_after: Option<usize>,
    /// Stall (stay open, write nothing) every event stream after this many events.
    #[arg(long)]
    stall_after: Option<usize>,
    /// Let DELETE abandon a pending permission request instead of waiting for its answer.
    #[arg(long)]
    delete_abandons_permission: bool,
    /// The engine's own directory (reported in `skills_catalog`). Like the real engine, the
    /// files routes of a session created without a `workspace` answer 409 `workspace not
    /// ready`.
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// Turn scripts (upstream replay format) played in rotation for plain inputs.
    #[arg(long = "script")]
    scripts: Vec<PathBuf>,
}

pub(crate) async fn run(args: FakeEngineArgs) -> anyhow::Result<()> {
    let Flavor::Breadboard = args.flavor;
    let token = match &args.token_env {
        Some(var) => Some(SecretString::from(
            std::env::var(var).with_context(|| format!("reading the token from ${var}"))?,
        )),
        None => None,
    };
    let config = EngineConfig {
        token,
        ring_capacity: args.ring,
        default_workspace: args.workspace,
        scripts: args.scripts.into_iter().map(ScriptSource::File).collect(),
        faults: Faults {
            drop_every: args.drop_every,
            latency_ms: args.latency_ms,
            cut_after: args.cut_after,
            stall_after: args.stall_after,
            delete_waits_for_permission: !args.delete_abandons_permission,
            ..Faults::default()
        },
        ..EngineConfig::default()
    };
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
    let running =
        FakeEngine::new(config).serve(addr).await.with_context(|| format!("binding {addr}"))?;
    println!("{}", running.url());
    running.wait().await;
    Ok(())
}
