//! BreadBoard session stream throughput: a 20k-event stream of the real captured BreadBoard
//! events (renumbered `seq`s), chunked like a socket read, pulled through `SessionStream`
//! (SSE parsing, envelope decoding, the resume cursor) over the in-memory transport.

use std::path::PathBuf;
use std::sync::Arc;

use bb_breadboard::client::{BreadboardClient, SessionStream, StreamOptions, StreamUpdate};
use bb_engine_client::fake::{FakeEnd, FakeStream, FakeTransport};
use bb_engine_client::transport::HttpMethod;
use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const EVENTS: usize = 20_000;
const CHUNK: usize = 16 * 1024;

/// The `data:` objects of every BreadBoard capture, cycled to `EVENTS` with `seq` 1..=EVENTS.
fn stream() -> Vec<u8> {
    let root =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine/breadboard/replays");
    let mut datas: Vec<serde_json::Value> = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    dirs.sort();
    for dir in dirs {
        let text = std::fs::read_to_string(dir.join("replay_all.sse")).unwrap_or_default();
        datas.extend(
            text.lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .filter_map(|d| serde_json::from_str(d).ok()),
        );
    }
    assert!(!datas.is_empty(), "no BreadBoard captures under {}", root.display());
    let mut out = Vec::new();
    for (i, mut data) in datas.into_iter().cycle().take(EVENTS).enumerate() {
        let seq = i + 1;
        data["seq"] = seq.into();
        out.extend_from_slice(format!("id: {seq}\ndata: {data}\n\n").as_bytes());
    }
    out
}

fn run(runtime: &tokio::runtime::Runtime, bytes: &Bytes) -> usize {
    runtime.block_on(async {
        let fake = FakeTransport::new();
        let chunks: Vec<Bytes> = bytes.chunks(CHUNK).map(Bytes::copy_from_slice).collect();
        fake.push_stream(FakeStream::Script { chunks, end: FakeEnd::Stall });
        // A stream opened without a resume id is confirmed over REST first.
        let summary = serde_json::json!({"session_id": "s", "status": "running"});
        fake.route_json(HttpMethod::Get, "/v1/sessions/s", &summary);
        let client = BreadboardClient::new(Arc::new(fake));
        let mut stream = SessionStream::open(&client, "s", None, StreamOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let mut events = 0;
        while events < EVENTS {
            match stream.next().await {
                Some(Ok(StreamUpdate::Event(_))) => events += 1,
                Some(Ok(StreamUpdate::Ended { .. })) | None => panic!("the stream ended early"),
                Some(Err(e)) => panic!("{e}"),
                Some(Ok(_)) => {}
            }
        }
        events
    })
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let bytes = Bytes::from(stream());
    let mut group = c.benchmark_group("breadboard_stream");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.sample_size(10);
    group.bench_function("session_stream", |b| b.iter(|| run(&runtime, &bytes)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
