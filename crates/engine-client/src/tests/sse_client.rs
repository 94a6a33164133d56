//! The reconnecting SSE client against the fake transport, on simulated time.

use std::sync::Arc;
use std::time::Duration;

use crate::fake::{FakeEnd, FakeStream, FakeTransport};
use crate::sse::{
    DropReason, NoJitter, ReconnectPolicy, ResumeFrom, SseClient, SseClientError, SseClientEvent,
    SseError, SseLimits,
};
use crate::transport::{EngineRequest, TransportError};

fn client(fake: &FakeTransport) -> SseClient {
    SseClient::new(Arc::new(fake.clone()), EngineRequest::get("/event")).with_jitter(NoJitter)
}

fn event(data: &str, id: &str) -> SseClientEvent {
    SseClientEvent::Event(crate::sse::SseEvent {
        event_type: "message".into(),
        data: data.into(),
        last_event_id: id.into(),
    })
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Pulls `n` items, panicking on a hard error.
async fn take(client: &mut SseClient, n: usize) -> Vec<SseClientEvent> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(client.next().await.unwrap().unwrap());
    }
    out
}

fn last_event_id_headers(fake: &FakeTransport) -> Vec<Option<String>> {
    fake.requests()
        .iter()
        .map(|r| r.headers.iter().find(|(k, _)| k == "last-event-id").map(|(_, v)| v.clone()))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn partial_event_is_discarded_on_reconnect_and_backoff_resets() {
    let fake = FakeTransport::new();
    let broken = TransportError::Body("connection reset".into());
    fake.push_stream(FakeStream::script(["data: a\n\ndata: par"], FakeEnd::Error(broken.clone())));
    fake.push_stream(FakeStream::script(["tial\n\n", "data: b\n\n"], FakeEnd::Eof));
    let mut c = client(&fake);
    let items = take(&mut c, 7).await;
    assert_eq!(
        items,
        vec![
            SseClientEvent::Connected { reconnects: 0 },
            event("a", ""),
            SseClientEvent::Disconnected {
                reason: DropReason::Transport(broken),
                attempt: 1,
                delay: ms(250)
            },
            SseClientEvent::Connected { reconnects: 1 },
            event("b", ""),
            // The first event reset the back-off: attempt 1 again.
            SseClientEvent::Disconnected { reason: DropReason::Eof, attempt: 1, delay: ms(250) },
            SseClientEvent::Disconnected {
                reason: DropReason::Transport(TransportError::Connect(
                    "no scripted stream left".into()
                )),
                attempt: 2,
                delay: ms(500)
            },
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn backoff_doubles_to_the_cap_then_gives_up() {
    let fake = FakeTransport::new();
    let policy = ReconnectPolicy { max_attempts: 6, ..ReconnectPolicy::default() };
    let mut c = client(&fake).with_policy(policy);
    let mut delays = Vec::new();
    let last = loop {
        match c.next().await.unwrap() {
            Ok(SseClientEvent::Disconnected { delay, .. }) => delays.push(delay),
            Ok(other) => panic!("unexpected {other:?}"),
            Err(err) => break err,
        }
    };
    assert_eq!(delays, vec![ms(250), ms(500), ms(1000), ms(2000), ms(4000), ms(5000)]);
    assert!(matches!(last, SseClientError::GaveUp { attempts: 6, .. }), "{last:?}");
    assert_eq!(c.next().await, None);
    assert_eq!(fake.requests().len(), 7);
}

#[tokio::test(start_paused = true)]
#[allow(clippy::disallowed_methods)] // measuring simulated time
async fn backoff_waits_in_simulated_time() {
    let fake = FakeTransport::new();
    let timeout = TransportError::Timeout { after: Duration::from_secs(1) };
    fake.push_stream(FakeStream::Refuse(timeout.clone()));
    fake.push_stream(FakeStream::Refuse(timeout));
    fake.push_stream(FakeStream::script(["data: x\n\n"], FakeEnd::Stall));
    let mut c = client(&fake);
    let start = tokio::time::Instant::now();
    let items = take(&mut c, 4).await;
    assert_eq!(items[2], SseClientEvent::Connected { reconnects: 0 });
    assert_eq!(start.elapsed(), ms(750));
}

#[tokio::test(start_paused = true)]
async fn stall_trips_the_read_timeout() {
    let fake = FakeTransport::new();
    fake.push_stream(FakeStream::script(
        ["data: {\"type\":\"server.connected\"}\n\n"],
        FakeEnd::Stall,
    ));
    let mut c = client(&fake);
    let items = take(&mut c, 3).await;
    assert_eq!(
        items[2],
        SseClientEvent::Disconnected {
            reason: DropReason::ReadTimeout(Duration::from_secs(15)),
            attempt: 1,
            delay: ms(250)
        }
    );
}

/// A caller that knows its stream must carry something tightens the read timeout: the
/// stall is declared after the new bound, in simulated time, and the next connection keeps it.
#[tokio::test(start_paused = true)]
#[allow(clippy::disallowed_methods)] // reads tokio's paused (simulated) clock
async fn a_tightened_read_timeout_declares_a_stall_sooner() {
    let fake = FakeTransport::new();
    let hello = "data: {\"type\":\"server.connected\"}\n\n";
    fake.push_stream(FakeStream::script([hello], FakeEnd::Stall));
    fake.push_stream(FakeStream::script([hello], FakeEnd::Stall));
    let mut c = client(&fake).with_policy(ReconnectPolicy {
        read_timeout: Duration::from_secs(60),
        ..ReconnectPolicy::default()
    });
    let started = tokio::time::Instant::now();
    take(&mut c, 2).await;
    c.set_read_timeout(Duration::from_secs(20));
    let dropped = |attempt| SseClientEvent::Disconnected {
        reason: DropReason::ReadTimeout(Duration::from_secs(20)),
        attempt,
        delay: ms(250 * u64::from(attempt)),
    };
    assert_eq!(take(&mut c, 1).await[0], dropped(1));
    assert_eq!(started.elapsed(), Duration::from_secs(20), "not the 60 s of the policy");
    let items = take(&mut c, 2).await;
    assert!(matches!(items[0], SseClientEvent::Connected { reconnects: 1 }), "{items:?}");
    assert_eq!(take(&mut c, 1).await[0], dropped(1), "the next connection keeps the bound");
    assert_eq!(started.elapsed(), Duration::from_secs(40) + ms(250));
}

#[tokio::test(start_paused = true)]
async fn last_event_id_is_sent_on_reconnect() {
    let fake = FakeTransport::new();
    fake.push_stream(FakeStream::script(["id: 7\ndata: a\n\nid: 8\ndata: cut"], FakeEnd::Eof));
    fake.push_stream(FakeStream::script(["data: b\n\n"], FakeEnd::Stall));
    let mut c = client(&fake).with_resume_id("5");
    let items = take(&mut c, 5).await;
    assert_eq!(items[1], event("a", "7"));
    assert_eq!(items[4], event("b", "7"));
    assert_eq!(last_event_id_headers(&fake), vec![Some("5".into()), Some("7".into())]);
}

#[tokio::test(start_paused = true)]
async fn caller_chosen_resume_id_wins_over_sse_ids() {
    let fake = FakeTransport::new();
    fake.push_stream(FakeStream::script(["id: uuid-1\ndata: {\"seq\":3}\n\n"], FakeEnd::Eof));
    fake.push_stream(FakeStream::script(["data: b\n\n"], FakeEnd::Stall));
    let mut c = client(&fake).with_resume_from(ResumeFrom::Caller);
    let items = take(&mut c, 2).await;
    assert_eq!(items[1], event("{\"seq\":3}", "uuid-1"));
    c.set_resume_id(Some("3".into()));
    take(&mut c, 2).await;
    assert_eq!(last_event_id_headers(&fake), vec![None, Some("3".into())]);
}

#[tokio::test(start_paused = true)]
async fn retry_field_sets_the_base_delay() {
    let fake = FakeTransport::new();
    fake.push_stream(FakeStream::script(["retry: 1000\ndata: a\n\n"], FakeEnd::Eof));
    let mut c = client(&fake);
    let items = take(&mut c, 4).await;
    assert_eq!(items[1], SseClientEvent::Retry(ms(1000)));
    assert_eq!(
        items[3],
        SseClientEvent::Disconnected { reason: DropReason::Eof, attempt: 1, delay: ms(1000) }
    );
}

#[tokio::test(start_paused = true)]
async fn auth_failure_is_a_hard_error_without_retry() {
    let fake = FakeTransport::new();
    fake.push_stream(FakeStream::Refuse(TransportError::Auth { status: 401 }));
    let mut c = client(&fake);
    assert_eq!(c.next().await, Some(Err(SseClientError::Auth { status: 401 })));
    assert_eq!(c.next().await, None);
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn non_retryable_status_is_fatal() {
    let fake = FakeTransport::new();
    let not_found = TransportError::Http { status: 404, body: String::new() };
    fake.push_stream(FakeStream::Refuse(not_found.clone()));
    let mut c = client(&fake);
    assert_eq!(c.next().await, Some(Err(SseClientError::Fatal(not_found))));
    assert_eq!(c.next().await, None);
}

#[tokio::test(start_paused = true)]
async fn oversized_event_drops_the_connection() {
    let fake = FakeTransport::new();
    fake.push_stream(FakeStream::script(["data: ok\n\ndata: 0123456789\n"], FakeEnd::Stall));
    let limits = SseLimits { max_line_bytes: 12, max_event_bytes: 64 };
    let mut c = client(&fake).with_limits(limits);
    let items = take(&mut c, 3).await;
    assert_eq!(items[1], event("ok", ""));
    assert_eq!(
        items[2],
        SseClientEvent::Disconnected {
            reason: DropReason::Parse(SseError::LineTooLong { limit: 12 }),
            attempt: 1,
            delay: ms(250)
        }
    );
}

#[tokio::test(start_paused = true)]
async fn close_stops_the_client() {
    let fake = FakeTransport::new();
    fake.push_stream(FakeStream::script(["data: a\n\n"], FakeEnd::Stall));
    let mut c = client(&fake);
    take(&mut c, 1).await;
    c.close();
    assert_eq!(c.next().await, None);
}

#[test]
fn policy_delay_respects_server_retry_above_the_cap() {
    let policy = ReconnectPolicy::default();
    assert_eq!(policy.delay(1, Some(Duration::from_secs(10))), Duration::from_secs(10));
    assert_eq!(policy.delay(40, None), Duration::from_secs(5));
    let jittered = crate::sse::RandomJitter;
    for _ in 0..100 {
        let d = crate::sse::Jitter::apply(&jittered, ms(1000));
        assert!(d >= ms(500) && d <= ms(1000), "{d:?}");
    }
}

/// A transport whose streams open only when the test lets them (each open waits for a
/// permit), counting the attempts.
#[derive(Debug, Clone)]
struct Gated {
    inner: FakeTransport,
    gate: Arc<tokio::sync::Semaphore>,
    opens: Arc<std::sync::atomic::AtomicUsize>,
}

#[async_trait::async_trait]
impl crate::transport::EngineTransport for Gated {
    async fn request(
        &self,
        request: EngineRequest,
    ) -> Result<crate::transport::EngineResponse, TransportError> {
        self.inner.request(request).await
    }

    async fn open_stream(
        &self,
        request: EngineRequest,
    ) -> Result<crate::transport::ByteStream, TransportError> {
        self.opens.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _permit = self.gate.acquire().await;
        self.inner.open_stream(request).await
    }
}

impl Gated {
    /// `inner`'s streams, each opened only once the test adds a permit.
    fn new(inner: FakeTransport) -> Self {
        Self { inner, gate: Arc::new(tokio::sync::Semaphore::new(0)), opens: Arc::default() }
    }

    /// Attempts to open a stream so far (a dropped attempt counts).
    fn opens(&self) -> usize {
        self.opens.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn client(&self) -> SseClient {
        SseClient::new(Arc::new(self.clone()), EngineRequest::get("/event")).with_jitter(NoJitter)
    }
}

/// Polls `next()` as a caller's `select!` does when its other branch keeps winning: every
/// item that is ready is taken, and the call that would wait is dropped.
fn poll_ready(c: &mut SseClient, seen: &mut Vec<SseClientEvent>) {
    use futures_util::FutureExt as _;
    while let Some(item) = c.next().now_or_never() {
        seen.push(item.expect("not closed").expect("not a hard error"));
    }
}

/// A `next()` dropped at every point (opening, mid-event, in the back-off wait, opening
/// again) loses no event and repeats none; the back-off is not restarted by the drops, and
/// the reconnect resumes from the last event delivered.
#[tokio::test(start_paused = true)]
async fn a_dropped_next_loses_and_repeats_no_event() {
    let fake = FakeTransport::new();
    let first = fake.push_live_stream();
    let second = fake.push_live_stream();
    let gated = Gated::new(fake.clone());
    let mut c = gated.client();
    let mut seen = Vec::new();
    let chunk = |s: &str| Ok(bytes::Bytes::from(s.to_owned()));

    poll_ready(&mut c, &mut seen);
    poll_ready(&mut c, &mut seen);
    gated.gate.add_permits(1);
    poll_ready(&mut c, &mut seen);
    first.send(chunk("id: 1\ndata: a\n\nid: 2\nda")).unwrap();
    poll_ready(&mut c, &mut seen);
    poll_ready(&mut c, &mut seen);
    first.send(chunk("ta: b\n\n")).unwrap();
    poll_ready(&mut c, &mut seen);
    drop(first);
    poll_ready(&mut c, &mut seen);
    tokio::time::advance(ms(200)).await;
    poll_ready(&mut c, &mut seen);
    assert_eq!(gated.opens(), 1, "still waiting out the back-off");
    tokio::time::advance(ms(50)).await;
    poll_ready(&mut c, &mut seen);
    assert_eq!(gated.opens(), 2, "the back-off ran from its start, not from the last call");
    poll_ready(&mut c, &mut seen);
    gated.gate.add_permits(1);
    poll_ready(&mut c, &mut seen);
    second.send(chunk("id: 3\ndata: c\n\n")).unwrap();
    poll_ready(&mut c, &mut seen);

    assert_eq!(
        seen,
        [
            SseClientEvent::Connected { reconnects: 0 },
            event("a", "1"),
            event("b", "2"),
            SseClientEvent::Disconnected { reason: DropReason::Eof, attempt: 1, delay: ms(250) },
            SseClientEvent::Connected { reconnects: 1 },
            event("c", "3"),
        ]
    );
    assert_eq!(gated.opens(), 2, "one attempt per connection");
    assert_eq!(last_event_id_headers(&fake), [None, Some("2".into())]);
}

/// A resume id set while a kept attempt is opening (with the id before it) replaces that
/// attempt: the connection made sends the new id, so the engine neither replays what was
/// delivered nor skips what was not.
#[tokio::test(start_paused = true)]
async fn a_resume_id_changed_while_opening_is_sent_by_the_connection_made() {
    use futures_util::FutureExt as _;
    let fake = FakeTransport::new();
    fake.push_stream(FakeStream::script(["data: d\n\n"], FakeEnd::Stall));
    let gated = Gated::new(fake.clone());
    let mut c = gated.client().with_resume_from(ResumeFrom::Caller).with_resume_id("3");
    assert!(c.next().now_or_never().is_none(), "opening with 3");
    c.set_resume_id(Some("4".into()));
    assert!(c.next().now_or_never().is_none(), "opening with 4");
    assert!(c.next().now_or_never().is_none(), "the same attempt, 4 unchanged");
    gated.gate.add_permits(1);
    assert_eq!(
        take(&mut c, 2).await,
        [SseClientEvent::Connected { reconnects: 0 }, event("d", "3")]
    );
    assert_eq!(gated.opens(), 2, "the attempt with 3 was replaced, the one with 4 kept");
    assert_eq!(last_event_id_headers(&fake), [Some("4".into())]);
    assert_eq!(c.resume_header().as_deref(), Some("4"));
}

/// A caller's `select!` may drop `next()` while a connection is being opened (a command
/// arrived): the next call carries on with that connection, it does not open another one
/// (the engine would see the first connection closed before its response was read).
#[tokio::test]
async fn a_dropped_next_keeps_the_connection_being_opened() {
    use futures_util::FutureExt as _;
    let fake = FakeTransport::new();
    fake.push_stream(FakeStream::script(["data: a\n\n"], FakeEnd::Stall));
    let gated = Gated::new(fake.clone());
    let mut c = gated.client();
    for _ in 0..3 {
        assert!(c.next().now_or_never().is_none(), "still opening");
    }
    gated.gate.add_permits(1);
    assert_eq!(
        take(&mut c, 2).await,
        [SseClientEvent::Connected { reconnects: 0 }, event("a", "")]
    );
    assert_eq!(gated.opens(), 1, "one connection opened");
    assert_eq!(fake.requests().len(), 1);
}

/// A read timeout changed while a connection is being opened bounds that attempt from its
/// start (a caller tightens it when a turn starts): the attempt is not held to the bound it
/// began with.
#[tokio::test(start_paused = true)]
async fn a_tightened_read_timeout_bounds_the_connection_being_opened() {
    use futures_util::FutureExt as _;
    let gated = Gated::new(FakeTransport::new());
    let policy =
        ReconnectPolicy { read_timeout: Duration::from_secs(60), ..ReconnectPolicy::default() };
    let mut c = gated.client().with_policy(policy);
    assert!(c.next().now_or_never().is_none(), "opening");
    c.set_read_timeout(Duration::from_secs(20));
    let item = tokio::time::timeout(Duration::from_secs(30), c.next())
        .await
        .expect("the attempt ends at the tightened bound, before the old one")
        .expect("an item")
        .expect("not a hard error");
    let after = Duration::from_secs(20);
    assert!(
        matches!(
            item,
            SseClientEvent::Disconnected { reason: DropReason::Transport(TransportError::Timeout { after: a }), attempt: 1, .. } if a == after
        ),
        "{item:?}"
    );
    assert_eq!(gated.opens(), 1);
}

/// The read timeout's timer is kept from one read to the next: bytes more often than the
/// timeout never trip it, and silence after them trips it one timeout after the last read
/// began, as a timer set anew at every read would.
#[tokio::test(start_paused = true)]
#[allow(clippy::disallowed_methods)] // reads tokio's paused (simulated) clock
async fn the_read_timeout_counts_from_the_last_read() {
    let fake = FakeTransport::new();
    let live = fake.push_live_stream();
    let mut c = client(&fake); // the policy's read timeout: 15 s
    assert!(matches!(take(&mut c, 1).await[0], SseClientEvent::Connected { reconnects: 0 }));
    let started = tokio::time::Instant::now();
    for n in 0..10u64 {
        let line = format!("id: {n}\ndata: x\n\n");
        let send = live.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(10)).await;
            let _ = send.send(Ok(bytes::Bytes::from(line)));
        });
        assert_eq!(take(&mut c, 1).await[0], event("x", &n.to_string()));
    }
    assert_eq!(started.elapsed(), Duration::from_secs(100), "no timeout in 100 s of traffic");
    let items = take(&mut c, 1).await;
    assert_eq!(
        items[0],
        SseClientEvent::Disconnected {
            reason: DropReason::ReadTimeout(Duration::from_secs(15)),
            attempt: 1,
            delay: ms(250)
        }
    );
    assert_eq!(started.elapsed(), Duration::from_secs(115));
}

#[tokio::test(start_paused = true)]
async fn a_resume_id_written_in_place_is_sent() {
    let fake = FakeTransport::new();
    fake.push_stream(FakeStream::script(["id: uuid-1\ndata: {\"seq\":3}\n\n"], FakeEnd::Eof));
    fake.push_stream(FakeStream::script(["data: b\n\n"], FakeEnd::Stall));
    let mut c = client(&fake).with_resume_from(ResumeFrom::Caller).with_resume_id("12345");
    take(&mut c, 2).await;
    c.set_resume_id_to(3u64);
    take(&mut c, 2).await;
    assert_eq!(last_event_id_headers(&fake), vec![Some("12345".into()), Some("3".into())]);
}
