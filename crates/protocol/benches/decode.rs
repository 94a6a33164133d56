//! Decoder and outbound-check throughput on typical messages: a small request, and a
//! `bb/events` batch of 100 engine events (the largest message a bridge sends routinely).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use bb_protocol::{Limits, decode_v1, decode_ws};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;

fn events_batch(n: usize) -> Vec<u8> {
    let events: Vec<_> = (0..n)
        .map(|i| {
            json!({"id": format!("evt-{i}"), "type": "assistant.delta", "turn": 3,
                   "class": "transcript.assistant_stream",
                   "ts": 1_700_000_000_000_u64 + i as u64,
                   "payload": {"text": "some streamed text of moderate length, ".repeat(3),
                               "index": i, "meta": {"model": "m", "tokens": [1, 2, 3]}}})
        })
        .collect();
    serde_json::to_vec(&json!({"v": 1, "kind": "evt", "topic": "bb/events",
        "payload": {"sessionId": "s-1", "tabId": "t-1", "seq": 1, "events": events}}))
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let limits = Limits::default();
    let small = br#"{"v":1,"kind":"req","id":"42","method":"bb.readFileSnippet","params":{"sessionId":"s-1","path":"src/main.rs","maxBytes":4096,"headLines":40}}"#;
    let ws = br#"{"type":"request","id":"42","method":"acp_session_prompt","params":{"connectionId":"c","sessionId":"s","prompt":[{"type":"text","text":"hello"}]}}"#;
    let batch = events_batch(100);

    let mut group = c.benchmark_group("decode");
    group.throughput(Throughput::Bytes(small.len() as u64));
    group.bench_function("v1 request (small)", |b| b.iter(|| decode_v1(small, &limits).unwrap()));
    group.throughput(Throughput::Bytes(ws.len() as u64));
    group.bench_function("ws prompt request", |b| b.iter(|| decode_ws(ws, &limits).unwrap()));
    group.throughput(Throughput::Bytes(batch.len() as u64));
    group.bench_function("v1 bb/events x100", |b| b.iter(|| decode_v1(&batch, &limits).unwrap()));
    let message = decode_v1(&batch, &limits).unwrap();
    group.bench_function("v1 bb/events x100 to_line", |b| {
        b.iter(|| message.to_line(&limits).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
