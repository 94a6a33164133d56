//! The engine-neutral reconnecting SSE client: opens a stream through the transport port,
//! parses it, and reconnects with back-off, `Last-Event-ID` and a read timeout.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;

use super::backoff::{Jitter, RandomJitter, ReconnectPolicy};
use super::parser::{SseError, SseEvent, SseItem, SseLimits, SseParser};
use crate::transport::{ByteStream, EngineRequest, EngineTransport, TransportError};

/// Which id the client sends as `Last-Event-ID` when it reconnects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResumeFrom {
    /// The stream's last event id (the SSE `id` field), as WHATWG prescribes.
    #[default]
    LastEventId,
    /// Whatever the caller last gave [`SseClient::set_resume_id`] (e.g. the last numeric
    /// sequence number, when the stream's ids are not resumable).
    Caller,
}

/// Why a connection ended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DropReason {
    /// Opening or reading failed.
    #[error(transparent)]
    Transport(TransportError),
    /// No bytes (not even a heartbeat) for this long.
    #[error("no bytes from the stream for {0:?}")]
    ReadTimeout(Duration),
    /// The server ended the stream.
    #[error("the stream ended")]
    Eof,
    /// The stream broke the parser's limits.
    #[error(transparent)]
    Parse(SseError),
}

/// What the client yields, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SseClientEvent {
    /// A connection is open. Events of an earlier connection that were not complete are
    /// gone: consumers that keep derived state treat this as a refresh boundary.
    Connected {
        /// How many connections were opened before this one.
        reconnects: u32,
    },
    /// A dispatched event.
    Event(SseEvent),
    /// A comment line.
    Comment(String),
    /// The stream set its reconnection time.
    Retry(Duration),
    /// The connection dropped; the client reconnects after `delay`.
    Disconnected {
        /// Why it dropped.
        reason: DropReason,
        /// Consecutive failed attempts so far (1-based).
        attempt: u32,
        /// How long the client waits before reconnecting.
        delay: Duration,
    },
}

/// Why the client stopped for good.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseClientError {
    /// The engine refused the credentials; the client does not retry.
    #[error("engine refused the credentials (HTTP {status})")]
    Auth {
        /// 401 or 403.
        status: u16,
    },
    /// A failure that retrying cannot fix (e.g. 404, not an event stream).
    #[error("event stream failed: {0}")]
    Fatal(TransportError),
    /// Every allowed attempt failed.
    #[error("event stream lost after {attempts} attempts: {last}")]
    GaveUp {
        /// Attempts made.
        attempts: u32,
        /// The last failure.
        last: DropReason,
    },
}

/// A connection being opened: kept in the client's state, so a caller that drops
/// [`SseClient::next`] (a `select!` that took another branch) resumes the same attempt at its
/// next call instead of abandoning it and opening another connection.
type Opening = Pin<Box<dyn Future<Output = Result<ByteStream, TransportError>> + Send>>;

/// The id a caller chose to resume from ([`ResumeFrom::Caller`]). A number is kept as one and
/// written out only when a connection is opened: a stream whose position moves at every event
/// formats nothing per event.
#[derive(Debug, Clone, PartialEq, Eq)]
enum CallerId {
    /// None: the next connection sends no `Last-Event-ID`.
    None,
    /// This text.
    Text(String),
    /// This number, in decimal.
    Number(u64),
}

enum State {
    /// Waiting out the back-off before the next attempt (zero: none), until the deadline
    /// it holds once the wait began.
    Connect {
        delay: Duration,
        until: Option<Pin<Box<tokio::time::Sleep>>>,
    },
    /// Opening a connection, bounded by the read timeout from the attempt's start (`bound`,
    /// set for `bound_for`; a read timeout changed meanwhile moves it). `resume` is the
    /// `Last-Event-ID` it was opened with: a resume id changed meanwhile makes a new attempt.
    Opening {
        opening: Opening,
        bound: Pin<Box<tokio::time::Sleep>>,
        bound_for: Duration,
        resume: Option<String>,
    },
    Streaming(ByteStream),
    Done,
}

/// A reconnecting SSE client. Pull items with [`SseClient::next`].
///
/// ```no_run
/// # async fn demo(transport: std::sync::Arc<dyn bb_engine_client::transport::EngineTransport>) {
/// use bb_engine_client::sse::{ResumeFrom, SseClient, SseClientEvent};
/// use bb_engine_client::transport::EngineRequest;
///
/// // Resume from the last numeric sequence number rather than the SSE `id` field.
/// let request = EngineRequest::get("/v1/sessions/s1/events");
/// let mut client = SseClient::new(transport, request)
///     .with_resume_from(ResumeFrom::Caller)
///     .with_resume_id("41");
/// while let Some(item) = client.next().await {
///     match item {
///         Ok(SseClientEvent::Event(event)) => {
///             // ... decode `event.data`; once its sequence number is known:
///             client.set_resume_id(Some("42".to_owned()));
///         }
///         Ok(SseClientEvent::Connected { .. }) => { /* refresh boundary */ }
///         Ok(_) => {}
///         Err(err) => { /* hard error: surface it with a Retry action */ break; }
///     }
/// }
/// # }
/// ```
///
/// Cancel safety: dropping a `next()` future loses nothing: no item, and a back-off wait or a
/// connection being opened carries on at the next call (it is not restarted), unless the
/// resume id changed meanwhile: the attempt is then replaced by one sending the new id.
pub struct SseClient {
    transport: Arc<dyn EngineTransport>,
    request: EngineRequest,
    policy: ReconnectPolicy,
    jitter: Box<dyn Jitter>,
    parser: SseParser,
    resume_from: ResumeFrom,
    resume_id: CallerId,
    state: State,
    pending: VecDeque<SseClientEvent>,
    failure: Option<SseClientError>,
    items: Vec<SseItem>,
    attempt: u32,
    connections: u32,
    server_retry: Option<Duration>,
    healthy: bool,
    /// The read timeout's timer, kept from one read to the next ([`read_until`]).
    watch: Option<Watch>,
}

/// The read timeout's timer, and the waker its last poll left registered with it.
struct Watch {
    timer: Pin<Box<tokio::time::Sleep>>,
    /// The task that last polled the timer to `Pending`: the timer wakes it when it fires,
    /// so while that task reads and the timer has not fired, the timer is not polled again
    /// (a poll registers the waker anew, ~0.1 k instructions at every read that waits).
    armed: Option<Waker>,
}

impl std::fmt::Debug for SseClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseClient")
            .field("request", &self.request)
            .field("policy", &self.policy)
            .field("resume_from", &self.resume_from)
            .field("attempt", &self.attempt)
            .field("connections", &self.connections)
            .finish_non_exhaustive()
    }
}

impl SseClient {
    /// Changes how long a connection may yield no bytes before it counts as dropped (and
    /// how long opening one may take), from the next read on: a caller that knows when its
    /// stream must carry something (a turn runs) tightens it, and loosens it when silence is
    /// normal again.
    pub fn set_read_timeout(&mut self, read_timeout: Duration) {
        self.policy.read_timeout = read_timeout;
    }

    /// A client that opens `request` (a `GET` of the stream) through `transport` on the
    /// first call to [`SseClient::next`].
    pub fn new(transport: Arc<dyn EngineTransport>, request: EngineRequest) -> Self {
        Self {
            transport,
            request,
            policy: ReconnectPolicy::default(),
            jitter: Box::new(RandomJitter),
            parser: SseParser::new(SseLimits::default()),
            resume_from: ResumeFrom::LastEventId,
            resume_id: CallerId::None,
            state: State::Connect { delay: Duration::ZERO, until: None },
            pending: VecDeque::new(),
            failure: None,
            items: Vec::new(),
            attempt: 0,
            connections: 0,
            server_retry: None,
            healthy: false,
            watch: None,
        }
    }

    /// Sets the reconnect policy.
    #[must_use]
    pub fn with_policy(mut self, policy: ReconnectPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Sets the jitter (tests use [`super::NoJitter`]).
    #[must_use]
    pub fn with_jitter(mut self, jitter: impl Jitter + 'static) -> Self {
        self.jitter = Box::new(jitter);
        self
    }

    /// Sets the parser's limits.
    #[must_use]
    pub fn with_limits(mut self, limits: SseLimits) -> Self {
        let last_event_id = self.parser.last_event_id().to_owned();
        self.parser = SseParser::new(limits);
        self.parser.set_last_event_id(last_event_id);
        self
    }

    /// Chooses which id is sent as `Last-Event-ID`.
    #[must_use]
    pub fn with_resume_from(mut self, resume_from: ResumeFrom) -> Self {
        self.resume_from = resume_from;
        self
    }

    /// Resumes from `id` (e.g. persisted by an earlier run): sent on the first connection.
    #[must_use]
    pub fn with_resume_id(mut self, id: impl Into<String>) -> Self {
        let id = id.into();
        self.parser.set_last_event_id(id.clone());
        self.resume_id = CallerId::Text(id);
        self
    }

    /// With [`ResumeFrom::Caller`]: the id to send on the next reconnect (`None`: none).
    pub fn set_resume_id(&mut self, id: Option<String>) {
        self.resume_id = id.map_or(CallerId::None, CallerId::Text);
    }

    /// [`SseClient::set_resume_id`] with the number `seq`, kept as a number and written out
    /// (in decimal) only when a connection is opened: a caller that moves its position at
    /// every event (a numeric sequence) pays a store per event, not a formatting.
    pub fn set_resume_id_to(&mut self, seq: u64) {
        self.resume_id = CallerId::Number(seq);
    }

    /// Takes back an event's `data` once the caller has read it, for the next event's data
    /// to be written into ([`SseParser::reuse_data`]): a caller that drops each event's data
    /// after reading it saves an allocation per event.
    pub fn reuse_data(&mut self, data: String) {
        self.parser.reuse_data(data);
    }

    /// The stream's last event id.
    pub fn last_event_id(&self) -> &str {
        self.parser.last_event_id()
    }

    /// Stops the client: the connection is dropped and `next` returns `None`.
    pub fn close(&mut self) {
        self.state = State::Done;
        self.watch = None;
        self.pending.clear();
        self.failure = None;
    }

    /// The id sent as `Last-Event-ID` on the next connection (and, right after
    /// [`SseClientEvent::Connected`], the one the open connection was made with).
    pub fn resume_header(&self) -> Option<String> {
        let id = match (self.resume_from, &self.resume_id) {
            (ResumeFrom::LastEventId, _) => self.parser.last_event_id().to_owned(),
            (ResumeFrom::Caller, CallerId::None) => return None,
            (ResumeFrom::Caller, CallerId::Text(id)) => id.clone(),
            (ResumeFrom::Caller, CallerId::Number(seq)) => seq.to_string(),
        };
        (!id.is_empty()).then_some(id)
    }

    /// The next item; `None` once closed, `Err` once the client has given up for good
    /// (after which it yields `None`).
    pub async fn next(&mut self) -> Option<Result<SseClientEvent, SseClientError>> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some(Ok(item));
            }
            if let Some(err) = self.failure.take() {
                return Some(Err(err));
            }
            if matches!(&self.state, State::Opening { resume, .. } if *resume != self.resume_header())
            {
                // The resume id moved while the attempt was opening (the caller set it between
                // two calls): that attempt would resume from the old position, so it is
                // dropped and one with the new id is opened.
                self.state = self.open();
            }
            match &mut self.state {
                State::Done => return None,
                State::Connect { delay, until } => {
                    if !delay.is_zero() {
                        until.get_or_insert_with(|| Box::pin(tokio::time::sleep(*delay))).await;
                    }
                    self.state = self.open();
                }
                State::Opening { opening, bound, bound_for, .. } => {
                    let timeout = self.policy.read_timeout;
                    if *bound_for != timeout {
                        // Tightened or loosened since the attempt began: it counts from there.
                        let began = bound.deadline() - *bound_for;
                        bound.as_mut().reset(began + timeout);
                        *bound_for = timeout;
                    }
                    let opened = tokio::select! {
                        biased;
                        opened = opening.as_mut() => Some(opened),
                        () = bound.as_mut() => None,
                    };
                    self.opened(opened);
                }
                State::Streaming(stream) => {
                    let timeout = self.policy.read_timeout;
                    let deadline = timer_now() + timeout;
                    let watch = &mut self.watch;
                    let read = std::future::poll_fn(|cx| read_until(stream, watch, deadline, cx));
                    match read.await {
                        None => self.dropped(DropReason::ReadTimeout(timeout)),
                        Some(None) => self.dropped(DropReason::Eof),
                        Some(Some(Err(err))) => self.dropped(DropReason::Transport(err)),
                        Some(Some(Ok(bytes))) => self.feed(&bytes),
                    }
                }
            }
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        let fed = self.parser.feed(bytes, &mut self.items);
        for item in self.items.drain(..) {
            self.pending.push_back(match item {
                SseItem::Event(event) => {
                    if !self.healthy {
                        // The first event of a connection: it is healthy, back-off resets.
                        self.healthy = true;
                        self.attempt = 0;
                    }
                    SseClientEvent::Event(event)
                }
                SseItem::Comment(text) => SseClientEvent::Comment(text),
                SseItem::Retry(ms) => {
                    let delay = Duration::from_millis(ms);
                    self.server_retry = Some(delay);
                    SseClientEvent::Retry(delay)
                }
            });
        }
        if let Err(err) = fed {
            self.dropped(DropReason::Parse(err));
        }
    }

    /// A connection attempt, bounded by the read timeout from now.
    fn open(&self) -> State {
        let mut request = self.request.clone();
        // Default headers of an event-stream client (WHATWG): no cache in between. The
        // transport adds `Accept: text/event-stream`; a caller's own value wins.
        if !request.headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("cache-control")) {
            request = request.with_header("cache-control", "no-cache");
        }
        let resume = self.resume_header();
        if let Some(id) = &resume {
            request = request.with_header("last-event-id", id.clone());
        }
        let transport = self.transport.clone();
        let bound_for = self.policy.read_timeout;
        State::Opening {
            opening: Box::pin(async move { transport.open_stream(request).await }),
            bound: Box::pin(tokio::time::sleep(bound_for)),
            bound_for,
            resume,
        }
    }

    /// What a connection attempt gave (`None`: it took longer than the read timeout), queued.
    fn opened(&mut self, opened: Option<Result<ByteStream, TransportError>>) {
        match opened {
            Some(Ok(stream)) => {
                self.parser.reset_stream();
                self.state = State::Streaming(stream);
                self.healthy = false;
                let reconnects = self.connections;
                self.connections += 1;
                self.pending.push_back(SseClientEvent::Connected { reconnects });
            }
            Some(Err(TransportError::Auth { status })) => {
                self.fail(SseClientError::Auth { status });
            }
            Some(Err(err)) if !err.is_retryable() => self.fail(SseClientError::Fatal(err)),
            Some(Err(err)) => self.dropped(DropReason::Transport(err)),
            None => {
                let after = self.policy.read_timeout;
                self.dropped(DropReason::Transport(TransportError::Timeout { after }));
            }
        }
    }

    fn fail(&mut self, err: SseClientError) {
        self.state = State::Done;
        self.failure = Some(err);
    }

    /// Schedules a reconnect after a drop, or gives up.
    fn dropped(&mut self, reason: DropReason) {
        self.watch = None;
        self.attempt += 1;
        if self.attempt > self.policy.max_attempts {
            let attempts = self.attempt - 1;
            self.fail(SseClientError::GaveUp { attempts, last: reason });
            return;
        }
        let delay = self.jitter.apply(self.policy.delay(self.attempt, self.server_retry));
        self.state = State::Connect { delay, until: None };
        let attempt = self.attempt;
        self.pending.push_back(SseClientEvent::Disconnected { reason, attempt, delay });
    }
}

/// The runtime's clock (tokio's, which tests pause), that a read's timeout counts from, as
/// `tokio::time::timeout` read it.
#[allow(clippy::disallowed_methods)] // the read timer's clock: the one tokio's timers run on
fn timer_now() -> tokio::time::Instant {
    tokio::time::Instant::now()
}

/// The next chunk of `stream`, or `None` once `deadline` passes without one (the read
/// timeout). The timer is kept in `watch` from one read to the next and moved only when it
/// fires before this read's deadline (it was set for an earlier read) or is set later than
/// it (the timeout was tightened): a stream that carries bytes more often than its timeout
/// updates the runtime's timer wheel about once per timeout, not at every read. Nor is it
/// polled at every read that waits: only when it was moved, has fired, or another task
/// reads ([`Watch::armed`]).
fn read_until(
    stream: &mut ByteStream,
    watch: &mut Option<Watch>,
    deadline: tokio::time::Instant,
    cx: &mut Context<'_>,
) -> Poll<Option<Option<Result<Bytes, TransportError>>>> {
    if let Poll::Ready(item) = stream.poll_next_unpin(cx) {
        return Poll::Ready(Some(item));
    }
    let Watch { timer, armed } = watch.get_or_insert_with(|| Watch {
        timer: Box::pin(tokio::time::sleep_until(deadline)),
        armed: None,
    });
    if timer.deadline() > deadline {
        timer.as_mut().reset(deadline);
        *armed = None;
    }
    if armed.as_ref().is_some_and(|waker| waker.will_wake(cx.waker())) && !timer.is_elapsed() {
        // Registered with this task and not fired: it wakes the task when it does.
        return Poll::Pending;
    }
    loop {
        match timer.as_mut().poll(cx) {
            Poll::Pending => {
                if !armed.as_ref().is_some_and(|waker| waker.will_wake(cx.waker())) {
                    *armed = Some(cx.waker().clone());
                }
                return Poll::Pending;
            }
            Poll::Ready(()) if timer.deadline() >= deadline => return Poll::Ready(None),
            Poll::Ready(()) => timer.as_mut().reset(deadline),
        }
    }
}
