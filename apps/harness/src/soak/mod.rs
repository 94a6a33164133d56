//! `bb-harness soak`: sessions streaming through `bb-sidecar` (a stdio window and two clients
//! of a `--listen` sidecar) and `bb-gateway` (two WebSocket windows) from the fake BreadBoard
//! engine in its own process, for a set time, while faults are injected on a schedule: engine
//! SIGKILL and restart, stream stalls and cuts (through the proxy the bridges reach the
//! engine by, [`proxy`]), a sidecar SIGKILL and restart on the same state directory, window
//! detach and reattach with `lastSeen`, and windows that stop reading for a while. Sessions
//! raise permission requests now and then, answered by one or two windows at once. At the
//! end every window's record is checked against what the engine sent ([`check`]), the
//! bridges' memory and descriptors are reported from `/proc` ([`procs`]), and one JSON
//! summary is printed; the exit status is non-zero when anything was lost or duplicated
//! silently, an approval reached the engine twice, or a window was shown an approval that
//! was never resolved (`stuck`). Approvals that went stale (refused because the engine no
//! longer knew them) and those open when their engine was killed are counted apart and
//! reported, not failures.

mod check;
mod driver;
mod faults;
mod procs;
mod proxy;
mod window;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::Context as _;
use serde_json::json;

use window::{Dial, Window};

/// Bound on one call through a window (a loaded machine, a bridge restarting).
pub(crate) const CALL_WAIT: Duration = Duration::from_secs(60);

/// Bound on the windows catching up once the sessions are quiet.
const SETTLE_WAIT: Duration = Duration::from_secs(60);

/// The turns the fake engine plays in rotation: the demo's (a reply, a tool call, an edit
/// that waits for a permission decision) and two short replies.
const SCRIPTS: [(&str, &str); 2] = [
    ("demo.jsonl", include_str!("../../../../fixtures/demo/breadboard_demo.jsonl")),
    ("reply.jsonl", include_str!("../../../../fixtures/soak/reply.jsonl")),
];

/// The soak's one door to the clock: it schedules faults and bounds waits in real time, from
/// outside the bridges.
#[allow(clippy::disallowed_methods)]
pub(crate) fn now() -> tokio::time::Instant {
    tokio::time::Instant::now()
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Options of `soak`.
#[derive(Debug, clap::Args)]
pub(crate) struct SoakArgs {
    /// Sessions streaming at once (spread over the stdio sidecar, the `--listen` sidecar and
    /// the gateway).
    #[arg(long, default_value_t = 6)]
    sessions: usize,
    /// Seconds of faults and turns (then the sessions finish their turns and the windows
    /// are checked).
    #[arg(long, default_value_t = 60)]
    duration: u64,
    /// Seed of the fault schedule and of the windows' choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Seconds between two faults (the first round injects every kind once, in a seeded
    /// order).
    #[arg(long, default_value_t = 8)]
    fault_every: u64,
    /// How long a stream stall lasts, in seconds (beyond the bridge's 20 s dead-stream
    /// bound while a turn runs, the bridge declares the stream dead and resumes it).
    #[arg(long, default_value_t = 25)]
    stall: u64,
    /// The `bb-sidecar` binary (default: beside this one).
    #[arg(long)]
    sidecar: Option<PathBuf>,
    /// The `bb-gateway` binary (default: beside this one).
    #[arg(long)]
    gateway: Option<PathBuf>,
    /// Write every line each window reads to `window-NAME.jsonl` in the run's directory.
    #[arg(long)]
    trace: bool,
    /// Keep the run's directory (logs, state directories) here instead of a temporary one.
    #[arg(long)]
    dir: Option<PathBuf>,
}

/// What the bridges and the schedule share.
pub(crate) struct Rig {
    pub(crate) dir: PathBuf,
    pub(crate) harness: PathBuf,
    pub(crate) scripts: Vec<PathBuf>,
    pub(crate) proxy: proxy::Proxy,
    pub(crate) engine: tokio::sync::Mutex<Option<procs::Ready>>,
    /// Bumped by every engine restart: the sessions of an older engine are gone.
    pub(crate) engine_epoch: AtomicU64,
    pub(crate) listen: tokio::sync::Mutex<Option<procs::Ready>>,
    pub(crate) listen_args: Vec<String>,
    pub(crate) sidecar: PathBuf,
    pub(crate) sampler: Arc<procs::Sampler>,
    pub(crate) stopping: AtomicBool,
}

impl Rig {
    fn log(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.log"))
    }

    /// Starts the fake engine (again) and points the proxy at it.
    pub(crate) async fn start_engine(&self) -> anyhow::Result<()> {
        let workspace = self.dir.join("workspace");
        let (engine, addr) =
            procs::start_engine(&self.harness, &self.scripts, &workspace, &self.log("engine"))
                .await?;
        self.proxy.retarget(addr);
        *self.engine.lock().await = Some(engine);
        Ok(())
    }

    /// Starts the `--listen` sidecar (again, on the same socket and state directory).
    pub(crate) async fn start_listen(&self) -> anyhow::Result<()> {
        let ready =
            procs::Ready::spawn(&self.sidecar, &self.listen_args, &self.log("listen")).await?;
        anyhow::ensure!(ready.line.starts_with("listening on"), "listen: {:?}", ready.line);
        self.sampler.watch("listen", ready.pid());
        *self.listen.lock().await = Some(ready);
        Ok(())
    }
}

/// The windows of one bridge, the first creating its sessions.
pub(crate) struct Bridge {
    pub(crate) name: &'static str,
    pub(crate) windows: Vec<Window>,
}

pub(crate) async fn run(args: SoakArgs) -> anyhow::Result<bool> {
    let beside = |name: &str| -> anyhow::Result<PathBuf> {
        Ok(std::env::current_exe()?.with_file_name(name))
    };
    let sidecar = match args.sidecar.clone() {
        Some(p) => p,
        None => beside("bb-sidecar")?,
    };
    let gateway = match args.gateway.clone() {
        Some(p) => p,
        None => beside("bb-gateway")?,
    };
    for exe in [&sidecar, &gateway] {
        anyhow::ensure!(
            exe.is_file(),
            "{} not found: build it (cargo build -p bb-sidecar -p bb-gateway) or name it with \
             --sidecar / --gateway",
            exe.display()
        );
    }
    let temp = tempfile::Builder::new().prefix("bb-soak-").tempdir()?;
    let dir = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => temp.path().to_owned(),
    };
    std::fs::create_dir_all(dir.join("workspace"))?;
    std::fs::write(dir.join("workspace/hello.txt"), "hello world\n")?;
    let mut scripts = Vec::new();
    for (name, text) in SCRIPTS {
        let path = dir.join(name);
        std::fs::write(&path, text)?;
        scripts.push(path);
    }
    // The demo turn waits on its permission request; the replies do not: "now and then".
    scripts.push(dir.join("reply.jsonl"));

    // A short socket path (a socket path has a length limit).
    let socket = PathBuf::from(format!("/tmp/bb-soak-{}-{}.sock", std::process::id(), args.seed));
    let _ = std::fs::remove_file(&socket);
    let proxy = proxy::Proxy::start(([127, 0, 0, 1], 9).into()).await?;
    let engine_url = proxy.url.clone();
    let engine_args = |state: &Path| -> Vec<String> {
        [
            "--workspace",
            &dir.join("workspace").display().to_string(),
            "--engine",
            "breadboard",
            "--engine-url",
            &engine_url,
            "--state-dir",
            &state.display().to_string(),
            "--engine-config",
            "agent.yaml",
            "--trusted",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
    };
    let mut listen_args = engine_args(&dir.join("state-listen"));
    listen_args.extend([
        "--listen".into(),
        socket.display().to_string(),
        "--linger".into(),
        "600".into(),
    ]);
    let rig = Arc::new(Rig {
        dir: dir.clone(),
        harness: std::env::current_exe()?,
        scripts,
        engine: tokio::sync::Mutex::new(None),
        engine_epoch: AtomicU64::new(0),
        listen: tokio::sync::Mutex::new(None),
        listen_args,
        sidecar: sidecar.clone(),
        sampler: Arc::default(),
        stopping: AtomicBool::new(false),
        proxy,
    });
    rig.start_engine().await.context("starting the fake engine")?;
    rig.start_listen().await.context("starting the --listen sidecar")?;
    let gw = procs::Ready::spawn(
        &gateway,
        &engine_args(&dir.join("state-gateway")),
        &rig.log("gateway"),
    )
    .await
    .context("starting the gateway")?;
    rig.sampler.watch("gateway", gw.pid());
    let ws = gw
        .line
        .strip_prefix("open http://")
        .and_then(|rest| rest.split_once("/?token="))
        .map(|(addr, token)| format!("ws://{addr}/ws?token={token}"))
        .with_context(|| format!("gateway URL line: {:?}", gw.line))?;
    let stdio = Dial::Stdio {
        exe: sidecar.clone(),
        args: engine_args(&dir.join("state-stdio")),
        log: rig.log("stdio"),
    };
    let trace = args.trace.then_some(dir.as_path());
    let bridges = vec![
        Bridge { name: "stdio", windows: vec![Window::open("s1", stdio, trace).await?] },
        Bridge {
            name: "listen",
            windows: vec![
                Window::open("l1", Dial::Socket(socket.clone()), trace).await?,
                Window::open("l2", Dial::Socket(socket.clone()), trace).await?,
            ],
        },
        Bridge {
            name: "gateway",
            windows: vec![
                Window::open("g1", Dial::Ws(ws.clone()), trace).await?,
                Window::open("g2", Dial::Ws(ws), trace).await?,
            ],
        },
    ];
    rig.sampler.watch("stdio", bridges[0].windows[0].bridge_pid.load(Ordering::SeqCst));
    let bridges = Arc::new(bridges);
    let sampling = rig.sampler.spawn();

    let stats = Arc::new(driver::Stats::default());
    let mut drivers = Vec::new();
    for n in 0..args.sessions {
        let bridge = n % bridges.len();
        drivers.push(tokio::spawn(driver::drive(
            Arc::clone(&rig),
            Arc::clone(&bridges),
            (bridge, n),
            args.seed.wrapping_mul(1000).wrapping_add(n as u64),
            Arc::clone(&stats),
        )));
    }
    let schedule = faults::Schedule {
        every: Duration::from_secs(args.fault_every.max(1)),
        stall: Duration::from_secs(args.stall),
        seed: args.seed,
    };
    let started = now();
    let injected =
        faults::inject(&rig, &bridges, &schedule, started + Duration::from_secs(args.duration))
            .await;
    rig.stopping.store(true, Ordering::SeqCst);
    rig.proxy.set_stalled(false);
    for d in drivers {
        d.await?;
    }
    let settled = settle(&rig, &bridges, &stats).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    rig.sampler.sample();
    sampling.abort();
    let elapsed = started.elapsed();

    // The verdict.
    let (events, report) = verdict(&rig, &bridges, &stats);
    let mut approvals = check::Approvals::default();
    rig.proxy.with_truth(|truth| {
        for session in truth.values() {
            let a = check::approvals(session);
            approvals.raised += a.raised;
            approvals.answered_once += a.answered_once;
            approvals.answered_twice += a.answered_twice;
            approvals.unanswered += a.unanswered;
            approvals.repeats_refused += a.repeats_refused;
        }
    });
    let (mut seq_gaps, mut replayed, mut reconnects) = (0, 0, 0);
    for w in bridges.iter().flat_map(|b| &b.windows) {
        let r = lock(&w.record);
        seq_gaps += r.seq_gaps;
        replayed += r.replayed;
        reconnects += r.reconnects;
    }
    std::fs::write(dir.join("verdict.jsonl"), report)?;
    let lives = rig.sampler.lives();
    let peak_rss = lives.iter().map(|l| l.peak_rss).max().unwrap_or(0);
    let fd_growth = lives
        .iter()
        .map(|l| l.fds_last.saturating_sub(l.fds_first.unwrap_or(l.fds_last)))
        .max()
        .unwrap_or(0);
    let double_ok = stats.double_ok.load(Ordering::SeqCst);
    let stuck_approvals = stats.stuck_approvals.load(Ordering::SeqCst);
    // A run that checked nothing proves nothing.
    let ok = events.checked > 0
        && approvals.raised > 0
        && events.lost == 0
        && events.duplicated == 0
        && events.garbled == 0
        && approvals.answered_twice == 0
        && double_ok == 0
        && stats.stuck.load(Ordering::SeqCst) == 0
        && stuck_approvals == 0;
    let summary = json!({
        "ok": ok,
        "sessions": args.sessions,
        "sessionsCreated": lock(&stats.sessions).len(),
        "durationSecs": args.duration,
        "elapsedSecs": elapsed.as_secs(),
        "seed": args.seed,
        "windows": {"stdio": 1, "listen": 2, "gateway": 2},
        "faults": injected,
        "turns": stats.turns.load(Ordering::SeqCst),
        "stuckTurns": stats.stuck.load(Ordering::SeqCst),
        "settled": settled,
        "events": events,
        "lost": events.lost,
        "duplicated": events.duplicated,
        "declaredResyncs": events.resyncs,
        "approvals": {
            "raised": approvals.raised,
            "answeredOnce": approvals.answered_once,
            "answeredTwice": approvals.answered_twice,
            "unanswered": approvals.unanswered,
            "repeatsRefused": approvals.repeats_refused,
            "windowAnswers": stats.answers.load(Ordering::SeqCst),
            "refusedLateAnswers": stats.refused.load(Ordering::SeqCst),
            "acceptedTwice": double_ok,
            "stale": stats.stale.load(Ordering::SeqCst),
            "goneWithEngine": stats.gone_with_engine.load(Ordering::SeqCst),
            "stuck": stuck_approvals,
        },
        "delivery": {"seqGaps": seq_gaps, "replayedDropped": replayed, "reconnects": reconnects},
        "peakRssBytes": peak_rss,
        "fdGrowth": fd_growth,
        "processes": lives.iter().map(|l| json!({
            "bridge": l.bridge,
            "peakRssBytes": l.peak_rss,
            "fdsFirst": l.fds_first,
            "fdsLast": l.fds_last,
            "fdsPeak": l.fds_peak,
        })).collect::<Vec<_>>(),
    });
    println!("{summary}");

    for bridge in bridges.iter() {
        for w in &bridge.windows {
            w.close();
        }
    }
    gw.kill().await;
    if let Some(l) = rig.listen.lock().await.take() {
        l.kill().await;
    }
    if let Some(e) = rig.engine.lock().await.take() {
        e.kill().await;
    }
    let _ = std::fs::remove_file(&socket);
    let _ = std::fs::remove_file(format!("{}.lock", socket.display()));
    Ok(ok)
}

/// Waits (bounded) until every window has every event the engine sent of its sessions, or
/// a declared resync for them; false when the bound passed first.
async fn settle(rig: &Rig, bridges: &[Bridge], stats: &driver::Stats) -> bool {
    let deadline = now() + SETTLE_WAIT;
    loop {
        if verdict(rig, bridges, stats).0.lost == 0 {
            return true;
        }
        if now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Every window's sessions checked: the sum, and one report line per window and session.
fn verdict(rig: &Rig, bridges: &[Bridge], stats: &driver::Stats) -> (check::Tally, String) {
    let sessions = lock(&stats.sessions).clone();
    let mut sum = check::Tally::default();
    let mut report = String::new();
    rig.proxy.with_truth(|truth| {
        for bridge in bridges {
            for w in &bridge.windows {
                for session in sessions.iter().filter(|s| s.bridge == bridge.name) {
                    let Some(t) = truth.get(&session.id) else { continue };
                    let (tally, lost, doubled) =
                        check::verdict(t, session.deleted_after, &w.log(&session.id));
                    sum.add(tally);
                    let line = json!({"window": w.name, "session": session.id,
                                      "tally": tally, "lost": lost, "duplicated": doubled});
                    report.push_str(&line.to_string());
                    report.push('\n');
                }
            }
        }
    });
    (sum, report)
}

/// The fault counts by kind, for the summary.
pub(crate) type Injected = BTreeMap<&'static str, u64>;

#[cfg(test)]
mod tests;
