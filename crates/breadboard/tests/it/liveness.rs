//! Dead streams through the adapter on the fake engine: while a turn runs, a session stream
//! that carries nothing for the busy read timeout is declared dead and resumed after the last
//! `seq` (the idle read timeout is far longer); a stream lost for good does not leave the
//! session running, and is resumed once the engine answers.

use std::sync::Arc;
use std::time::Duration;

use bb_breadboard::{BreadboardAdapter, BreadboardConfig};
use bb_fake_engine::{EngineConfig, Faults};
use bb_host::Input;
use bb_protocol::v1::{ConnectionStatus, SendMessageParams, SessionParams};
use bb_service::{EngineAdapter, InputReceiver, SystemClock};

use crate::support::{BOUND, Engine, STREAMING, fast};

fn adapter(engine: &Engine, max_attempts: u32) -> (Arc<BreadboardAdapter>, InputReceiver) {
    let mut config = BreadboardConfig::new(engine.dir.path().join("state"));
    config.stream = fast();
    // Idle silence is normal: a stall would go unnoticed for a minute. While a turn runs it
    // is dead after 300 ms.
    config.stream.policy.read_timeout = Duration::from_secs(60);
    config.stream.policy.max_attempts = max_attempts;
    config.stream.busy_read_timeout = Duration::from_millis(300);
    config.health_interval = Duration::from_millis(100);
    BreadboardAdapter::new(engine.client.clone(), config, Arc::new(SystemClock))
}

async fn select(adapter: &BreadboardAdapter, session: &str) {
    let params = SessionParams { session_id: session.to_owned(), tab_id: None };
    adapter.select_session(params).await.unwrap();
}

async fn send(adapter: &BreadboardAdapter, engine: &Engine, session: &str) {
    let text = engine.script("turn", STREAMING);
    let params = SendMessageParams {
        session_id: session.to_owned(),
        text,
        attachment_ids: None,
        message_id: None,
    };
    adapter.send_message(params).await.unwrap();
}

/// A fake engine whose every connection goes silent after three events, a session streamed
/// through the adapter (`max_attempts` reconnects in a row), and a turn sent to it.
async fn turn_on_stalling_streams(
    max_attempts: u32,
) -> (Engine, String, Arc<BreadboardAdapter>, InputReceiver) {
    let faults = Faults { stall_after: Some(3), ..Faults::default() };
    let engine = Engine::start(EngineConfig { faults, ..EngineConfig::default() }).await;
    let session = engine.session().await;
    let (adapter, rx) = adapter(&engine, max_attempts);
    select(&adapter, &session).await;
    send(&adapter, &engine, &session).await;
    (engine, session, adapter, rx)
}

/// Reads inputs until `stop`, within [`BOUND`].
async fn inputs_until(rx: &mut InputReceiver, mut stop: impl FnMut(&Input) -> bool) -> Vec<Input> {
    let mut out = Vec::new();
    let read = async {
        while let Some(input) = rx.recv().await {
            let done = stop(&input);
            out.push(input);
            if done {
                break;
            }
        }
    };
    tokio::time::timeout(BOUND, read).await.expect("the expected input within the bound");
    out
}

fn event_ids(inputs: &[Input], session: &str) -> Vec<String> {
    inputs
        .iter()
        .filter_map(|i| match i {
            Input::Events { session_id, events } if **session_id == *session => Some(events),
            _ => None,
        })
        .flatten()
        .map(|(e, _)| e.id.to_string())
        .collect()
}

fn has_type(input: &Input, kind: &str) -> bool {
    matches!(input, Input::Events { events, .. } if events.iter().any(|(e, _)| e.event_type == kind))
}

#[tokio::test]
async fn a_silent_stream_of_a_running_turn_is_resumed_without_loss() {
    let (_engine, session, _adapter, mut rx) = turn_on_stalling_streams(50).await;
    let inputs = inputs_until(&mut rx, |i| has_type(i, "completion")).await;
    let ids = event_ids(&inputs, &session);
    let distinct: std::collections::BTreeSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), ids.len(), "nothing twice: {ids:?}");
    for kind in ["assistant_delta", "assistant_message", "run_finished", "completion"] {
        assert!(inputs.iter().any(|i| has_type(i, kind)), "{kind} arrived");
    }
    let declared = inputs.iter().any(|i| matches!(i, Input::Connection(c)
        if c.status == ConnectionStatus::Connecting
            && c.last_error.as_deref().is_some_and(|e| e.contains("no bytes from the stream for 300ms"))));
    assert!(declared, "the silence was declared (busy timeout, not the idle 60 s): {inputs:?}");
}

#[tokio::test]
async fn a_stream_lost_for_good_does_not_leave_the_session_running_and_is_resumed() {
    // One reconnect allowed: two silent connections in a row lose the stream.
    let (engine, session, _adapter, mut rx) = turn_on_stalling_streams(1).await;
    let running = |i: &Input, want: bool| matches!(i, Input::SessionRunning { session_id, running } if *session_id == session && *running == want);
    let first = inputs_until(&mut rx, |i| running(i, true)).await;
    // From now on every connection is silent from its start.
    engine.engine().update_faults(|f| f.stall_after = Some(0));
    let mut lost = inputs_until(&mut rx, |i| running(i, false)).await;
    // The transcript says why.
    lost.extend(inputs_until(&mut rx, |i| has_warning(i, "stream of this session was lost")).await);
    assert!(
        !lost.iter().any(|i| has_type(i, "completion")),
        "the turn had not ended: it is the dead stream that stops 'running'"
    );
    // The engine's streams work again: the monitor resumes the lost one after the last `seq`
    // it delivered, and the rest of the turn arrives, once.
    engine.engine().update_faults(|f| f.stall_after = None);
    let rest = inputs_until(&mut rx, |i| has_type(i, "completion")).await;
    let all: Vec<Input> = first.into_iter().chain(lost).chain(rest).collect();
    let ids = event_ids(&all, &session);
    let distinct: std::collections::BTreeSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), ids.len(), "nothing twice: {ids:?}");
    for kind in ["assistant_message", "run_finished", "completion"] {
        assert!(all.iter().any(|i| has_type(i, kind)), "{kind} arrived");
    }
}

fn has_warning(input: &Input, text: &str) -> bool {
    matches!(input, Input::Events { events, .. }
        if events.iter().any(|(e, _)| e.payload.to_string().contains(text)))
}
