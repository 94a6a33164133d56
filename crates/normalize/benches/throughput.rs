//! Throughput of the pure pipeline on real event shapes — SSE parse, JSON parse, classify,
//! batch (simulated time) and reduce — and the state size of a 10,000-message session.
//!
//! Run: `cargo bench -p bb-normalize --bench throughput`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bb_engine_client::sse::{SseItem, SseParser};
use bb_normalize::{Batcher, Classified, Engine, Priority, RawEvent, SessionView};
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group};

/// Counts live heap bytes, to measure what a view model holds.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; only adds bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn capture(rel: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine").join(rel);
    std::fs::read_to_string(path).unwrap()
}

/// `reps` copies of a capture, each with its own message, part and event ids, as one SSE body.
fn workload(rel: &str, reps: usize) -> (Vec<u8>, usize) {
    let text = capture(rel);
    let mut out = String::with_capacity(text.len() * reps);
    for k in 0..reps {
        let prefix_msg = format!("msg_k{k}_");
        let prefix_prt = format!("prt_k{k}_");
        let prefix_evt = format!("evt_k{k}_");
        out.push_str(
            &text
                .replace("msg_", &prefix_msg)
                .replace("prt_", &prefix_prt)
                .replace("evt_", &prefix_evt)
                .replace("permission_1", &format!("permission_k{k}")),
        );
        if !out.ends_with("\n\n") {
            out.push('\n');
        }
    }
    let events = out.matches("\ndata:").count() + usize::from(out.starts_with("data:"));
    (out.into_bytes(), events)
}

#[allow(clippy::disallowed_methods)]
fn epoch() -> Instant {
    Instant::now()
}

/// The whole pure pipeline over one SSE body; returns the view.
fn pipeline(engine: Engine, body: &[u8]) -> SessionView {
    let mut parser = SseParser::default();
    let mut items = Vec::new();
    let mut view = SessionView::new();
    let mut batcher = Batcher::new(Priority::Active);
    let mut now = epoch();
    // Feed in network-sized chunks, one simulated millisecond per chunk.
    for chunk in body.chunks(4096) {
        now += Duration::from_millis(1);
        parser.feed(chunk, &mut items).unwrap();
        for item in items.drain(..) {
            if let SseItem::Event(e) = item
                && let Ok(ev) = RawEvent::parse(engine, &e.data, None)
            {
                batcher.handle_event(now, Classified::new(ev));
            }
        }
        if let Some(b) = batcher.poll_flush(now) {
            view.apply_batch(&b);
        }
    }
    while let Some(due) = batcher.poll_timeout() {
        if let Some(b) = batcher.poll_flush(due.max(now)) {
            view.apply_batch(&b);
        }
    }
    view
}

const WORKLOADS: &[(&str, Engine, &str)] = &[
    ("kilo_stream_text", Engine::Kilo, "kilo/stream_text.sse"),
    ("kilo_permission", Engine::Kilo, "kilo/permission_allow.sse"),
    ("bb_agent_responses", Engine::BreadBoard, "breadboard/agent/agent_responses_stream/live.sse"),
    ("bb_agent_permission", Engine::BreadBoard, "breadboard/agent/agent_permission_allow/live.sse"),
];

/// The parsed events of a workload body.
fn parsed(engine: Engine, body: &[u8]) -> Vec<RawEvent> {
    let mut parser = SseParser::default();
    let items = parser.feed_collect(body).unwrap();
    items
        .into_iter()
        .filter_map(|i| match i {
            SseItem::Event(e) => RawEvent::parse(engine, &e.data, None).ok(),
            _ => None,
        })
        .collect()
}

fn bench_pipeline(c: &mut Criterion) {
    let mut group = c.benchmark_group("pipeline");
    group.sample_size(10);
    for (name, engine, rel) in WORKLOADS {
        let (body, events) = workload(rel, 50);
        group.throughput(Throughput::Elements(events as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), &body, |b, body| {
            b.iter(|| pipeline(*engine, body));
        });
    }
    group.finish();

    // Classify + batch + reduce only: the events are parsed (and cloned) outside the timing.
    let mut group = c.benchmark_group("classify_batch_reduce");
    group.sample_size(10);
    for (name, engine, rel) in WORKLOADS {
        let (body, _) = workload(rel, 50);
        let events = parsed(*engine, &body);
        group.throughput(Throughput::Elements(events.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), &events, |b, events| {
            b.iter_batched(
                || events.clone(),
                |events| {
                    let mut view = SessionView::new();
                    let mut batcher = Batcher::new(Priority::Active);
                    let mut now = epoch();
                    for ev in events {
                        now += Duration::from_micros(200);
                        batcher.handle_event(now, Classified::new(ev));
                        if let Some(b) = batcher.poll_flush(now) {
                            view.apply_batch(&b);
                        }
                    }
                    while let Some(due) = batcher.poll_timeout() {
                        if let Some(b) = batcher.poll_flush(due.max(now)) {
                            view.apply_batch(&b);
                        }
                    }
                    view
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

/// Serialized and live heap size of the view after a 10,000-message session (5,000 Kilo
/// text turns: a user and an assistant message each).
fn report_state_size() {
    let (body, events) = workload("kilo/stream_text.sse", 5_000);
    let before = LIVE.load(Ordering::Relaxed);
    let start = epoch();
    let view = pipeline(Engine::Kilo, &body);
    #[allow(clippy::disallowed_methods)]
    let elapsed = start.elapsed();
    let heap = LIVE.load(Ordering::Relaxed).saturating_sub(before);
    let json = serde_json::to_string(&view).unwrap();
    let blocks = view.transcript.blocks.len();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "state: {events} events, {blocks} blocks, serialized view {} bytes ({:.0} B/message), live heap {} bytes ({:.0} B/message), one pass {:.0} events/s",
        json.len(),
        json.len() as f64 / 10_000.0,
        heap,
        heap as f64 / 10_000.0,
        events as f64 / elapsed.as_secs_f64(),
    )
    .unwrap();
    drop(view);
}

criterion_group!(benches, bench_pipeline);

fn main() {
    // `cargo bench` passes `--bench`; test runs (`--list`, smoke runs) skip the long state pass.
    if std::env::args().any(|a| a == "--bench") {
        report_state_size();
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
