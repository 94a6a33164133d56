//! The input channel's event budget: a sender waits while the queued inputs' events fill it
//! and goes on when the loop takes inputs out; an input larger than the budget passes alone;
//! a gone receiver fails senders (waiting ones too) and gone senders end the receiver; and
//! whatever the sizes, what is queued never holds more events than the budget.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bb_host::Input;
use bb_normalize::EventClass;
use bb_protocol::v1::EngineEvent;
use proptest::prelude::*;
use serde_json::Map;
use tokio::sync::mpsc::error::{SendError, TrySendError};

use crate::engine::{INPUT_CAPACITY, INPUT_EVENT_BUDGET, input_channel};

/// An input of `n` events of one session.
fn events(n: usize) -> Input {
    let event = |i: usize| EngineEvent {
        id: format!("evt_{i}").into(),
        event_type: "message.part.delta".into(),
        turn: None,
        ts: None,
        payload: Map::new().into(),
    };
    Input::Events {
        session_id: "s".into(),
        events: (0..n).map(|i| (event(i), EventClass::AssistantStream)).collect(),
    }
}

/// How many events `input` carries.
fn count(input: &Input) -> usize {
    match input {
        Input::Events { events, .. } => events.len(),
        other => panic!("not an events input: {other:?}"),
    }
}

/// Lets every task run until it waits (the clock is paused: no real time passes).
async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

#[tokio::test(start_paused = true)]
async fn a_sender_waits_for_places_and_goes_on_when_the_loop_takes_inputs() {
    let (tx, mut rx) = input_channel();
    let full = INPUT_EVENT_BUDGET / Input::MERGED_EVENTS;
    for _ in 0..full {
        tx.send(events(Input::MERGED_EVENTS)).await.unwrap();
    }
    assert!(matches!(tx.try_send(events(1)), Err(TrySendError::Full(_))));
    let waiting = tokio::spawn({
        let tx = tx.clone();
        async move { tx.send(events(3)).await }
    });
    settle().await;
    assert!(!waiting.is_finished(), "the budget is full: the sender waits");

    assert_eq!(count(&rx.recv().await.unwrap()), Input::MERGED_EVENTS);
    settle().await;
    assert!(waiting.is_finished(), "the places taken out let it go on");
    waiting.await.unwrap().unwrap();

    // Nothing lost, in order.
    let mut taken = Vec::new();
    while let Ok(input) = rx.try_recv() {
        taken.push(count(&input));
    }
    let mut expected = vec![Input::MERGED_EVENTS; full - 1];
    expected.push(3);
    assert_eq!(taken, expected);
}

#[tokio::test(start_paused = true)]
async fn taking_many_inputs_at_once_gives_all_their_places_back() {
    let (tx, mut rx) = input_channel();
    let full = INPUT_EVENT_BUDGET / Input::MERGED_EVENTS;
    for _ in 0..full {
        tx.send(events(Input::MERGED_EVENTS)).await.unwrap();
    }
    assert!(matches!(tx.try_send(events(1)), Err(TrySendError::Full(_))));
    // At most `limit`, in order; their places (and only theirs) come back.
    let mut taken = vec![events(2)];
    assert_eq!(rx.recv_many(&mut taken, full - 1).await, full - 1);
    assert_eq!(taken.len(), full);
    assert_eq!(count(&taken[0]), 2, "what the buffer held stays first");
    let room = (full - 1) * Input::MERGED_EVENTS;
    tx.try_send(events(room)).unwrap();
    assert!(matches!(tx.try_send(events(1)), Err(TrySendError::Full(_))));
    taken.clear();
    assert_eq!(rx.recv_many(&mut taken, 8).await, 2);
    assert_eq!(taken.iter().map(count).collect::<Vec<_>>(), [Input::MERGED_EVENTS, room]);
    tx.try_send(events(INPUT_EVENT_BUDGET)).unwrap();
    // Gone senders end it.
    drop(tx);
    taken.clear();
    assert_eq!(rx.recv_many(&mut taken, 8).await, 1);
    assert_eq!(rx.recv_many(&mut taken, 8).await, 0);
}

#[tokio::test(start_paused = true)]
async fn the_channel_still_holds_at_most_its_capacity_in_inputs() {
    let (tx, mut rx) = input_channel();
    for _ in 0..INPUT_CAPACITY {
        tx.try_send(events(1)).unwrap();
    }
    const { assert!(INPUT_CAPACITY < INPUT_EVENT_BUDGET, "the budget has room left") };
    assert!(matches!(tx.try_send(events(1)), Err(TrySendError::Full(_))));
    rx.recv().await.unwrap();
    tx.try_send(events(1)).unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_input_larger_than_the_budget_passes_alone() {
    let (tx, mut rx) = input_channel();
    let huge = INPUT_EVENT_BUDGET + 1000;
    // Into an empty channel it passes at once.
    tx.try_send(events(huge)).unwrap();
    assert_eq!(count(&rx.recv().await.unwrap()), huge);

    // Behind another input it waits for it to be taken out, and what follows waits for it.
    tx.send(events(1)).await.unwrap();
    let big = tokio::spawn({
        let tx = tx.clone();
        async move { tx.send(events(huge)).await }
    });
    settle().await;
    assert!(!big.is_finished());
    assert_eq!(count(&rx.recv().await.unwrap()), 1);
    settle().await;
    big.await.unwrap().unwrap();
    assert!(matches!(tx.try_send(events(1)), Err(TrySendError::Full(_))));
    assert_eq!(count(&rx.recv().await.unwrap()), huge);
    tx.try_send(events(1)).unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_gone_receiver_fails_senders_and_gives_their_input_back() {
    let (tx, rx) = input_channel();
    tx.send(events(INPUT_EVENT_BUDGET)).await.unwrap();
    let waiting = tokio::spawn({
        let tx = tx.clone();
        async move { tx.send(events(2)).await }
    });
    settle().await;
    assert!(!waiting.is_finished());
    drop(rx);
    let Err(SendError(back)) = waiting.await.unwrap() else {
        panic!("a sender waiting for places fails once the receiver is gone");
    };
    assert_eq!(count(&back), 2);
    let Err(SendError(back)) = tx.send(events(5)).await else {
        panic!("sending to a gone receiver fails");
    };
    assert_eq!(count(&back), 5);
    assert!(matches!(tx.try_send(events(1)), Err(TrySendError::Closed(_))));
}

#[tokio::test(start_paused = true)]
async fn gone_senders_end_the_receiver_after_what_was_queued() {
    let (tx, mut rx) = input_channel();
    tx.send(events(2)).await.unwrap();
    tx.send(Input::SessionRemoved("s".into())).await.unwrap();
    drop(tx);
    assert_eq!(count(&rx.recv().await.unwrap()), 2);
    assert!(matches!(rx.recv().await, Some(Input::SessionRemoved(_))));
    assert!(rx.recv().await.is_none());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever the inputs' sizes and however slowly the loop takes them out: every input
    /// arrives, in order, and the queued inputs never hold more places than the budget, nor
    /// fewer than it while the sender waits (the budget is what holds it back).
    #[test]
    fn the_queued_events_never_pass_the_budget(
        sizes in prop::collection::vec(
            prop_oneof![1usize..=8, 200usize..=256, 4000usize..=5000],
            1..80,
        ),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        runtime.block_on(async move {
            let places = |n: usize| n.clamp(1, INPUT_EVENT_BUDGET);
            let (tx, mut rx) = input_channel();
            let sent = Arc::new(AtomicUsize::new(0));
            let sender = tokio::spawn({
                let (sizes, sent) = (sizes.clone(), sent.clone());
                async move {
                    for n in sizes {
                        tx.send(events(n)).await.unwrap();
                        sent.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
            for (i, &n) in sizes.iter().enumerate() {
                settle().await;
                let queued: usize = sizes[i..sent.load(Ordering::SeqCst)]
                    .iter()
                    .map(|&n| places(n))
                    .sum();
                assert!(queued <= INPUT_EVENT_BUDGET, "{queued} places queued");
                if let Some(&next) = sizes.get(sent.load(Ordering::SeqCst)) {
                    assert!(queued + places(next) > INPUT_EVENT_BUDGET, "the sender waits on the budget");
                }
                assert_eq!(count(&rx.recv().await.unwrap()), n);
            }
            sender.await.unwrap();
            assert!(rx.recv().await.is_none());
        });
    }
}
