//! `bb-harness bench-e2e`: end-to-end figures of a built `bb-sidecar`, measured from outside
//! over its stdio. Prints one JSON line per measurement.
//!
//! * `coldStart`: spawn `bb-sidecar --engine demo`, write `bb.init` at once, time to its
//!   response line; then the resident set after 1 s idle (`VmRSS`). Median of the runs.
//! * `sparse`, `dense`: the sidecar attached (`--engine kilo --engine-url`) to a fake Kilo
//!   server in this process whose event writes are timed here: bridge-added latency from the
//!   write of each `message.part.delta` to the stdout line that carries its text (coalesced
//!   deltas count each of their parts). `sparse`: one event per 100 ms (each should leave at
//!   once); `sparseBusy`: the same while two busy loops keep both cores busy; `dense`: one
//!   per millisecond on the selected session (published at the 33 ms cadence).
//! * `load`: N Kilo sessions streaming at once at the same total rate (5,000 events/s for
//!   4 s).
//! * `perSession`: N sessions × 10 deltas/s each for `--seconds`, on the Kilo shape (one
//!   stream) and on the BreadBoard shape (a stream per session, each event written as the
//!   engine writes it: two HTTP chunks).
//!
//! The streaming runs' webview asks for events (`bb.init({})`), as every earlier round
//! measured; `--receive updates` (or `both`) makes it ask for the host's view-model updates,
//! as the page and the VS Code extension do. Each line says which (`receive`).
//!
//! * `attach`: a Kilo session of `--turns` turns (two messages each, 10,000 messages by
//!   default) streamed to a first tab, then opened by a second tab (`bb.selectSession` with a
//!   new `tabId`, as a new window does): the time from writing that request to reading the
//!   resync (the session's recent turns) and the response, the sidecar's CPU for it, the
//!   bytes of that first page; then every older page (`bb.history`) to the start, which
//!   sums the session's JSON as updates; and the sidecar's resident set (`VmRSS`) before the
//!   session streamed, 500 ms after it reached the first tab, 500 ms after the second tab's
//!   resync and 500 ms after the last older page, beside the bytes the first tab was sent
//!   (its replay ring keeps up to 1 MiB of them).
//!
//! Every streaming run reports the sidecar's CPU per event (the sum of its threads'
//! `schedstat` time over the run, nanoseconds), its wake-ups per event (voluntary context
//! switches), its peak resident set (`VmHWM`) and how many events reached stdout
//! (`delivered`, each counted once: nothing lost when it equals `events`), and the latency of
//! the selected session's events apart (`selectedLatencyMs*`: the one a webview shows).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use bb_host::Clock;
use bb_service::SystemClock;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

mod engines;
mod procfs;

use engines::{FakeEngine, Feed, Shape};
use procfs::Sample;

/// Arguments of `bench-e2e`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
    /// The `bb-sidecar` binary to measure.
    #[arg(long)]
    sidecar: PathBuf,
    /// Cold-start runs (median reported).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Measure only these (comma-separated): coldStart, sparse, sparseBusy, dense, load,
    /// attach, perSession.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Seconds of streaming in each `perSession` run.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Session counts of the `load` and `perSession` runs.
    #[arg(long, value_delimiter = ',', default_values_t = [10, 100])]
    sessions: Vec<usize>,
    /// Turns of the `attach` run's session (two messages each).
    #[arg(long, default_value_t = 5_000)]
    turns: usize,
    /// Engine shapes of the `perSession` runs (kilo, breadboard).
    #[arg(long, value_delimiter = ',', default_values_t = ["kilo".to_owned(), "breadboard".to_owned()])]
    shapes: Vec<String>,
    /// What the streaming runs' webview asks `bb.init` for (`receive`: events, updates,
    /// both). The default, events, is what every earlier round measured; the page and the
    /// VS Code extension ask for updates.
    #[arg(long, default_value = "events", value_parser = ["events", "updates", "both"])]
    receive: String,
}

fn now() -> Instant {
    SystemClock.now()
}

/// Runs every measurement (or those named by `--only`).
pub(crate) async fn run(args: BenchArgs) -> anyhow::Result<()> {
    let wants = |name: &str| args.only.is_empty() || args.only.iter().any(|o| o == name);
    if wants("coldStart") {
        cold_start(&args.sidecar, args.runs).await?;
    }
    let single = Run { name: "sparse", events: 100, gap: Duration::from_millis(100), sessions: 1 };
    if wants("sparse") {
        streaming(&args.sidecar, Shape::Kilo, &single, &args.receive).await?;
    }
    if wants("sparseBusy") {
        let busy = Busy::start(2)?;
        streaming(&args.sidecar, Shape::Kilo, &Run { name: "sparseBusy", ..single }, &args.receive)
            .await?;
        busy.stop().await;
    }
    if wants("dense") {
        let dense = Run { name: "dense", events: 3000, gap: Duration::from_millis(1), ..single };
        streaming(&args.sidecar, Shape::Kilo, &dense, &args.receive).await?;
    }
    if wants("load") {
        for &sessions in &args.sessions {
            let gap = Duration::from_micros(200);
            let run = Run { name: "load", events: 20_000, gap, sessions };
            streaming(&args.sidecar, Shape::Kilo, &run, &args.receive).await?;
        }
    }
    if wants("attach") {
        attach(&args.sidecar, args.turns).await?;
    }
    if wants("perSession") {
        for shape in &args.shapes {
            let shape = match shape.as_str() {
                "kilo" => Shape::Kilo,
                "breadboard" => Shape::Breadboard,
                other => bail!("unknown shape {other:?} (kilo, breadboard)"),
            };
            for &sessions in &args.sessions {
                let per_session_rate = 10;
                let total = sessions * per_session_rate;
                let events = total * usize::try_from(args.seconds).unwrap_or(10);
                let gap = Duration::from_secs(1) / u32::try_from(total.max(1)).unwrap_or(1);
                let run = Run { name: "perSession", events, gap, sessions };
                streaming(&args.sidecar, shape, &run, &args.receive).await?;
            }
        }
    }
    Ok(())
}

#[allow(clippy::disallowed_methods)] // the bench spawns the binary it measures
fn sidecar_command(sidecar: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(sidecar);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        // The log filter a user's sidecar has: the VS Code extension passes its own environment,
        // where `RUST_LOG` is unset (`info`). The log lines cost code and memory: measured with
        // `warn`, an idle sidecar read ~2 MB less than a user's does (BENCHMARKS.md).
        .env_remove("RUST_LOG")
        .kill_on_drop(true);
    command
}

/// Busy loops in processes of their own (`sh`), one per core to keep busy.
struct Busy(Vec<Child>);

impl Busy {
    #[allow(clippy::disallowed_methods)] // the bench loads the machine on purpose
    fn start(n: usize) -> anyhow::Result<Self> {
        let spawn = || {
            tokio::process::Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .kill_on_drop(true)
                .spawn()
                .context("starting a busy loop")
        };
        Ok(Self((0..n).map(|_| spawn()).collect::<anyhow::Result<_>>()?))
    }

    async fn stop(self) {
        for mut child in self.0 {
            let _ = child.kill().await;
        }
    }
}

struct Sidecar {
    child: Child,
    stdin: ChildStdin,
    lines: tokio::io::Lines<BufReader<ChildStdout>>,
}

impl Sidecar {
    fn spawn(sidecar: &Path, args: &[&str]) -> anyhow::Result<Self> {
        let mut child = sidecar_command(sidecar).args(args).spawn().context("spawning")?;
        let stdin = child.stdin.take().context("stdin")?;
        let stdout = child.stdout.take().context("stdout")?;
        Ok(Self { child, stdin, lines: BufReader::new(stdout).lines() })
    }

    async fn request(&mut self, id: &str, method: &str, params: Value) -> anyhow::Result<()> {
        let line = json!({"v": 1, "kind": "req", "id": id, "method": method, "params": params});
        self.stdin.write_all(format!("{line}\n").as_bytes()).await?;
        Ok(())
    }

    /// Reads lines until the response to `id`.
    async fn response(&mut self, id: &str) -> anyhow::Result<Value> {
        loop {
            let line = self.lines.next_line().await?.context("sidecar closed stdout")?;
            let message: Value = serde_json::from_str(&line)?;
            if message["kind"] == "res" && message["id"] == id {
                return Ok(message);
            }
        }
    }

    /// Sends a request and checks that it succeeded.
    async fn call(&mut self, id: &str, method: &str, params: Value) -> anyhow::Result<()> {
        self.request(id, method, params).await?;
        let response = self.response(id).await?;
        if response["ok"] != true {
            bail!("{method} failed: {response}");
        }
        Ok(())
    }

    fn pid(&self) -> u32 {
        self.child.id().unwrap_or(0)
    }

    async fn stop(mut self) {
        drop(self.stdin);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
        let _ = self.child.kill().await;
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

async fn cold_start(sidecar: &Path, runs: usize) -> anyhow::Result<()> {
    let mut starts = Vec::new();
    let mut idle = Vec::new();
    for _ in 0..runs.max(1) {
        let workspace = tempfile::tempdir()?;
        let ws = workspace.path().to_string_lossy().into_owned();
        let started = now();
        let mut sidecar = Sidecar::spawn(sidecar, &["--engine", "demo", "--workspace", &ws])?;
        sidecar.request("init", "bb.init", json!({})).await?;
        let response = sidecar.response("init").await?;
        starts.push(now().duration_since(started).as_secs_f64() * 1000.0);
        if response["ok"] != true {
            bail!("bb.init failed: {response}");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        idle.push(procfs::status_bytes(sidecar.pid(), "VmRSS:") as f64);
        sidecar.stop().await;
    }
    let line = json!({
        "measure": "coldStart",
        "engine": "demo",
        "runs": starts.len(),
        "initResponseMsMedian": median(starts.clone()),
        "initResponseMsMax": starts.iter().copied().fold(0.0, f64::max),
        "idleRssBytesMedian": median(idle),
    });
    println!("{line}");
    Ok(())
}

/// How long a streaming run measures the sidecar idle before it streams.
const IDLE_SAMPLE: Duration = Duration::from_secs(2);

/// One streaming run: `events` deltas `gap` apart, round-robin over `sessions` sessions (the
/// first one selected).
#[derive(Debug, Clone, Copy)]
struct Run {
    name: &'static str,
    events: usize,
    gap: Duration,
    sessions: usize,
}

/// The numbers `@n;` in a line, each event's text.
fn marks(line: &str) -> impl Iterator<Item = usize> + '_ {
    line.split('@').skip(1).filter_map(|rest| rest.split_once(';')?.0.parse().ok())
}

/// Starts the sidecar on `shape`, opens `run.sessions` sessions' streams, writes the events
/// and reads them back from stdout.
async fn streaming(sidecar: &Path, shape: Shape, run: &Run, receive: &str) -> anyhow::Result<()> {
    let engine = FakeEngine::start(shape, run.sessions).await?;
    let workspace = tempfile::tempdir()?;
    let state = tempfile::tempdir()?;
    let ws = workspace.path().to_string_lossy().into_owned();
    let state_dir = state.path().to_string_lossy().into_owned();
    let args = ["--engine", shape.name(), "--engine-url", &engine.url, "--workspace", &ws];
    let mut sidecar = Sidecar::spawn(sidecar, &[&args[..], &["--state-dir", &state_dir]].concat())?;
    let init = if receive == "events" { json!({}) } else { json!({"receive": receive}) };
    sidecar.call("init", "bb.init", init).await.context("bb.init")?;
    if engine.shape() == Shape::Breadboard {
        // Each select opens the session's stream; the first session is selected last.
        for i in (0..run.sessions).rev() {
            sidecar
                .call(
                    &format!("sel{i}"),
                    "bb.selectSession",
                    json!({"sessionId": format!("ses_{i}")}),
                )
                .await?;
        }
    }
    let mut feed = Feed::collect(&engine, run.sessions).await?;
    if engine.shape() == Shape::Kilo {
        sidecar.call("sel", "bb.selectSession", json!({"sessionId": "ses_0"})).await?;
    }
    // Let the connections settle (a BreadBoard stream is confirmed over REST once open),
    // then measure what the sidecar spends with nothing to stream.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pid = sidecar.pid();
    let idle_from = Sample::of(pid);
    tokio::time::sleep(IDLE_SAMPLE).await;
    let before = Sample::of(pid);
    let idle = before.since(idle_from);
    let ticks_before = procfs::cpu_seconds(pid);
    // Written-at per event number; the reader matches the numbers in the published text.
    let written: Arc<std::sync::Mutex<Vec<Option<Instant>>>> =
        Arc::new(std::sync::Mutex::new(vec![None; run.events]));
    let reader_written = written.clone();
    let mut lines = sidecar.lines;
    let events = run.events;
    let sessions = run.sessions.max(1);
    let reader = tokio::spawn(async move {
        let mut seen = vec![false; events];
        let mut latencies = Vec::with_capacity(events);
        // The selected session's (`ses_0`: every event `n` with `n % sessions == 0`).
        let mut shown = Vec::with_capacity(events / sessions + 1);
        let mut lines_read = 0usize;
        while latencies.len() < events {
            let Ok(Some(line)) = lines.next_line().await else { break };
            let at = now();
            lines_read += 1;
            let Ok(map) = reader_written.lock() else { break };
            for n in marks(&line) {
                if let (Some(false), Some(Some(t))) = (seen.get(n), map.get(n)) {
                    seen[n] = true;
                    let ms = at.duration_since(*t).as_secs_f64() * 1000.0;
                    latencies.push(ms);
                    if n % sessions == 0 {
                        shown.push(ms);
                    }
                }
            }
        }
        (latencies, shown, lines_read, now())
    });
    let started = now();
    for n in 0..run.events {
        let due = started + run.gap * u32::try_from(n).unwrap_or(u32::MAX);
        tokio::time::sleep_until(tokio::time::Instant::from_std(due)).await;
        if let Ok(mut m) = written.lock() {
            m[n] = Some(now());
        }
        feed.write(n, n % run.sessions)
            .await
            .with_context(|| format!("writing event {n} to the sidecar's event stream"))?;
    }
    let written_for = now().duration_since(started).as_secs_f64();
    let (latencies, mut shown, lines_read, done) =
        tokio::time::timeout(Duration::from_secs(10), reader)
            .await
            .unwrap_or_else(|_| Ok((Vec::new(), Vec::new(), 0, now())))?;
    shown.sort_by(f64::total_cmp);
    let used = Sample::of(pid).since(before);
    let ticks = procfs::cpu_seconds(pid) - ticks_before;
    let elapsed = done.duration_since(started).as_secs_f64();
    let peak = procfs::status_bytes(pid, "VmHWM:");
    let mut sorted = latencies;
    sorted.sort_by(f64::total_cmp);
    let per_event = |x: f64| x / run.events.max(1) as f64;
    let line = json!({
        "measure": run.name,
        "engine": shape.name(),
        "receive": receive,
        "sessions": run.sessions,
        "events": run.events,
        "eventsPerSec": run.events as f64 / written_for,
        "delivered": sorted.len(),
        "linesOut": lines_read,
        "latencyMsP50": percentile(&sorted, 50.0),
        "latencyMsP99": percentile(&sorted, 99.0),
        "latencyMsMax": sorted.last().copied().unwrap_or(0.0),
        "selectedLatencyMsP50": percentile(&shown, 50.0),
        "selectedLatencyMsP99": percentile(&shown, 99.0),
        "sidecarCpuSeconds": used.cpu_ns as f64 / 1e9,
        "sidecarCpuSecondsTicks": ticks,
        "sidecarCpuPercent": used.cpu_ns as f64 / 1e9 / elapsed * 100.0,
        "idleCpuPercent": idle.cpu_ns as f64 / 1e9 / IDLE_SAMPLE.as_secs_f64() * 100.0,
        "idleWakeupsPerSec": idle.voluntary as f64 / IDLE_SAMPLE.as_secs_f64(),
        "cpuUsPerEvent": per_event(used.cpu_ns as f64 / 1e3),
        "wakeupsPerEvent": per_event(used.voluntary as f64),
        "preemptionsPerEvent": per_event(used.involuntary as f64),
        "threads": used.threads,
        "sidecarPeakRssBytes": peak,
    });
    println!("{line}");
    drop(feed);
    let mut child = sidecar.child;
    drop(sidecar.stdin);
    let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    let _ = child.kill().await;
    Ok(())
}

/// Reads lines until the response to `id` and a `bb/events` message of tab `tab` with
/// `resync: true`; returns that message's payload and the response.
async fn resync_of(sidecar: &mut Sidecar, id: &str, tab: &str) -> anyhow::Result<(Value, Value)> {
    let (mut payload, mut response) = (None, None);
    while payload.is_none() || response.is_none() {
        let line = sidecar.lines.next_line().await?.context("sidecar closed stdout")?;
        let mut message: Value = serde_json::from_str(&line)?;
        if message["kind"] == "res" && message["id"] == id {
            response = Some(message);
        } else if message["topic"] == "bb/events"
            && message["payload"]["tabId"] == tab
            && message["payload"]["resync"] == true
        {
            payload = Some(message["payload"].take());
        }
    }
    Ok((payload.unwrap_or_default(), response.unwrap_or_default()))
}

/// Bytes of a list of updates as JSON.
fn json_bytes(v: &Value) -> usize {
    serde_json::to_string(v).map_or(0, |s| s.len())
}

/// A long session opened by a new tab: see the module doc.
async fn attach(sidecar_bin: &Path, turns: usize) -> anyhow::Result<()> {
    let engine = FakeEngine::start(Shape::Kilo, 1).await?;
    let workspace = tempfile::tempdir()?;
    let state = tempfile::tempdir()?;
    let ws = workspace.path().to_string_lossy().into_owned();
    let state_dir = state.path().to_string_lossy().into_owned();
    let args = ["--engine", "kilo", "--engine-url", &engine.url, "--workspace", &ws];
    let mut sidecar =
        Sidecar::spawn(sidecar_bin, &[&args[..], &["--state-dir", &state_dir]].concat())?;
    sidecar.call("init", "bb.init", json!({"receive": "updates"})).await.context("bb.init")?;
    let mut feed = Feed::collect(&engine, 1).await?;
    sidecar.call("sel-a", "bb.selectSession", json!({"sessionId": "ses_0", "tabId": "a"})).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pid = sidecar.pid();
    let rss_before = procfs::status_bytes(pid, "VmRSS:");
    // The growth split: anonymous pages (the heap) and file pages (the binary's code the
    // stream touched, which depends on the link order).
    let anon_before = procfs::status_bytes(pid, "RssAnon:");
    let file_before = procfs::status_bytes(pid, "RssFile:");
    let streamed = now();
    let engine_bytes = feed.write_turns(turns).await.context("writing the session")?;
    // Tab `a` reads the session as it streams, to its last reply.
    let mut tab_a_bytes = 0usize;
    let mut tab_a_messages = 0usize;
    loop {
        let line = tokio::time::timeout(Duration::from_secs(120), sidecar.lines.next_line())
            .await
            .context("the session's last reply never reached tab a")??
            .context("sidecar closed stdout")?;
        if line.contains("\"bb/events\"") {
            tab_a_bytes += line.len() + 1;
            tab_a_messages += 1;
        }
        if line.contains("@end;") {
            break;
        }
    }
    let streamed_s = now().duration_since(streamed).as_secs_f64();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_after = procfs::status_bytes(pid, "VmRSS:");
    let anon_grown = procfs::status_bytes(pid, "RssAnon:").saturating_sub(anon_before);
    let file_grown = procfs::status_bytes(pid, "RssFile:").saturating_sub(file_before);
    // A new window: tab `b` opens the session.
    let before = Sample::of(pid);
    let asked = now();
    sidecar
        .request("sel-b", "bb.selectSession", json!({"sessionId": "ses_0", "tabId": "b"}))
        .await?;
    let (first, response) = resync_of(&mut sidecar, "sel-b", "b").await?;
    let attach_ms = now().duration_since(asked).as_secs_f64() * 1000.0;
    let attach_cpu = Sample::of(pid).since(before);
    if response["ok"] != true {
        bail!("bb.selectSession failed: {response}");
    }
    let first_bytes = json_bytes(&first["updates"]);
    let first_updates = first["updates"].as_array().map_or(0, Vec::len);
    let first_turns = first["updates"]
        .as_array()
        .map_or(0, |u| u.iter().filter(|u| u["kind"] == "userMessage").count());
    let left_out = first["earlier"]["turns"].as_u64().unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_attached = procfs::status_bytes(pid, "VmRSS:");
    // Every older page, to the start: the session's JSON as updates.
    let mut session_bytes = first_bytes;
    let mut pages = 0usize;
    let mut page_ms = Vec::new();
    let mut before_cursor = first["earlier"]["before"].as_u64();
    while let Some(cursor) = before_cursor {
        pages += 1;
        let id = format!("hist-{pages}");
        let asked = now();
        sidecar.request(&id, "bb.history", json!({"sessionId": "ses_0", "before": cursor})).await?;
        let response = sidecar.response(&id).await?;
        page_ms.push(now().duration_since(asked).as_secs_f64() * 1000.0);
        if response["ok"] != true {
            bail!("bb.history failed: {response}");
        }
        session_bytes += json_bytes(&response["result"]["updates"]);
        before_cursor = response["result"]["earlier"]["before"].as_u64();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_paged = procfs::status_bytes(pid, "VmRSS:");
    let grown = rss_after.saturating_sub(rss_before);
    let per_json = |rss: u64| rss.saturating_sub(rss_before) as f64 / session_bytes.max(1) as f64;
    let line = json!({
        "measure": "attach",
        "engine": "kilo",
        "turns": turns,
        "messages": turns * 2,
        "engineBytes": engine_bytes,
        "streamedSeconds": streamed_s,
        "attachMs": attach_ms,
        "attachCpuMs": attach_cpu.cpu_ns as f64 / 1e6,
        "firstPageBytes": first_bytes,
        "firstPageUpdates": first_updates,
        "firstPageTurns": first_turns,
        "turnsLeftOut": left_out,
        "historyPages": pages,
        "historyPageMsMedian": median(page_ms.clone()),
        "historyPageMsMax": page_ms.iter().copied().fold(0.0, f64::max),
        "sessionJsonBytes": session_bytes,
        "rssBeforeBytes": rss_before,
        "rssAfterBytes": rss_after,
        "rssGrowthBytes": grown,
        "rssGrowthPerSessionJson": grown as f64 / session_bytes.max(1) as f64,
        "rssAnonGrowthBytes": anon_grown,
        "rssAnonGrowthPerSessionJson": anon_grown as f64 / session_bytes.max(1) as f64,
        "rssFileGrowthBytes": file_grown,
        "rssAttachedBytes": rss_attached,
        "rssAttachedPerSessionJson": per_json(rss_attached),
        "rssPagedBytes": rss_paged,
        "rssPagedPerSessionJson": per_json(rss_paged),
        "tabARingBytes": tab_a_bytes,
        "tabAMessages": tab_a_messages,
    });
    println!("{line}");
    drop(feed);
    sidecar.stop().await;
    Ok(())
}
