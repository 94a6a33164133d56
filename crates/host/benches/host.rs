//! Host core throughput: Kilo text deltas through the per-session batchers (coalescing,
//! cadence by priority) to `bb/events`, with the state projection recomputed on every
//! run-state change (two per turn).

#![allow(clippy::unwrap_used, clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use bb_host::{Engine, Host, HostConfig, Input};
use bb_normalize::EventClass;
use bb_protocol::v1::{EngineEvent, SessionSummary, V1Topic};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Map, json};

const EVENTS: usize = 100_000;
const SESSIONS: usize = 4;
const TURN: usize = 500;

fn delta(i: usize) -> EngineEvent {
    let mut payload = Map::new();
    payload.insert("sessionID".into(), json!(format!("ses_{}", i % SESSIONS)));
    payload.insert("messageID".into(), json!(format!("msg_{}", i / TURN)));
    payload.insert("partID".into(), json!("prt_200c83842001"));
    payload.insert("field".into(), json!("text"));
    payload.insert("delta".into(), json!("some streamed words "));
    EngineEvent {
        id: format!("evt_{i:012}").into(),
        event_type: "message.part.delta".into(),
        turn: None,
        ts: None,
        payload: payload.into(),
    }
}

/// Feeds `EVENTS` deltas round-robin over `SESSIONS` sessions (the first one selected), 1 ms
/// apart, a turn start and end every `TURN` events, draining output as a service would.
/// Returns the `bb/events` messages and the items (coalesced deltas count one) published.
fn run(events: &[EngineEvent], start: Instant) -> (usize, usize) {
    let mut host = Host::new(Engine::Kilo, HostConfig::default());
    host.handle(Input::ready(0), start);
    for s in 0..SESSIONS {
        let summary =
            SessionSummary { session_id: format!("ses_{s}"), ..SessionSummary::default() };
        host.handle(Input::SessionUpserted(Box::new(summary)), start);
    }
    host.handle(Input::select(0, "ses_0"), start);
    let mut now = start;
    let mut out = (0, 0);
    for (i, event) in events.iter().enumerate() {
        let session_id = format!("ses_{}", i % SESSIONS);
        if i % TURN == 0 {
            host.handle(
                Input::SessionRunning { session_id: session_id.clone(), running: true },
                now,
            );
        }
        // Every event is a text delta (`transcript.assistant_stream`).
        let events = vec![(event.clone(), EventClass::AssistantStream)];
        host.handle(
            Input::Events { session_id: session_id.as_str().into(), events: events.into() },
            now,
        );
        if i % TURN == TURN - 1 {
            host.handle(Input::SessionRunning { session_id, running: false }, now);
        }
        now += Duration::from_millis(1);
        host.handle_timeout(now);
        while let Some(topic) = host.poll_output().map(|(_, t)| t) {
            if let V1Topic::Events(b) = &topic {
                out.0 += 1;
                out.1 += b.events.len();
            }
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let events: Vec<EngineEvent> = (0..EVENTS).map(delta).collect();
    let start = Instant::now();
    let (messages, items) = run(&events, start);
    #[allow(clippy::print_stderr)]
    {
        eprintln!("host: {EVENTS} deltas -> {messages} bb/events messages, {items} items");
    }
    let mut group = c.benchmark_group("host");
    group.throughput(Throughput::Elements(EVENTS as u64));
    group.sample_size(10);
    group.bench_function("100k deltas, 4 sessions", |b| b.iter(|| run(&events, start)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
