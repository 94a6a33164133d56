//! The soak's processes: the fake engine (`bb-harness fake-engine`, killed and restarted by
//! the schedule), the bridges (a `--listen` sidecar restarted on its state directory, the
//! gateway; the stdio sidecars are spawned by their windows), and what `/proc` says of the
//! bridges over the run (resident memory, open file descriptors).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use tokio::io::{AsyncBufReadExt as _, BufReader};

/// A command for a bridge binary: its log appended to `log`, killed with the soak. The soak's
/// one door to processes: it runs the binaries a user runs, from outside.
#[allow(clippy::disallowed_methods)]
pub(crate) fn bridge_command(
    exe: &Path,
    args: &[String],
    log: &Path,
) -> anyhow::Result<tokio::process::Command> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    let mut command = tokio::process::Command::new(exe);
    command
        .args(args)
        .env("RUST_LOG", "info")
        .stdin(std::process::Stdio::null())
        .stderr(log)
        .kill_on_drop(true);
    Ok(command)
}

/// A child that printed one line when ready; killed on drop.
pub(crate) struct Ready {
    pub(crate) child: tokio::process::Child,
    /// The line it printed.
    pub(crate) line: String,
}

impl Ready {
    /// Spawns and waits (bounded) for the first stdout line.
    pub(crate) async fn spawn(exe: &Path, args: &[String], log: &Path) -> anyhow::Result<Self> {
        let mut child = bridge_command(exe, args, log)?
            .stdout(std::process::Stdio::piped())
            .spawn()
            .with_context(|| format!("spawning {}", exe.display()))?;
        let stdout = child.stdout.take().context("stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
            .await
            .with_context(|| format!("{} printed nothing within 120 s", exe.display()))??
            .with_context(|| {
                format!("{} exited before it was ready (see {})", exe.display(), log.display())
            })?;
        // Keep reading (and dropping) what it prints so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Self { child, line })
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id().unwrap_or(0)
    }

    /// SIGKILL, then reap.
    pub(crate) async fn kill(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

/// The fake BreadBoard engine in its own process.
pub(crate) async fn start_engine(
    harness: &Path,
    scripts: &[PathBuf],
    workspace: &Path,
    log: &Path,
) -> anyhow::Result<(Ready, SocketAddr)> {
    let mut args = vec![
        "fake-engine".to_owned(),
        "--flavor".to_owned(),
        "breadboard".to_owned(),
        "--workspace".to_owned(),
        workspace.display().to_string(),
    ];
    for script in scripts {
        args.push("--script".to_owned());
        args.push(script.display().to_string());
    }
    let engine = Ready::spawn(harness, &args, log).await?;
    let addr = engine
        .line
        .trim()
        .strip_prefix("http://")
        .and_then(|a| a.parse().ok())
        .with_context(|| format!("engine URL line: {:?}", engine.line))?;
    Ok((engine, addr))
}

/// What `/proc` said of one process over its life.
#[derive(Debug, Clone, Default)]
pub(crate) struct Life {
    pub(crate) bridge: String,
    pub(crate) peak_rss: u64,
    /// Open descriptors at the first sample and the last.
    pub(crate) fds_first: Option<u64>,
    pub(crate) fds_last: u64,
    pub(crate) fds_peak: u64,
}

/// The bridges' processes, sampled every second.
#[derive(Debug, Default)]
pub(crate) struct Sampler {
    /// Live pids by bridge name.
    pids: Mutex<HashMap<String, u32>>,
    /// Every pid seen, with what was sampled.
    lives: Mutex<HashMap<u32, Life>>,
}

impl Sampler {
    pub(crate) fn watch(&self, bridge: &str, pid: u32) {
        if pid != 0 {
            super::lock(&self.pids).insert(bridge.to_owned(), pid);
        }
    }

    /// One sample of every live bridge.
    pub(crate) fn sample(&self) {
        let pids: Vec<(String, u32)> =
            super::lock(&self.pids).iter().map(|(b, p)| (b.clone(), *p)).collect();
        for (bridge, pid) in pids {
            let Some(rss) = status_bytes(pid, "VmRSS:") else { continue };
            let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { continue };
            let fds = fds.count() as u64;
            let mut lives = super::lock(&self.lives);
            let life = lives.entry(pid).or_insert_with(|| Life { bridge, ..Life::default() });
            life.peak_rss = life.peak_rss.max(rss);
            life.fds_first.get_or_insert(fds);
            life.fds_last = fds;
            life.fds_peak = life.fds_peak.max(fds);
        }
    }

    /// Samples until dropped.
    pub(crate) fn spawn(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let sampler = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                sampler.sample();
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        })
    }

    pub(crate) fn lives(&self) -> Vec<Life> {
        let mut lives: Vec<Life> = super::lock(&self.lives).values().cloned().collect();
        lives.sort_by(|a, b| a.bridge.cmp(&b.bridge));
        lives
    }
}

/// A `kB` field of `/proc/PID/status`, in bytes.
fn status_bytes(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix(key))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}
