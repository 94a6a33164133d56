//! `bb-harness ingest`: replays an engine SSE capture through the bridge's own event path,
//! in process, and prints one JSON line of throughput figures.
//!
//! The path is the sidecar's: the bytes in 16 KiB chunks through the engine client's SSE
//! parser, the engine's routing and event decoding (Kilo: `kilo::route`; BreadBoard:
//! `BbEvent::parse`), the adapter's event mapping and the
//! host core (`bb_service::Ingest`: batching, coalescing, state), and the stdio bridge's
//! envelope encoding (`bb_bridge_stdio::encode`, validation included) into a sink that only
//! counts bytes. Simulated time advances 1 ms per chunk and due batches are published after
//! each chunk, so a session flushes at most once per chunk. The webview has called `bb.init`
//! and selected the first session that streams. The file is read in chunks, never whole:
//! memory stays flat in the number of events.

use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bb_engine_client::breadboard::{BbEvent, StreamUpdate};
use bb_engine_client::kilo::{self, KiloUpdate};
use bb_engine_client::sse::{SseItem, SseParser};
use bb_host::{Clock, HostConfig};
use bb_protocol::Limits;
use bb_protocol::v1::EngineKind;
use bb_service::{Ingest, SystemClock};
use serde::Serialize;

use crate::normalize::EngineArg;

/// Bytes per read, as a socket read would deliver them.
const CHUNK: usize = 16 * 1024;

/// What the run measured.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Report {
    /// Engine events dispatched by the SSE parser.
    pub(crate) events: u64,
    /// `bb/*` envelopes written.
    pub(crate) published: u64,
    /// Bytes written, newlines included.
    pub(crate) bytes_out: u64,
    /// Wall time of the whole run.
    pub(crate) seconds: f64,
    /// `events / seconds`.
    pub(crate) events_per_sec: f64,
    /// Peak resident set of the process (`VmHWM`), 0 where unknown.
    pub(crate) peak_rss_bytes: u64,
}

/// The engine side of the path: routing and decoding of each SSE event.
enum Engine {
    Kilo,
    BreadBoard,
}

struct Replay {
    engine: Engine,
    ingest: Ingest,
    limits: Limits,
    selected: bool,
    report: Report,
}

impl Replay {
    fn event(&mut self, last_event_id: &str, data: String, now: Instant) {
        self.report.events += 1;
        match &mut self.engine {
            Engine::Kilo => {
                let update = kilo::route(data);
                if let KiloUpdate::Event { session_id, .. } = &update {
                    select_first(&mut self.ingest, &mut self.selected, session_id, now);
                }
                self.ingest.kilo(update, now);
            }
            Engine::BreadBoard => {
                // The session stream's resume cursor (an integer compare) is left out: a
                // cycled capture repeats its `seq`s, which the cursor would drop.
                let Ok(event) = BbEvent::parse(last_event_id, &data) else { return };
                let session = event.session_id.clone();
                select_first(&mut self.ingest, &mut self.selected, &session, now);
                self.ingest.breadboard(&session, StreamUpdate::Event(event), now);
            }
        }
    }

    fn drain(&mut self) {
        while let Some(message) = self.ingest.poll_output() {
            if let Some(line) = bb_bridge_stdio::encode(message, &self.limits) {
                self.report.published += 1;
                self.report.bytes_out += line.len() as u64 + 1;
            }
        }
    }
}

fn select_first(ingest: &mut Ingest, selected: &mut bool, session: &str, now: Instant) {
    if !*selected {
        *selected = true;
        ingest.select(session, now);
    }
}

/// Runs the subcommand.
pub(crate) fn run(engine: EngineArg, repeat: u32, file: &Path) -> anyhow::Result<()> {
    let report = replay(engine, repeat, file)?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

/// Replays `file` `repeat` times (one stream, as if the engine sent it that often).
pub(crate) fn replay(engine: EngineArg, repeat: u32, file: &Path) -> anyhow::Result<Report> {
    let clock = SystemClock;
    let started = clock.now();
    let kind = match engine {
        EngineArg::Kilo => EngineKind::Kilo,
        EngineArg::Breadboard => EngineKind::Breadboard,
    };
    let mut replay = Replay {
        engine: match engine {
            EngineArg::Kilo => Engine::Kilo,
            EngineArg::Breadboard => Engine::BreadBoard,
        },
        ingest: Ingest::new(kind, HostConfig::default(), started),
        limits: Limits::default(),
        selected: false,
        report: Report::default(),
    };
    let mut parser = SseParser::default();
    let mut items = Vec::with_capacity(64);
    let mut buf = vec![0u8; CHUNK];
    let mut now = started;
    for _ in 0..repeat.max(1) {
        let mut input =
            std::fs::File::open(file).with_context(|| format!("opening {}", file.display()))?;
        let mut ends_blank = true;
        loop {
            let n = read_full(&mut input, &mut buf)?;
            if n == 0 {
                break;
            }
            ends_blank = buf[..n].ends_with(b"\n\n");
            now += Duration::from_millis(1);
            parser.feed(&buf[..n], &mut items).context("parsing the SSE stream")?;
            for item in items.drain(..) {
                if let SseItem::Event(e) = item {
                    replay.event(&e.last_event_id, e.data, now);
                }
            }
            replay.ingest.tick(now);
            replay.drain();
        }
        // A capture that ends without a blank line still holds a complete last event.
        if !ends_blank {
            parser.feed(b"\n\n", &mut items).context("parsing the SSE stream")?;
            for item in items.drain(..) {
                if let SseItem::Event(e) = item {
                    replay.event(&e.last_event_id, e.data, now);
                }
            }
        }
    }
    // The stream ended: whatever is pending goes out at the latest cadence.
    now += Duration::from_secs(1);
    replay.ingest.tick(now);
    replay.drain();
    let mut report = replay.report;
    report.seconds = clock.now().duration_since(started).as_secs_f64();
    report.events_per_sec =
        if report.seconds > 0.0 { report.events as f64 / report.seconds } else { 0.0 };
    report.peak_rss_bytes = peak_rss();
    Ok(report)
}

/// Fills `buf` as far as the file allows (a short read only at the end).
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// `VmHWM` of this process, in bytes (Linux); 0 elsewhere.
fn peak_rss() -> u64 {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else { return 0 };
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}
