//! The pump's hand-over: inputs go with `try_send` while the channel has room, and a full
//! channel is waited for, never taken as closed and never a reason to drop an input.

use std::time::Duration;

use bb_host::Input;
use bb_service::engine::{INPUT_CAPACITY, input_channel};

use crate::pump::send_all;

// Paused time: an input lost makes the reader's wait end at once in its timeout, not hang.
#[tokio::test(start_paused = true)]
async fn a_full_channel_is_waited_for_and_every_input_arrives_once_in_order() {
    let (tx, mut rx) = input_channel();
    for conn in 0..INPUT_CAPACITY as u64 {
        tx.try_send(Input::ready(conn)).expect("room for the first inputs");
    }
    let last = INPUT_CAPACITY as u64 + 3;
    let mut mapped: Vec<Input> = (INPUT_CAPACITY as u64..last).map(Input::ready).collect();
    let send = async { send_all(&tx, &mut mapped).await.is_ok() };
    let read = async {
        let mut got = Vec::new();
        while got.len() < last as usize {
            let next = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await;
            match next {
                Ok(Some(input)) => got.push(input),
                Ok(None) | Err(_) => break,
            }
        }
        got
    };
    let (sent, got) = tokio::join!(send, read);
    assert!(sent, "a full channel is no closed one");
    assert!(mapped.is_empty(), "every mapped input handed over");
    let expected: Vec<Input> = (0..last).map(Input::ready).collect();
    assert_eq!(got, expected, "each input once, in order");
}

#[tokio::test]
async fn a_closed_channel_ends_the_hand_over() {
    let (tx, rx) = input_channel();
    drop(rx);
    let mut mapped = vec![Input::ready(0)];
    assert!(send_all(&tx, &mut mapped).await.is_err(), "Gone once the service is gone");
}
