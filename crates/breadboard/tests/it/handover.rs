//! The stream task's hand-over through the adapter on the fake engine: a turn of more events
//! than the input channel holds, read only once the engine has sent all of it, reaches the
//! service whole and in order (the task waits for room; it drops nothing).

use std::sync::Arc;

use bb_breadboard::{BreadboardAdapter, BreadboardConfig};
use bb_fake_engine::EngineConfig;
use bb_host::Input;
use bb_protocol::v1::{SendMessageParams, SessionParams};
use bb_service::engine::INPUT_CAPACITY;
use bb_service::{EngineAdapter, SystemClock};

use crate::support::{BOUND, Engine, fast, wait_turns};

#[tokio::test]
async fn a_turn_larger_than_the_input_channel_is_handed_over_whole_and_in_order() {
    let deltas = INPUT_CAPACITY + 100;
    let config = EngineConfig { ring_capacity: 4 * INPUT_CAPACITY, ..EngineConfig::default() };
    let engine = Engine::start(config).await;
    let session = engine.session().await;
    let mut config = BreadboardConfig::new(engine.dir.path().join("state"));
    config.stream = fast();
    let (adapter, mut rx) =
        BreadboardAdapter::new(engine.client.clone(), config, Arc::new(SystemClock));
    let params = SessionParams { session_id: session.clone(), tab_id: None };
    adapter.select_session(params).await.unwrap();
    let lines: Vec<String> = (0..deltas)
        .map(|n| {
            format!(r#"{{"type":"assistant_delta","payload":{{"message_id":"m1","text":"{n};"}}}}"#)
        })
        .collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let text = engine.script("long", &lines);
    let params = SendMessageParams {
        session_id: session.clone(),
        text,
        attachment_ids: None,
        message_id: None,
    };
    adapter.send_message(params).await.unwrap();
    // Nothing is read from the channel until the engine has sent the whole turn: the stream
    // task finds the channel full on the way.
    wait_turns(&engine.client, &session, 1).await;
    let mut seqs = Vec::new();
    let read = async {
        while let Some(input) = rx.recv().await {
            let Input::Events { events, .. } = &input else { continue };
            for (event, _) in events.iter() {
                seqs.push(event.id.to_string().parse::<u64>().unwrap());
                if event.event_type == "completion" {
                    return;
                }
            }
        }
    };
    tokio::time::timeout(BOUND, read).await.expect("the turn's completion within the bound");
    let first = seqs[0];
    let expected: Vec<u64> = (first..first + seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "every event once, in order");
    assert!(seqs.len() > deltas, "the whole turn: {} events", seqs.len());
}
