//! The session stream against the fake engine: resume in and out of the window, a cut at
//! every event index, dropped events, auth failure, a DELETE blocked by a pending permission,
//! and a resume from the persisted cursor after a restart.

use std::time::{Duration, Instant};

use bb_breadboard::client::{
    BbError, CursorStore, GapReason, PermissionDecision, SessionStream, StreamUpdate,
};
use bb_engine_client::transport::{EngineAuth, TransportError};
use bb_fake_engine::{EngineConfig, Faults};
use secrecy::SecretString;

use crate::support::{
    Engine, STREAMING, client_for, collect_until, events, fast, is_kind, seqs, wait_turns,
};

#[tokio::test]
async fn resume_in_window_has_no_duplicate_and_no_missing_event() {
    let engine = Engine::start(EngineConfig::default()).await;
    let session = engine.session().await;
    let input = engine.script("turn", STREAMING);
    engine.client.send_input(&session, &input, &[]).await.unwrap();

    let mut first = SessionStream::open(&engine.client, &session, None, fast()).unwrap();
    let updates = collect_until(&mut first, |u| is_kind(u, "completion")).await;
    assert_eq!(seqs(&updates), (1..=9).collect::<Vec<_>>());
    let last = first.last_seq();
    first.close();

    engine.client.send_input(&session, &input, &[]).await.unwrap();
    wait_turns(&engine.client, &session, 2).await;
    let mut resumed = SessionStream::open(&engine.client, &session, last, fast()).unwrap();
    let updates = collect_until(&mut resumed, |u| is_kind(u, "completion")).await;
    assert_eq!(seqs(&updates), (10..=16).collect::<Vec<_>>());
    assert!(!updates.iter().any(|u| matches!(u, StreamUpdate::Gap { .. })));
}

#[tokio::test]
async fn resume_out_of_window_reports_the_gap_then_rebuilds_from_the_ring() {
    let engine = Engine::start(EngineConfig { ring_capacity: 4, ..EngineConfig::default() }).await;
    let session = engine.session().await;
    let mut first = SessionStream::open(&engine.client, &session, None, fast()).unwrap();
    let updates = collect_until(&mut first, |u| is_kind(u, "skills_selection")).await;
    assert_eq!(seqs(&updates), vec![1, 2]);
    first.close();

    engine.client.send_input(&session, &engine.script("turn", STREAMING), &[]).await.unwrap();
    wait_turns(&engine.client, &session, 1).await;
    let mut resumed = SessionStream::open(&engine.client, &session, Some(2), fast()).unwrap();
    let updates = collect_until(&mut resumed, |u| is_kind(u, "completion")).await;

    let gap = updates.iter().position(|u| {
        matches!(
            u,
            StreamUpdate::Gap {
                reason: GapReason::WindowExceeded { last_seq: 2 },
                lost: Some((3, 5))
            }
        )
    });
    let rebuilt =
        updates.iter().position(|u| matches!(u, StreamUpdate::Rebuilt { summary: Some(_) }));
    assert!(gap.is_some() && rebuilt.is_some() && gap < rebuilt, "{updates:#?}");
    let gaps = updates.iter().filter(|u| matches!(u, StreamUpdate::Gap { .. })).count();
    assert_eq!(gaps, 1, "one real gap, announced once");
    assert_eq!(seqs(&updates), vec![6, 7, 8, 9]);
}

#[tokio::test]
async fn a_cut_at_every_event_index_still_delivers_every_event_once_in_order() {
    let engine = Engine::start(EngineConfig::default()).await;
    let input = engine.script("turn", STREAMING);
    for cut in 0..=9 {
        let session = engine.session().await;
        engine.engine().update_faults(|f| f.cut_plan = [cut].into());
        let mut stream = SessionStream::open(&engine.client, &session, None, fast()).unwrap();
        engine.client.send_input(&session, &input, &[]).await.unwrap();
        let updates = collect_until(&mut stream, |u| is_kind(u, "completion")).await;
        assert_eq!(
            seqs(&updates),
            (1..=9).collect::<Vec<_>>(),
            "cut after {cut} events: {updates:#?}"
        );
        let ids: Vec<_> = events(&updates).iter().map(|e| e.sse_id.clone()).collect();
        let mut unique = ids.clone();
        unique.dedup();
        assert_eq!(ids, unique);
        assert!(!updates.iter().any(|u| matches!(u, StreamUpdate::Gap { .. })), "cut after {cut}");
    }
}

#[tokio::test]
async fn dropped_events_are_refilled_from_the_ring_without_a_gap() {
    let faults = Faults { drop_every: Some(3), ..Faults::default() };
    let engine = Engine::start(EngineConfig { faults, ..EngineConfig::default() }).await;
    let session = engine.session().await;
    let mut stream = SessionStream::open(&engine.client, &session, None, fast()).unwrap();
    let updates = collect_until(&mut stream, |u| is_kind(u, "skills_selection")).await;
    assert_eq!(seqs(&updates), vec![1, 2]);
    engine.client.send_input(&session, &engine.script("turn", STREAMING), &[]).await.unwrap();
    let updates = collect_until(&mut stream, |u| is_kind(u, "completion")).await;

    assert_eq!(seqs(&updates), (3..=9).collect::<Vec<_>>(), "{updates:#?}");
    assert!(
        !updates
            .iter()
            .any(|u| matches!(u, StreamUpdate::Gap { .. } | StreamUpdate::Rebuilt { .. })),
        "a refilled jump is no gap: {updates:#?}"
    );
}

/// A connection cut mid-stream is resumed with `Last-Event-ID` = the last `seq` delivered
/// (a two-digit one here, past the first turn's), and nothing comes twice or goes missing.
#[tokio::test]
async fn a_reconnect_after_a_drop_sends_the_last_seq_as_last_event_id() {
    let engine = Engine::start(EngineConfig::default()).await;
    let session = engine.session().await;
    let input = engine.script("turn", STREAMING);
    for turn in 1..=2 {
        engine.client.send_input(&session, &input, &[]).await.unwrap();
        wait_turns(&engine.client, &session, turn).await;
    }
    let before = engine.engine().stream_requests().len();
    engine.engine().update_faults(|f| f.cut_plan = [12].into());
    let mut stream = SessionStream::open(&engine.client, &session, None, fast()).unwrap();
    let updates =
        collect_until(&mut stream, |u| matches!(u, StreamUpdate::Event(e) if e.seq == Some(16)))
            .await;
    assert_eq!(seqs(&updates), (1..=16).collect::<Vec<_>>(), "{updates:#?}");
    let sent: Vec<_> = engine.engine().stream_requests()[before..]
        .iter()
        .map(|request| request.last_event_id.clone())
        .collect();
    assert_eq!(sent, [None, Some("12".to_owned())], "the whole ring first, then after seq 12");
}

#[tokio::test]
async fn a_wrong_token_is_a_clear_error_without_a_retry_loop() {
    let token = SecretString::from("s3cret");
    let engine =
        Engine::start(EngineConfig { token: Some(token), ..EngineConfig::default() }).await;
    let session = engine.session().await;
    let intruder =
        client_for(engine.running.url(), EngineAuth::Bearer(SecretString::from("wrong")));

    assert_eq!(intruder.health().await, Err(BbError::Unauthorized { status: 401 }));
    let mut stream = SessionStream::open(&intruder, &session, None, fast()).unwrap();
    let first = tokio::time::timeout(crate::support::BOUND, stream.next()).await.unwrap();
    assert_eq!(first, Some(Err(BbError::Unauthorized { status: 401 })));
    assert_eq!(stream.next().await, None);
}

/// With a token and no `Last-Event-ID` the engine answers an unknown session's stream with
/// 200 and an empty body: the stream is never reported connected, it ends (REST says 404).
#[tokio::test]
async fn an_unknown_session_is_never_connected() {
    let token = SecretString::from("s3cret");
    let engine =
        Engine::start(EngineConfig { token: Some(token), ..EngineConfig::default() }).await;
    let unknown = bb_fake_engine::uuid4();
    let mut stream = SessionStream::open(&engine.client, &unknown, None, fast()).unwrap();
    let updates = collect_until(&mut stream, |u| matches!(u, StreamUpdate::Ended { .. })).await;
    assert_eq!(updates, [StreamUpdate::Ended { summary: None }]);
    assert_eq!(stream.next().await, None);
}

#[tokio::test]
async fn delete_blocked_by_a_pending_permission_is_bounded_then_succeeds_after_a_deny() {
    // An agent turn (a configured script): its permission request blocks, unlike a replay's.
    let turn = [
        r#"{"type":"tool_call","payload":{"call":{"id":"c1","name":"bash","arguments":{"command":"ls"}}}}"#,
        r#"{"type":"permission_request","payload":{"request_id":"permission_1","tool":"bash","kind":"run"}}"#,
        r#"{"type":"tool_result","payload":{"result":{"id":"c1","ok":true}}}"#,
    ]
    .join("\n");
    let scripts = vec![bb_fake_engine::ScriptSource::Inline(turn)];
    let engine = Engine::start(EngineConfig { scripts, ..EngineConfig::default() }).await;
    let session = engine.session().await;
    let input = "go";
    let mut stream = SessionStream::open(&engine.client, &session, None, fast()).unwrap();
    engine.client.send_input(&session, input, &[]).await.unwrap();
    collect_until(&mut stream, |u| is_kind(u, "permission_request")).await;

    let blocked = engine.client.delete_session(&session, Duration::from_millis(200)).await;
    assert_eq!(
        blocked,
        Err(BbError::Transport(TransportError::Timeout { after: Duration::from_millis(200) }))
    );

    engine
        .client
        .permission_decision(&session, "permission_1", PermissionDecision::DenyOnce, None)
        .await
        .unwrap();
    engine.client.delete_session(&session, crate::support::BOUND).await.unwrap();
    let updates = collect_until(&mut stream, |u| matches!(u, StreamUpdate::Ended { .. })).await;
    let kinds: Vec<_> = events(&updates).iter().map(|e| &*e.kind).collect();
    assert_eq!(kinds.first(), Some(&"permission_response"));
    assert!(kinds.ends_with(&["completion", "run_finished"]), "{kinds:?}");
    assert_eq!(updates.last(), Some(&StreamUpdate::Ended { summary: None }));
    assert!(matches!(engine.client.get_session(&session).await, Err(BbError::NotFound { .. })));
}

#[tokio::test]
async fn a_restart_resumes_from_the_persisted_cursor() {
    let engine = Engine::start(EngineConfig::default()).await;
    let state = tempfile::tempdir().unwrap();
    let session = engine.session().await;
    let input = engine.script("turn", STREAMING);
    engine.client.send_input(&session, &input, &[]).await.unwrap();

    // First run: deliver, record every seq, flush once the debounce interval passed.
    let debounce = Duration::from_millis(500);
    let mut store = CursorStore::open(state.path(), debounce).unwrap();
    let t0 = base_instant();
    let mut stream =
        SessionStream::open(&engine.client, &session, store.get(&session), fast()).unwrap();
    let updates = collect_until(&mut stream, |u| is_kind(u, "completion")).await;
    for seq in seqs(&updates) {
        store.record(&session, seq, t0);
    }
    assert!(!store.flush_due(t0 + debounce / 2).unwrap(), "debounced");
    assert!(store.flush_due(t0 + debounce).unwrap());
    drop((stream, store));

    // Restart: a new store and stream resume after the persisted seq.
    engine.client.send_input(&session, &input, &[]).await.unwrap();
    wait_turns(&engine.client, &session, 2).await;
    let store = CursorStore::open(state.path(), debounce).unwrap();
    assert_eq!(store.get(&session), Some(9));
    let mut stream =
        SessionStream::open(&engine.client, &session, store.get(&session), fast()).unwrap();
    let updates = collect_until(&mut stream, |u| is_kind(u, "completion")).await;
    assert_eq!(seqs(&updates), (10..=16).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_stream_gap_event_is_delivered_and_reported() {
    let engine = Engine::start(EngineConfig::default()).await;
    let session = engine.session().await;
    let input = engine
        .script("gap", &[r#"{"type":"stream.gap","payload":{"reason":"provider_reconnect"}}"#]);
    engine.client.send_input(&session, &input, &[]).await.unwrap();
    let mut stream = SessionStream::open(&engine.client, &session, None, fast()).unwrap();
    let updates = collect_until(&mut stream, |u| is_kind(u, "completion")).await;
    let at = updates.iter().position(|u| is_kind(u, "stream.gap")).unwrap();
    assert_eq!(
        updates[at + 1],
        StreamUpdate::Gap {
            reason: GapReason::EngineGap { reason: "provider_reconnect".into() },
            lost: None
        }
    );
    assert!(matches!(updates[at + 2], StreamUpdate::Rebuilt { summary: Some(_) }));
}

#[allow(clippy::disallowed_methods)]
fn base_instant() -> Instant {
    Instant::now()
}

#[tokio::test]
async fn a_stalled_connection_is_dropped_by_the_read_timeout_and_resumed() {
    let faults = Faults { stall_after: Some(2), ..Faults::default() };
    let engine = Engine::start(EngineConfig { faults, ..EngineConfig::default() }).await;
    let session = engine.session().await;
    let mut options = fast();
    options.policy.read_timeout = Duration::from_millis(500);
    // A loaded machine may time out a slow but healthy connection too: allow for it.
    options.policy.max_attempts = 30;
    let mut stream = SessionStream::open(&engine.client, &session, None, options).unwrap();
    engine.client.send_input(&session, &engine.script("turn", STREAMING), &[]).await.unwrap();
    let first = collect_until(&mut stream, |u| is_kind(u, "skills_selection")).await;
    assert_eq!(seqs(&first), vec![1, 2]);
    // Each connection stalls after two events; every stall is cut by the read timeout and
    // resumed after the last seq, so the whole turn still arrives, once and in order.
    let rest = collect_until(&mut stream, |u| is_kind(u, "completion")).await;
    assert_eq!(seqs(&rest), (3..=9).collect::<Vec<_>>());
    assert!(rest.iter().any(
        |u| matches!(u, StreamUpdate::Reconnecting { error, .. } if error.contains("no bytes"))
    ));
}

#[test]
fn session_streams_can_move_between_threads() {
    fn send<T: Send>() {}
    send::<SessionStream>();
}
