//! `bb-harness ingest`: replays an engine SSE capture through the bridge's own event path,
//! in process, and prints one JSON line of throughput figures.
//!
//! The path is the sidecar's, stage by stage and on the sidecar's one runtime thread, each
//! stage a task handing its output to the next over a channel of the capacity the sidecar
//! uses:
//!
//! * the reader, as the Kilo router task or a BreadBoard stream task: the bytes in 16 KiB
//!   chunks through the engine client's SSE parser, then the engine's routing and event
//!   decoding (Kilo: the router's `bb_kilo::client::Routing`; BreadBoard: `BbEvent::parse` and the
//!   adapter's mapping);
//! * Kilo only, the pump: the adapter's event mapping (`bb_kilo::Mapping`);
//! * the service loop's engine side (`bb_service::Ingest`): routing into the host core
//!   (batching, coalescing, tabs, state) and the envelopes it publishes;
//! * the stdio writer: the envelope encoding (`bb_bridge_stdio::encode`, validation
//!   included) into a sink that only counts bytes.
//!
//! Simulated time advances 1 ms per chunk and travels with the updates; due batches are
//! published after each chunk, so a session flushes at most once per chunk and the output
//! does not depend on how the stages interleave. `--serial` runs the same stages one after
//! the other on one thread (same output; for profiling, and for the CPU cost alone). The
//! webview has called `bb.init` (receiving events, or with `--receive updates|both` the
//! view-model updates the host's reducers make) and selected the first session that streams. The file is
//! read in chunks, never whole: memory stays flat in the number of events.

use std::io::{Read, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bb_breadboard::client::{BbEvent, StreamUpdate};
use bb_engine_client::sse::{SseItem, SseParser};
use bb_host::Input;
use bb_host::{Clock, HostConfig};
use bb_kilo::client::{KiloUpdate, Routing};
use bb_protocol::v1::{EngineKind, Receive};
use bb_protocol::{Limits, V1Message};
use bb_service::sink::OUTBOUND_CAPACITY;
use bb_service::{Ingest, SystemClock};
use serde::Serialize;
use tokio::sync::mpsc;

use crate::normalize::EngineArg;

/// Bytes per read, as a socket read would deliver them.
const CHUNK: usize = 16 * 1024;

/// Capacity of the pipelined replay's channel from the Kilo router to its pump (the
/// router's update channel before the pump ran in the router's task).
const PUMP_CAPACITY: usize = 1024;

/// `--receive`: what the webview asks `bb/events` to carry.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum ReceiveArg {
    /// Engine events (the default of a webview that says nothing).
    Events,
    /// The updates of the host's reducers only.
    Updates,
    /// Both.
    Both,
}

impl From<ReceiveArg> for Receive {
    fn from(r: ReceiveArg) -> Self {
        match r {
            ReceiveArg::Events => Receive::Events,
            ReceiveArg::Updates => Receive::Updates,
            ReceiveArg::Both => Receive::Both,
        }
    }
}

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
    /// CPU time (user + system, every thread) of the whole run.
    pub(crate) cpu_seconds: f64,
    /// `events / seconds`.
    pub(crate) events_per_sec: f64,
    /// Peak resident set of the process (`VmHWM`), 0 where unknown.
    pub(crate) peak_rss_bytes: u64,
}

/// What flows between the stages besides the updates themselves: the simulated clock and
/// the webview's one selection.
#[derive(Debug)]
enum Step<T> {
    /// An update for the next stage.
    Item(T),
    /// The webview selects this session (the first one that streams), before its first update.
    Select(String),
    /// A chunk arrived: the clock reads this from now on.
    Now(Instant),
    /// The chunk was handled: publish what is due.
    Tick,
}

/// How the reader turns one SSE event (last event id, data) into steps; `selected` is set
/// once a session was selected.
type Decode<'a, T> = dyn FnMut(&str, String, &mut Vec<Step<T>>, &mut bool) + Send + 'a;

/// The reading end: the capture in 16 KiB chunks through the SSE parser, each chunk's steps
/// handed on at once.
struct Reader {
    parser: SseParser,
    items: Vec<SseItem>,
    buf: Vec<u8>,
    file: PathBuf,
    input: Option<std::fs::File>,
    rounds_left: u32,
    ends_blank: bool,
    done: bool,
    now: Instant,
    selected: bool,
    events: u64,
}

impl Reader {
    fn new(file: &Path, repeat: u32, now: Instant) -> Self {
        Self {
            parser: SseParser::default(),
            items: Vec::with_capacity(64),
            buf: vec![0u8; CHUNK],
            file: file.to_owned(),
            input: None,
            rounds_left: repeat.max(1),
            ends_blank: true,
            done: false,
            now,
            selected: false,
            events: 0,
        }
    }

    /// The next chunk's steps into `out`; `false` once the capture (every round of it) and
    /// the final flush were handed out.
    fn next_chunk<T>(
        &mut self,
        out: &mut Vec<Step<T>>,
        decode: &mut Decode<'_, T>,
    ) -> anyhow::Result<bool> {
        while !self.done {
            let Some(input) = &mut self.input else {
                if self.rounds_left == 0 {
                    // The stream ended: whatever is pending goes out at the latest cadence.
                    self.done = true;
                    self.now += Duration::from_secs(1);
                    out.extend([Step::Now(self.now), Step::Tick]);
                    return Ok(true);
                }
                self.rounds_left -= 1;
                let file = &self.file;
                let opened = std::fs::File::open(file)
                    .with_context(|| format!("opening {}", file.display()))?;
                self.input = Some(opened);
                continue;
            };
            let n = read_full(input, &mut self.buf)?;
            if n == 0 {
                self.input = None;
                // A capture that ends without a blank line still holds a complete last event.
                if !std::mem::replace(&mut self.ends_blank, true) {
                    self.parser.feed(b"\n\n", &mut self.items).context("parsing the SSE stream")?;
                    self.decode_items(out, decode);
                }
                continue;
            }
            self.ends_blank = self.buf[..n].ends_with(b"\n\n");
            self.now += Duration::from_millis(1);
            out.push(Step::Now(self.now));
            self.parser.feed(&self.buf[..n], &mut self.items).context("parsing the SSE stream")?;
            self.decode_items(out, decode);
            out.push(Step::Tick);
            return Ok(true);
        }
        Ok(false)
    }

    fn decode_items<T>(&mut self, out: &mut Vec<Step<T>>, decode: &mut Decode<'_, T>) {
        for item in self.items.drain(..) {
            if let SseItem::Event(e) = item {
                self.events += 1;
                decode(&e.last_event_id, e.data, out, &mut self.selected);
            }
        }
    }
}

/// The Kilo router's decoding: its `Routing`.
fn kilo_decode(
    routing: &mut Routing,
) -> impl FnMut(&str, String, &mut Vec<Step<KiloUpdate>>, &mut bool) + Send + '_ {
    move |_, data, out, selected| {
        let update = routing.route(data);
        // The first session is read once, as the webview's selection (the mapping reads
        // every event's session itself).
        if !*selected
            && let KiloUpdate::Event { event } = &update
            && let Some(session) = event.session()
        {
            select_first(&session, out, selected);
        }
        out.push(Step::Item(update));
    }
}

/// A BreadBoard stream task's decoding and mapping.
fn breadboard_decode(
    mapping: &mut bb_breadboard::Mapping,
) -> impl FnMut(&str, String, &mut Vec<Step<Input>>, &mut bool) + Send + '_ {
    move |last_event_id, data, out, selected| {
        // The session stream's resume cursor (an integer compare) is left out: a cycled
        // capture repeats its `seq`s, which the cursor would drop.
        let Ok(event) = BbEvent::parse(last_event_id, &data) else { return };
        // A stream task knows its session; a capture may hold several, so each event's is
        // read from its envelope here.
        let session = session_of(&data);
        select_first(&session, out, selected);
        let updates = mapping.map(&session, StreamUpdate::Event(event));
        out.extend(updates.into_iter().map(Step::Item));
    }
}

/// The envelope's `session_id` (empty when absent or not a string, as the bridge read it
/// when the event kept it).
fn session_of(data: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow, default)]
        session_id: std::borrow::Cow<'a, str>,
    }
    serde_json::from_str::<Envelope<'_>>(data)
        .map(|e| e.session_id.into_owned())
        .unwrap_or_default()
}

fn select_first<T>(session: &str, out: &mut Vec<Step<T>>, selected: &mut bool) {
    if !*selected {
        *selected = true;
        out.push(Step::Select(session.to_owned()));
    }
}

/// The Kilo pump: the adapter's mapping of each router update, adjacent events of one
/// session merged as the pump merges what it takes from the router at once
/// ([`Input::merge`]). Here the merging spans a chunk, whatever the channel hands
/// over at once, so the output does not depend on how the stages interleave: the last
/// update is held until the next step.
#[derive(Default)]
struct Pump {
    mapping: bb_kilo::Mapping,
    /// Mapped, not yet sent: the last input may take the next update's events.
    held: Vec<Input>,
}

impl Pump {
    fn step(&mut self, step: Step<KiloUpdate>, out: &mut Vec<Step<Input>>) {
        let step = match step {
            Step::Item(update) => {
                self.mapping.map_merged(update, &mut self.held);
                if self.held.len() > 1 {
                    let last = self.held.pop();
                    out.extend(self.held.drain(..).map(Step::Item));
                    self.held.extend(last);
                }
                return;
            }
            Step::Select(session) => Step::Select(session),
            Step::Now(now) => Step::Now(now),
            Step::Tick => Step::Tick,
        };
        out.extend(self.held.drain(..).map(Step::Item));
        out.push(step);
    }
}

/// The service loop's engine side.
struct Core {
    ingest: Ingest,
    now: Instant,
}

impl Core {
    fn step(&mut self, step: Step<Input>, out: &mut Vec<V1Message>) {
        match step {
            Step::Item(update) => self.ingest.engine_input(update, self.now),
            Step::Select(session) => self.ingest.select(&session, self.now),
            Step::Now(now) => self.now = now,
            Step::Tick => {
                self.ingest.tick(self.now);
                while let Some(message) = self.ingest.poll_output() {
                    out.push(message);
                }
            }
        }
    }
}

/// The stdio writer, writing into a byte counter (and the lines into `out`, when given).
#[derive(Default)]
struct Writer {
    limits: Limits,
    published: u64,
    bytes_out: u64,
    out: Option<std::io::BufWriter<std::fs::File>>,
    /// The line being written.
    line: Vec<u8>,
}

impl Writer {
    fn new(out: Option<&Path>) -> anyhow::Result<Self> {
        let out = out
            .map(|p| std::fs::File::create(p).with_context(|| format!("creating {}", p.display())))
            .transpose()?
            .map(std::io::BufWriter::new);
        Ok(Self { out, ..Self::default() })
    }

    fn write(&mut self, message: V1Message) {
        // As the stdio writer does: the line written into a kept buffer.
        self.line.clear();
        if bb_bridge_stdio::encode_into(&mut self.line, message, &self.limits) {
            self.line.push(b'\n');
            self.published += 1;
            self.bytes_out += self.line.len() as u64;
            if let Some(out) = &mut self.out {
                // A failed write shows as a short file; the figures stay the run's.
                let _ = out.write_all(&self.line);
            }
        }
    }
}

/// Runs the subcommand.
pub(crate) fn run(
    engine: EngineArg,
    repeat: u32,
    serial: bool,
    receive: Receive,
    file: &Path,
    out: Option<&Path>,
) -> anyhow::Result<()> {
    let report = replay(engine, repeat, serial, receive, file, out)?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

/// Replays `file` `repeat` times (one stream, as if the engine sent it that often).
pub(crate) fn replay(
    engine: EngineArg,
    repeat: u32,
    serial: bool,
    receive: Receive,
    file: &Path,
    out: Option<&Path>,
) -> anyhow::Result<Report> {
    let clock = SystemClock;
    let cpu_before = cpu_seconds();
    let started = clock.now();
    let kind = match engine {
        EngineArg::Kilo => EngineKind::Kilo,
        EngineArg::Breadboard => EngineKind::Breadboard,
    };
    let reader = Reader::new(file, repeat, started);
    let mut ingest = Ingest::new(kind, HostConfig::default(), started);
    ingest.receive(receive, started);
    let core = Core { ingest, now: started };
    let writer = Writer::new(out)?;
    let (events, mut writer) = if serial {
        run_serial(engine, reader, core, writer)?
    } else {
        // The sidecar's runtime: one thread.
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        runtime.block_on(run_pipelined(engine, reader, core, writer))?
    };
    if let Some(out) = &mut writer.out {
        out.flush()?;
    }
    let seconds = clock.now().duration_since(started).as_secs_f64();
    Ok(Report {
        events,
        published: writer.published,
        bytes_out: writer.bytes_out,
        seconds,
        cpu_seconds: cpu_seconds() - cpu_before,
        events_per_sec: if seconds > 0.0 { events as f64 / seconds } else { 0.0 },
        peak_rss_bytes: peak_rss(),
    })
}

/// Every stage in turn on this thread, a chunk at a time.
fn run_serial(
    engine: EngineArg,
    mut reader: Reader,
    mut core: Core,
    mut writer: Writer,
) -> anyhow::Result<(u64, Writer)> {
    let mut messages = Vec::new();
    let mut to_core = |step, core: &mut Core, writer: &mut Writer| {
        core.step(step, &mut messages);
        messages.drain(..).for_each(|m| writer.write(m));
    };
    match engine {
        EngineArg::Kilo => {
            let mut pump = Pump::default();
            let (mut chunk, mut mapped) = (Vec::new(), Vec::new());
            let mut routing = Routing::default();
            let mut decode = kilo_decode(&mut routing);
            while reader.next_chunk(&mut chunk, &mut decode)? {
                for step in chunk.drain(..) {
                    pump.step(step, &mut mapped);
                    mapped.drain(..).for_each(|s| to_core(s, &mut core, &mut writer));
                }
            }
        }
        EngineArg::Breadboard => {
            let mut mapping = bb_breadboard::Mapping::default();
            let mut decode = breadboard_decode(&mut mapping);
            let mut chunk = Vec::new();
            while reader.next_chunk(&mut chunk, &mut decode)? {
                chunk.drain(..).for_each(|s| to_core(s, &mut core, &mut writer));
            }
        }
    }
    Ok((reader.events, writer))
}

/// Each stage a task, as in the sidecar, over channels of the sidecar's capacities, on the
/// sidecar's one runtime thread (this one).
async fn run_pipelined(
    engine: EngineArg,
    mut reader: Reader,
    mut core: Core,
    mut writer: Writer,
) -> anyhow::Result<(u64, Writer)> {
    let (to_core, core_rx) = mpsc::channel(bb_service::engine::INPUT_CAPACITY);
    let (to_writer, mut writer_rx) = mpsc::channel(OUTBOUND_CAPACITY);
    let reading = match engine {
        EngineArg::Kilo => {
            let (to_pump, pump_rx) = mpsc::channel(PUMP_CAPACITY);
            let mut pump = Pump::default();
            tokio::spawn(stage(pump_rx, to_core, move |step, out| pump.step(step, out)));
            tokio::spawn(async move {
                let mut chunk = Vec::new();
                let mut routing = Routing::default();
                let mut decode = kilo_decode(&mut routing);
                while reader.next_chunk(&mut chunk, &mut decode)? {
                    send_all(&to_pump, &mut chunk).await?;
                }
                Ok::<_, anyhow::Error>(reader.events)
            })
        }
        EngineArg::Breadboard => tokio::spawn(async move {
            let mut mapping = bb_breadboard::Mapping::default();
            let mut decode = breadboard_decode(&mut mapping);
            let mut chunk = Vec::new();
            while reader.next_chunk(&mut chunk, &mut decode)? {
                send_all(&to_core, &mut chunk).await?;
            }
            Ok(reader.events)
        }),
    };
    let writing = tokio::spawn(async move {
        while let Some(message) = writer_rx.recv().await {
            writer.write(message);
        }
        writer
    });
    stage(core_rx, to_writer, move |step, out| core.step(step, out)).await;
    let events = reading.await??;
    Ok((events, writing.await?))
}

/// One stage's task: each input through `f`, its outputs on to the next stage in order.
async fn stage<I, O>(
    mut rx: mpsc::Receiver<I>,
    tx: mpsc::Sender<O>,
    mut f: impl FnMut(I, &mut Vec<O>),
) {
    let (mut inputs, mut out) = (Vec::new(), Vec::new());
    while rx.recv_many(&mut inputs, 256).await > 0 {
        for input in inputs.drain(..) {
            f(input, &mut out);
        }
        if send_all(&tx, &mut out).await.is_err() {
            return;
        }
    }
}

async fn send_all<T>(tx: &mpsc::Sender<T>, items: &mut Vec<T>) -> anyhow::Result<()> {
    for item in items.drain(..) {
        tx.send(item).await.map_err(|_| anyhow::anyhow!("a later stage stopped"))?;
    }
    Ok(())
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

/// CPU time of this process so far (user + system, every thread), in seconds; 0 off Unix.
#[cfg(not(unix))]
fn cpu_seconds() -> f64 {
    0.0
}

/// CPU time of this process so far (user + system, every thread), in seconds.
#[cfg(unix)]
fn cpu_seconds() -> f64 {
    // SAFETY: `getrusage` fills the zeroed struct it is given and reads nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
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
