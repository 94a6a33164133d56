//! `bb-harness bench-e2e`: end-to-end figures of a built `bb-sidecar`, measured from outside
//! over its stdio. Prints one JSON line per measurement.
//!
//! * `coldStart`: spawn `bb-sidecar --engine demo`, write `bb.init` at once, time to its
//!   response line; then the resident set after 1 s idle (`VmRSS`). Median of the runs.
//! * `latency`: the sidecar attached (`--engine kilo --engine-url`) to a fake Kilo server in
//!   this process whose event writes are timed here: bridge-added latency from the write of
//!   each `message.part.delta` to the stdout line that carries its text (coalesced deltas
//!   count each of their parts). `sparse`: one event per 100 ms (each should leave at once);
//!   `dense`: one per millisecond on the selected session (published at the 33 ms cadence).
//! * `load`: N sessions streaming at once at the same total rate (5,000 events/s for 4 s):
//!   the sidecar's CPU time (`/proc/PID/stat`) and peak resident set (`VmHWM`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use bb_host::Clock;
use bb_service::SystemClock;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::{Mutex, mpsc};

/// Arguments of `bench-e2e`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
    /// The `bb-sidecar` binary to measure.
    #[arg(long)]
    sidecar: PathBuf,
    /// Cold-start runs (median reported).
    #[arg(long, default_value_t = 5)]
    runs: usize,
}

fn now() -> Instant {
    SystemClock.now()
}

/// Runs every measurement.
pub(crate) async fn run(args: BenchArgs) -> anyhow::Result<()> {
    cold_start(&args.sidecar, args.runs).await?;
    let engine = FakeKilo::start().await?;
    latency(&args.sidecar, &engine, "sparse", 100, Duration::from_millis(100), 1).await?;
    latency(&args.sidecar, &engine, "dense", 3000, Duration::from_millis(1), 1).await?;
    for sessions in [10, 100] {
        latency(&args.sidecar, &engine, "load", 20_000, Duration::from_micros(200), sessions)
            .await?;
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
        .env("RUST_LOG", "warn")
        .kill_on_drop(true);
    command
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

    fn pid(&self) -> u32 {
        self.child.id().unwrap_or(0)
    }

    async fn stop(mut self) {
        drop(self.stdin);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
        let _ = self.child.kill().await;
    }
}

fn proc_status(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| {
                v.trim().trim_end_matches("kB").trim().parse::<u64>().ok().map(|kb| kb * 1024)
            })
        })
        .unwrap_or(0)
}

/// utime + stime of a process, in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return 0.0 };
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { return 0.0 };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = [11, 12].iter().filter_map(|&i| fields.get(i)?.parse::<u64>().ok()).sum();
    ticks as f64 / 100.0
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
        idle.push(proc_status(sidecar.pid(), "VmRSS:") as f64);
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

/// One run: `events` deltas `gap` apart, round-robin over `sessions` sessions (the first
/// one selected).
async fn latency(
    sidecar: &Path,
    engine: &FakeKilo,
    name: &str,
    events: usize,
    gap: Duration,
    sessions: usize,
) -> anyhow::Result<()> {
    let workspace = tempfile::tempdir()?;
    let ws = workspace.path().to_string_lossy().into_owned();
    let url = engine.url.clone();
    let mut sidecar =
        Sidecar::spawn(sidecar, &["--engine", "kilo", "--engine-url", &url, "--workspace", &ws])?;
    let stream = engine.next_stream();
    sidecar.request("init", "bb.init", json!({})).await?;
    sidecar.response("init").await?;
    let mut sink = stream.await.context("the sidecar never opened GET /event")?;
    sidecar.request("sel", "bb.selectSession", json!({"sessionId": "ses_0"})).await?;
    sidecar.response("sel").await?;
    let pid = sidecar.pid();
    let cpu_before = cpu_seconds(pid);
    // Written-at per event number; the reader matches the numbers in the published text.
    let written: Arc<std::sync::Mutex<HashMap<usize, Instant>>> = Arc::default();
    let reader_written = written.clone();
    let mut lines = sidecar.lines;
    let reader = tokio::spawn(async move {
        let mut latencies = Vec::with_capacity(events);
        while latencies.len() < events {
            let Ok(Some(line)) = lines.next_line().await else { break };
            let at = now();
            if !line.contains("message.part.delta") {
                continue;
            }
            let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
            let Some(items) = message["payload"]["events"].as_array() else { continue };
            let Ok(map) = reader_written.lock() else { break };
            for item in items {
                let text = item["payload"]["delta"].as_str().unwrap_or_default();
                for n in text.split(';').filter_map(|n| n.parse::<usize>().ok()) {
                    if let Some(t) = map.get(&n) {
                        latencies.push(at.duration_since(*t).as_secs_f64() * 1000.0);
                    }
                }
            }
        }
        latencies
    });
    let started = now();
    for n in 0..events {
        let due = started + gap * u32::try_from(n).unwrap_or(u32::MAX);
        tokio::time::sleep_until(tokio::time::Instant::from_std(due)).await;
        let session = n % sessions;
        let event = json!({"id": format!("evt_{n}"), "type": "message.part.delta", "properties": {
            "sessionID": format!("ses_{session}"), "messageID": format!("msg_{session}"),
            "partID": "prt_1", "field": "text", "delta": format!("{n};")}});
        let frame = format!("data: {event}\n\n");
        if let Ok(mut m) = written.lock() {
            m.insert(n, now());
        }
        sink.write_all(frame.as_bytes()).await?;
    }
    let latencies = tokio::time::timeout(Duration::from_secs(10), reader)
        .await
        .context("the sidecar did not publish every event")??;
    let elapsed = now().duration_since(started).as_secs_f64();
    let cpu = cpu_seconds(pid) - cpu_before;
    let peak = proc_status(pid, "VmHWM:");
    let mut sorted = latencies;
    sorted.sort_by(f64::total_cmp);
    let line = json!({
        "measure": name,
        "sessions": sessions,
        "events": events,
        "eventsPerSec": events as f64 / elapsed,
        "delivered": sorted.len(),
        "latencyMsP50": percentile(&sorted, 50.0),
        "latencyMsP99": percentile(&sorted, 99.0),
        "latencyMsMax": sorted.last().copied().unwrap_or(0.0),
        "sidecarCpuSeconds": cpu,
        "sidecarCpuPercent": cpu / elapsed * 100.0,
        "sidecarPeakRssBytes": peak,
    });
    println!("{line}");
    drop(sink);
    let mut child = sidecar.child;
    drop(sidecar.stdin);
    let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    let _ = child.kill().await;
    Ok(())
}

/// A fake Kilo server: canned REST answers, and `GET /event` streams handed to the bench.
struct FakeKilo {
    url: String,
    streams: Arc<Mutex<mpsc::Receiver<TcpStream>>>,
}

impl FakeKilo {
    async fn start() -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let (tx, rx) = mpsc::channel(4);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let tx = tx.clone();
                tokio::spawn(serve(socket, tx));
            }
        });
        Ok(Self { url, streams: Arc::new(Mutex::new(rx)) })
    }

    /// The next `GET /event` connection, with its SSE head written.
    fn next_stream(&self) -> impl Future<Output = Option<TcpStream>> + use<> {
        let streams = self.streams.clone();
        async move {
            let mut rx = streams.lock().await;
            tokio::time::timeout(Duration::from_secs(30), rx.recv()).await.ok().flatten()
        }
    }
}

async fn serve(mut socket: TcpStream, streams: mpsc::Sender<TcpStream>) {
    let _ = socket.set_nodelay(true);
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match socket.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let target = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let path = target.split('?').next().unwrap_or("/");
    if path == "/event" {
        let start = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\ndata: {\"type\":\"server.connected\",\"properties\":{}}\n\n";
        if socket.write_all(start.as_bytes()).await.is_ok() {
            let _ = streams.send(socket).await;
        }
        return;
    }
    let body = match path {
        "/global/health" => json!({"healthy": true, "version": "7.7.9"}),
        "/session" | "/permission" => json!([]),
        p if p.ends_with("/message") => json!([]),
        "/session/status" | "/config" => json!({}),
        p if p.starts_with("/session/") => {
            let id = p.trim_start_matches("/session/");
            json!({"id": id, "title": "bench", "time": {"created": 1, "updated": 1}})
        }
        _ => json!({}),
    }
    .to_string();
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = socket.write_all(response.as_bytes()).await;
    let _ = socket.shutdown().await;
}
