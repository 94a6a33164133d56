//! Injected faults: dropped live events leave `seq` gaps the ring can fill, a shrunken ring
//! refuses evicted ids, and a cut connection ends without the terminating chunk.

use bb_fake_engine::{EngineConfig, Faults};

use super::support::{create, read_events, start};

#[tokio::test]
async fn dropped_events_leave_gaps_that_the_ring_still_fills() {
    let faults = Faults { drop_every: Some(2), ..Faults::default() };
    let engine = start(EngineConfig { faults, ..EngineConfig::default() }).await;
    let url = engine.url();
    let http = reqwest::Client::new();
    let session = create(&http, url).await;
    let live = http.get(format!("{url}/v1/sessions/{session}/events")).send().await.unwrap();
    for _ in 0..2 {
        super::support::input(&http, url, &session, "hello").await;
    }
    let (seen, _) = read_events(live, |s| {
        s.iter().filter(|e| e.data["type"] == "run_finished").count() == 2 || s.len() >= 5
    })
    .await;
    let ids: Vec<String> = seen.iter().map(|e| e.id.clone()).collect();
    assert!(
        ids.windows(2)
            .skip(1)
            .any(|w| w[1].parse::<u64>().unwrap() > w[0].parse::<u64>().unwrap() + 1),
        "{ids:?}"
    );
    let last = engine.engine().last_seq(&session).unwrap();
    // Drops apply to ring replays too (like the engine's chaos), per connection.
    let replay =
        http.get(format!("{url}/v1/sessions/{session}/events?replay=true")).send().await.unwrap();
    let (dropped, _) = read_events(replay, |s| s.len() as u64 == last.div_ceil(2)).await;
    let seqs: Vec<u64> = dropped.iter().map(|e| e.id.parse().unwrap()).collect();
    assert_eq!(seqs, (1..=last).step_by(2).collect::<Vec<_>>());
    // Resuming from the last contiguous seq refills the first skipped event.
    let resumed = http
        .get(format!("{url}/v1/sessions/{session}/events"))
        .header("last-event-id", "1")
        .send()
        .await
        .unwrap();
    let (refill, _) = read_events(resumed, |s| !s.is_empty()).await;
    assert_eq!(refill[0].id, "2");
    // The ring kept everything.
    engine.engine().update_faults(|f| f.drop_every = None);
    let replay =
        http.get(format!("{url}/v1/sessions/{session}/events?replay=true")).send().await.unwrap();
    let (all, _) = read_events(replay, |s| s.len() as u64 == last).await;
    let seqs: Vec<u64> = all.iter().map(|e| e.id.parse().unwrap()).collect();
    assert_eq!(seqs, (1..=last).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_shrunken_ring_refuses_evicted_ids() {
    let engine = start(EngineConfig { ring_capacity: 3, ..EngineConfig::default() }).await;
    let url = engine.url();
    let http = reqwest::Client::new();
    let session = create(&http, url).await;
    let live =
        http.get(format!("{url}/v1/sessions/{session}/events?replay=true")).send().await.unwrap();
    super::support::input(&http, url, &session, "hello").await;
    read_events(live, |s| s.iter().any(|e| e.data["type"] == "run_finished")).await;
    assert_eq!(engine.engine().ring_len(&session), Some(3));
    let evicted = http
        .get(format!("{url}/v1/sessions/{session}/events"))
        .header("last-event-id", "1")
        .send()
        .await
        .unwrap();
    assert_eq!(evicted.status(), 409);
}

#[tokio::test]
async fn a_cut_connection_breaks_after_the_planned_event() {
    let engine = start(EngineConfig::default()).await;
    let url = engine.url();
    let http = reqwest::Client::new();
    let session = create(&http, url).await;
    engine.engine().update_faults(|f| f.cut_plan = [1].into());
    let cut =
        http.get(format!("{url}/v1/sessions/{session}/events?replay=true")).send().await.unwrap();
    let mut body = cut.bytes_stream();
    let mut received = Vec::new();
    let mut broke = false;
    while let Some(chunk) = futures_util::StreamExt::next(&mut body).await {
        match chunk {
            Ok(bytes) => received.extend_from_slice(&bytes),
            Err(_) => {
                broke = true;
                break;
            }
        }
    }
    assert!(broke, "the body ends with an error, not a clean end");
    assert!(String::from_utf8(received).unwrap().starts_with("id: 1\ndata: "));
    // The plan is used up: the next connection is whole.
    let fresh = reqwest::Client::new();
    let whole =
        fresh.get(format!("{url}/v1/sessions/{session}/events?replay=true")).send().await.unwrap();
    let (events, _) = read_events(whole, |s| s.len() == 2).await;
    assert_eq!(events.len(), 2);
}
