//! `bb-harness floor-relay`: the least a process can do for what `bench-e2e` measures of a
//! sidecar, to show the floor of the machine. It answers every request line with `ok` and
//! relays each engine event's data as one line, on one thread, stdin and stdout driven by the
//! reactor. No parsing beyond finding the events, no batching, no validation: `bench-e2e
//! --sidecar` pointed at a script that runs it gives the CPU per event of this floor under the
//! same load.
//!
//! - Kilo shape (`--engine kilo`, the default): it reads the engine's one `GET /event` stream
//!   and writes each wake-up's events the moment they arrive (one wake-up, one read and one
//!   write per event when they come apart).
//! - BreadBoard shape (`--engine breadboard`): each `bb.selectSession` opens that session's
//!   `GET /v1/sessions/{id}/events` stream (chunked, as the engine writes it), one task per
//!   stream, as the sidecar does; the events a wake-up's tasks find are written with one write.
//!
//! With `BB_GATHER_MS` set (the variable that sets the sidecar's pacing pause), its thread
//! sleeps that long before it parks after a wake-up that wrote events, as the sidecar's paced
//! thread may (a park hook, so every task ready in that wake-up has run first): the floor of
//! a relay that gathers for as long as the sidecar may, so each wake-up reads what arrived
//! meanwhile.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::unix::pipe;
use tokio::sync::Notify;

/// Arguments: the sidecar's, of which only `--engine` and `--engine-url` are read.
#[derive(Debug, clap::Args)]
pub(crate) struct FloorArgs {
    /// The sidecar's flags.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

impl FloorArgs {
    fn flag(&self, name: &str) -> Option<&str> {
        self.args.iter().skip_while(|a| *a != name).nth(1).map(String::as_str)
    }
}

/// What a wake-up's stream tasks found, and the wake-up of the writer.
#[derive(Default)]
struct Found {
    lines: Mutex<Vec<u8>>,
    ready: Notify,
}

/// Set when a wake-up wrote events; the park hook pauses once for it.
static WROTE: AtomicBool = AtomicBool::new(false);

/// Runs the relay on one thread, paced as `BB_GATHER_MS` says, until stdin closes.
pub(crate) fn main(args: FloorArgs) -> anyhow::Result<()> {
    let gather = std::env::var("BB_GATHER_MS")
        .ok()
        .and_then(|ms| ms.trim().parse::<u64>().ok())
        .map(Duration::from_millis)
        .filter(|pause| !pause.is_zero());
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(move || {
            if let Some(pause) = gather
                && WROTE.swap(false, Ordering::Relaxed)
            {
                std::thread::sleep(pause);
            }
        })
        .build()?
        .block_on(run(args))
}

async fn run(args: FloorArgs) -> anyhow::Result<()> {
    let url =
        args.flag("--engine-url").ok_or_else(|| anyhow::anyhow!("--engine-url URL is required"))?;
    let addr = url.trim_start_matches("http://").trim_end_matches('/').to_owned();
    let breadboard = args.flag("--engine") == Some("breadboard");
    let stdin = pipe::OpenOptions::new().open_receiver("/proc/self/fd/0")?;
    let mut out = pipe::OpenOptions::new().open_sender("/proc/self/fd/1")?;
    let mut requests = BufReader::new(stdin).lines();
    let found = Arc::new(Found::default());
    if !breadboard {
        tokio::spawn(relay(open(&addr, "/event").await?, false, found.clone()));
    }
    let mut batch = Vec::new();
    loop {
        tokio::select! {
            request = requests.next_line() => {
                let Some(request) = request? else { return Ok(()) };
                let request: serde_json::Value = serde_json::from_str(&request)?;
                if breadboard && request["method"] == "bb.selectSession" {
                    let session = request["params"]["sessionId"].as_str().unwrap_or_default();
                    let path = format!("/v1/sessions/{session}/events");
                    tokio::spawn(relay(open(&addr, &path).await?, true, found.clone()));
                }
                let response = serde_json::json!({"v": 1, "kind": "res", "id": request["id"],
                    "ok": true, "result": {}});
                out.write_all(format!("{response}\n").as_bytes()).await?;
            }
            () = found.ready.notified() => {
                std::mem::swap(&mut batch, &mut *found.lines.lock().unwrap_or_else(PoisonError::into_inner));
                if !batch.is_empty() {
                    out.write_all(&batch).await?;
                    batch.clear();
                    WROTE.store(true, Ordering::Relaxed);
                }
            }
        }
    }
}

async fn open(addr: &str, path: &str) -> anyhow::Result<TcpStream> {
    let mut engine = TcpStream::connect(addr).await?;
    engine.set_nodelay(true)?;
    engine.write_all(format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\n\r\n").as_bytes()).await?;
    Ok(engine)
}

/// Reads one stream until it ends and hands each event's data as an envelope line.
async fn relay(mut engine: TcpStream, chunked: bool, found: Arc<Found>) -> anyhow::Result<()> {
    let (mut buf, mut raw, mut sse) = (vec![0u8; 64 * 1024], Vec::new(), Vec::new());
    let mut in_body = false;
    let (event_end, data_line) =
        (memchr::memmem::Finder::new(b"\n\n"), memchr::memmem::Finder::new(b"\ndata: "));
    loop {
        let n = engine.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        raw.extend_from_slice(&buf[..n]);
        if !in_body {
            let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
            raw.drain(..end + 4);
            in_body = true;
        }
        if chunked {
            // `{size:x}\r\n{body}\r\n`, as many as have arrived whole.
            let mut at = 0;
            while let Some(eol) = raw[at..].windows(2).position(|w| w == b"\r\n") {
                let size = std::str::from_utf8(&raw[at..at + eol])
                    .ok()
                    .and_then(|s| usize::from_str_radix(s.trim(), 16).ok())
                    .ok_or_else(|| anyhow::anyhow!("bad chunk size"))?;
                let body = at + eol + 2;
                if raw.len() < body + size + 2 {
                    break;
                }
                sse.extend_from_slice(&raw[body..body + size]);
                at = body + size + 2;
            }
            raw.drain(..at);
        } else {
            sse.append(&mut raw);
        }
        let mut lines = found.lines.lock().unwrap_or_else(PoisonError::into_inner);
        let before = lines.len();
        let mut at = 0;
        while let Some(end) = event_end.find(&sse[at..]) {
            let event = &sse[at..at + end];
            let data = match event.strip_prefix(b"data: ") {
                Some(data) => Some(data),
                None => data_line.find(event).map(|at| &event[at + 7..]),
            };
            if let Some(data) = data.map(|d| &d[..memchr::memchr(b'\n', d).unwrap_or(d.len())]) {
                lines.extend_from_slice(
                    b"{\"v\":1,\"kind\":\"evt\",\"topic\":\"bb/events\",\"payload\":",
                );
                lines.extend_from_slice(data);
                lines.extend_from_slice(b"}\n");
            }
            at += end + 2;
        }
        sse.drain(..at);
        let wrote = lines.len() > before;
        drop(lines);
        if wrote {
            found.ready.notify_one();
        }
    }
}
