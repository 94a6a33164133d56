//! SSE parser throughput on a 100k-event stream of real Kilo event shapes, beside the time
//! to merely find the line breaks in the same bytes (memchr: the limit), and the cost of
//! also decoding each event's JSON for routing.

use std::hint::black_box;
use std::path::PathBuf;

use bb_engine_client::sse::{SseItem, SseParser};
use bb_kilo::client::KiloEvent;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const EVENTS: usize = 100_000;
/// Chunk size the stream is fed in (a typical socket read).
const CHUNK: usize = 16 * 1024;

/// Every event of the Kilo captures, cycled to `EVENTS` events.
fn kilo_stream() -> Vec<u8> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine/kilo");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|x| x == "sse"));
    files.sort();
    let mut events: Vec<Vec<u8>> = Vec::new();
    for file in files {
        let bytes = std::fs::read(&file).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        events.extend(text.split_inclusive("\n\n").map(|e| e.as_bytes().to_vec()));
    }
    assert!(!events.is_empty(), "no Kilo captures under {}", dir.display());
    events.iter().cycle().take(EVENTS).flatten().copied().collect()
}

fn parse(stream: &[u8]) -> usize {
    let mut parser = SseParser::default();
    let mut out = Vec::with_capacity(64);
    let mut events = 0;
    for chunk in stream.chunks(CHUNK) {
        let _ = parser.feed(chunk, &mut out);
        events += out.iter().filter(|i| matches!(i, SseItem::Event(_))).count();
        out.clear();
    }
    events
}

fn parse_and_route(stream: &[u8]) -> usize {
    let mut parser = SseParser::default();
    let mut out = Vec::with_capacity(64);
    let mut routed = 0;
    for chunk in stream.chunks(CHUNK) {
        let _ = parser.feed(chunk, &mut out);
        for item in out.drain(..) {
            if let SseItem::Event(e) = item {
                routed +=
                    usize::from(KiloEvent::parse(&e.data).is_ok_and(|k| k.session().is_some()));
            }
        }
    }
    routed
}

fn line_breaks(stream: &[u8]) -> usize {
    stream.chunks(CHUNK).map(|c| memchr::memchr2_iter(b'\r', b'\n', c).count()).sum()
}

fn bench(c: &mut Criterion) {
    let stream = kilo_stream();
    assert_eq!(parse(&stream), EVENTS);
    let mut group = c.benchmark_group("sse_kilo_100k");
    group.throughput(Throughput::Bytes(stream.len() as u64));
    group.sample_size(20);
    group.bench_function("memchr_line_breaks", |b| b.iter(|| line_breaks(black_box(&stream))));
    group.bench_function("parse", |b| b.iter(|| parse(black_box(&stream))));
    group
        .bench_function("parse_and_route_json", |b| b.iter(|| parse_and_route(black_box(&stream))));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
