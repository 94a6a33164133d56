//! `bb-harness`: black-box drivers over the bridge's crates, used by tests and by checks run
//! from outside. Each subcommand lives in a module of its own.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use clap::{Parser, Subcommand};

mod bench_e2e;
mod check_envelope;
mod contain;
mod fake_engine;
mod floor_relay;
mod ingest;
mod normalize;
mod redact;
mod soak;
mod sse_parse;
mod sse_test_service;

/// The allocator (as in every bridge binary, mimalloc asked for an alignment only where a
/// value needs one): the event path allocates many small, short-lived values and frees them
/// on another task's thread, which glibc malloc does slowly.
#[global_allocator]
static ALLOCATOR: bb_launch::Mimalloc = bb_launch::Mimalloc;

/// Black-box drivers, fake engines and conformance services for testing the bridge.
#[derive(Debug, Parser)]
#[command(name = "bb-harness", version)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate one envelope per stdin line; print one verdict line per input line.
    CheckEnvelope(check_envelope::Args),
    /// Read an SSE byte stream on stdin; print one JSON line per dispatched event
    /// (`{"type","data","lastEventId"}`) and per valid retry field (`{"retry"}`).
    SseParse,
    /// Classify and reduce an engine SSE capture; print the final view model as JSON, or
    /// with `--classes` one `{"id","type","class"}` line per event.
    Normalize {
        /// The engine that produced the capture.
        #[arg(long, value_enum)]
        engine: normalize::EngineArg,
        /// Print one line per input event with its class instead of the view model.
        #[arg(long)]
        classes: bool,
        /// Keep only this session's events (plus events that name no session).
        #[arg(long)]
        session: Option<String>,
        /// The `.sse` capture.
        file: std::path::PathBuf,
    },
    /// Replay an engine SSE capture through the sidecar's event path in process, stage by
    /// stage as the sidecar's tasks (SSE parser and routing, adapter mapping, host core,
    /// envelope encoding into a byte counter, 1 ms of simulated time per 16 KiB chunk); print
    /// one JSON line
    /// `{"events","published","bytesOut","seconds","cpuSeconds","eventsPerSec","peakRssBytes"}`.
    Ingest {
        /// The engine that produced the capture.
        #[arg(long, value_enum)]
        engine: normalize::EngineArg,
        /// Replay the file this many times as one stream.
        #[arg(long, default_value_t = 1)]
        repeat: u32,
        /// Run the stages one after the other on one thread instead of as the sidecar's
        /// tasks (same output; for profiling).
        #[arg(long)]
        serial: bool,
        /// Also write the envelopes to this file, one per line (to compare with the Node peer's,
        /// `benches/check-peer.py`).
        #[arg(long)]
        out: Option<std::path::PathBuf>,
        /// What the webview asks `bb/events` to carry (`bb.init({receive})`).
        #[arg(long, value_enum, default_value = "events")]
        receive: ingest::ReceiveArg,
        /// The `.sse` capture.
        file: std::path::PathBuf,
    },
    /// Measure a built `bb-sidecar` end to end over stdio: cold start to the `bb.init`
    /// response and idle RSS on the demo engine; bridge-added latency (engine write to stdout
    /// line) for sparse and dense events, and CPU/RSS with 10 and 100 sessions streaming, against a
    /// fake Kilo server whose writes it times. One JSON line per measurement.
    BenchE2e(bench_e2e::BenchArgs),
    /// The floor `bench-e2e` compares a sidecar with: answers requests with `ok` and relays
    /// each engine event (Kilo or BreadBoard shape) as a stdout line (takes the sidecar's flags;
    /// reads `--engine` and `--engine-url`). Run it through a script given as `bench-e2e --sidecar`.
    FloorRelay(floor_relay::FloorArgs),
    /// Redact stdin to stdout (JSON stays valid JSON; other text is redacted as text).
    Redact {
        /// Print the log-line form: redacted, newlines stripped, capped at 8 KB.
        #[arg(long)]
        log_line: bool,
    },
    /// Check paths against a workspace root; one
    /// `{"path","verdict":"inside"|"outside"|"invalid","normalized"}` line per path.
    Contain {
        /// The workspace root (absolute).
        #[arg(long)]
        root: String,
        /// Path syntax.
        #[arg(long, value_enum, default_value = "posix")]
        flavor: contain::FlavorArg,
        /// Resolve symlinks on the real filesystem (longest existing prefix).
        #[arg(long)]
        resolve: bool,
        /// Paths to check (relative ones are joined onto the root).
        #[arg(required = true, allow_hyphen_values = true)]
        paths: Vec<String>,
    },
    /// Soak the bridges: sessions streaming through `bb-sidecar` (stdio and `--listen`
    /// clients) and `bb-gateway` from the fake BreadBoard engine for a set time under
    /// scheduled faults (engine and sidecar SIGKILL and restart, stream stalls and cuts,
    /// window detach/reattach, slow readers); checks every window against what the engine
    /// sent and prints one JSON summary. Exits 1 when an event was lost or duplicated
    /// silently or an approval reached the engine twice.
    Soak(soak::SoakArgs),
    /// Serve a fake engine on loopback; prints its URL on stdout once listening.
    FakeEngine(fake_engine::FakeEngineArgs),
    /// Serve LaunchDarkly's sse-contract-tests test-service API around the bridge's SSE
    /// client; prints its URL on stdout once listening.
    SseTestService(sse_test_service::SseTestServiceArgs),
}

fn main() -> anyhow::Result<()> {
    match run(Args::parse()) {
        // A reader that stops early (`| head`) is not an error of the driver.
        Err(e) if is_broken_pipe(&e) => Ok(()),
        other => other,
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        Command::CheckEnvelope(a) => check_envelope::run(&a),
        Command::SseParse => sse_parse::run(),
        Command::Normalize { engine, classes, session, file } => {
            normalize::run(engine, classes, session.as_deref(), &file)
        }
        Command::Ingest { engine, repeat, serial, out, receive, file } => {
            ingest::run(engine, repeat, serial, receive.into(), &file, out.as_deref())
        }
        // A broken pipe here is the measured sidecar going away: an error to report, not a
        // reader that stopped early.
        Command::BenchE2e(args) => tokio::runtime::Runtime::new()?
            .block_on(bench_e2e::run(args))
            .map_err(|e| anyhow::anyhow!("bench-e2e: {e:#}")),
        Command::FloorRelay(args) => floor_relay::main(args),
        Command::Redact { log_line } => redact::run(log_line),
        Command::Contain { root, flavor, resolve, paths } => {
            contain::run(&root, flavor, resolve, &paths)
        }
        Command::Soak(args) => {
            if tokio::runtime::Runtime::new()?.block_on(soak::run(args))? {
                Ok(())
            } else {
                std::process::exit(1)
            }
        }
        Command::FakeEngine(args) => {
            tokio::runtime::Runtime::new()?.block_on(fake_engine::run(args))
        }
        Command::SseTestService(args) => {
            tokio::runtime::Runtime::new()?.block_on(sse_test_service::run(args))
        }
    }
}
