//! The resumable event stream of one BreadBoard session, over the engine-neutral
//! [`SseClient`]: resumes with `Last-Event-ID` = the last numeric `seq`, detects gaps
//! (409 `resume_window_exceeded`, a `seq` discontinuity, a `stream.gap` event), reports them,
//! then rebuilds from what the engine still holds — never skipping silently.

use std::collections::VecDeque;
use std::time::Duration;

use super::cursor::{Admission, GapReason, ResumeCursor};
use super::error::{BbError, from_status};
use super::rest::{BreadboardClient, segment};
use super::wire::{BbEvent, SessionSummary};
use bb_engine_client::sse::{
    DropReason, ReconnectPolicy, ResumeFrom, SseClient, SseClientError, SseClientEvent,
};
use bb_engine_client::transport::{EngineRequest, TransportError};
use bb_protocol::v1::EventId;

/// What a session stream yields, in order.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamUpdate {
    /// A connection is open and the session is known to exist (a connection made without a
    /// resume id is confirmed over REST first: the engine answers such a request for an
    /// unknown session with 200 and an empty body).
    Connected {
        /// Connections opened before this one (0 for the first).
        reconnects: u32,
    },
    /// The connection dropped; the stream reconnects after `delay`.
    Reconnecting {
        /// Consecutive failed attempts (1-based).
        attempt: u32,
        /// Wait before the next attempt.
        delay: Duration,
        /// Why it dropped.
        error: String,
    },
    /// An engine event, delivered once and in `seq` order.
    Event(BbEvent),
    /// A real continuity gap (announced once): the view must say so
    /// (`bb/connection {gapDetected: true}` and one transcript warning). A
    /// [`StreamUpdate::Rebuilt`] follows. A `seq` jump the engine refills on resume is not a
    /// gap and yields nothing.
    Gap {
        /// What broke it.
        reason: GapReason,
        /// `seq` range (inclusive) the engine no longer has, when known.
        lost: Option<(u64, u64)>,
    },
    /// After a gap: the stream continues from what the engine still holds.
    Rebuilt {
        /// The session as the engine sees it now, when it could be read.
        summary: Option<SessionSummary>,
    },
    /// An event at or before the resume position, read again by a primed stream
    /// ([`SessionStream::open_primed`]) to rebuild derived state (pending permissions, diffs,
    /// whether a turn runs). Already delivered: not for the view's transcript.
    Replayed(BbEvent),
    /// An SSE event that is not a BreadBoard envelope; kept, not delivered as an event.
    Malformed {
        /// Its SSE id.
        sse_id: EventId,
        /// Why it did not decode.
        error: String,
    },
    /// The session's run loop ended (deleted, failed or a finished oneshot): no more events.
    Ended {
        /// The final summary, `None` when the engine no longer holds the session (deleted,
        /// or the engine restarted).
        summary: Option<SessionSummary>,
    },
}

/// Tuning of a session stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamOptions {
    /// Reconnect back-off and bounds. BreadBoard streams are silent while idle (no
    /// heartbeats), so the read timeout only bounds how long a dead socket goes unnoticed;
    /// a timed-out connection is simply resumed.
    pub policy: ReconnectPolicy,
    /// How many resumes in a row may come back without the missing `seq` before the jump is
    /// declared a gap. The engine's drop chaos skips events per connection while its ring
    /// keeps them: a resume from the last contiguous `seq` refills them (at a drop rate of
    /// 0.4 some took several), so only a run of this many fruitless refills counts as loss.
    pub refill_attempts: u32,
    /// While the session's turn runs, a connection silent this long is declared dead and
    /// resumed after the last `seq` (lossless). The engine sends no heartbeats, so this is
    /// the only word on a half-open connection; a turn's events come far more often, and a
    /// resume of a live stream costs one request and replays nothing.
    pub busy_read_timeout: Duration,
}

impl Default for StreamOptions {
    /// 250 ms doubling to 5 s with jitter, 8 attempts, 60 s read timeout (20 s while a turn
    /// runs), 8 refills.
    fn default() -> Self {
        Self {
            policy: ReconnectPolicy {
                initial_delay: Duration::from_millis(250),
                max_delay: Duration::from_secs(5),
                max_attempts: 8,
                read_timeout: Duration::from_secs(60),
            },
            refill_attempts: 8,
            busy_read_timeout: Duration::from_secs(20),
        }
    }
}

/// Where recovery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recovery {
    /// Nothing to recover.
    None,
    /// A `seq` jump was seen; reconnected from the last contiguous `seq` to refill it.
    Refilling { expected: u64, attempts: u32 },
    /// Connected asking for the whole ring (no cursor, or after a 409 for `refused`); a jump
    /// at its first event means the ring no longer starts at or before the missing `seq`
    /// (without a cursor a few retries come first: drops hit replays too).
    FullReplay { refused: Option<u64>, attempts: u32 },
}

/// What one event of the stream asks of [`SessionStream::next`] ([`SessionStream::admit`]).
#[derive(Debug)]
enum Admitted {
    /// The next event in order, nothing queued: yielded at once.
    Next(BbEvent),
    /// Queued, or dropped as a duplicate: nothing to yield now.
    Queued,
    /// In order, behind queued updates or the engine's `stream.gap`: delivered through the
    /// queue.
    Deliver(BbEvent),
    /// A `seq` jump, from `expected` to `got`; `first`: the connection's first event.
    Jump { event: BbEvent, expected: u64, got: u64, first: bool },
}

/// The resumable stream of one session. Pull updates with [`SessionStream::next`].
#[derive(Debug)]
pub struct SessionStream {
    client: BreadboardClient,
    session_id: String,
    options: StreamOptions,
    cursor: ResumeCursor,
    sse: SseClient,
    recovery: Recovery,
    first_of_connection: bool,
    /// Events at or before the cursor are yielded as [`StreamUpdate::Replayed`] until the
    /// first new one.
    priming: bool,
    pending: VecDeque<StreamUpdate>,
    done: bool,
    /// A turn runs: silence is a dead connection after `busy_read_timeout`.
    busy: bool,
}

impl SessionStream {
    /// Opens the stream of `session_id`. With `last_seq` (e.g. persisted by an earlier run)
    /// it resumes after that `seq`; without, it asks for the whole ring (`?replay=true`).
    pub fn open(
        client: &BreadboardClient,
        session_id: &str,
        last_seq: Option<u64>,
        options: StreamOptions,
    ) -> Result<Self, BbError> {
        let session_id = segment(session_id)?;
        let cursor = ResumeCursor::new(last_seq);
        let recovery = if last_seq.is_none() {
            Recovery::FullReplay { refused: None, attempts: 0 }
        } else {
            Recovery::None
        };
        let sse = new_sse(client, session_id, &options, cursor.resume_id());
        Ok(Self {
            client: client.clone(),
            session_id: session_id.to_owned(),
            options,
            cursor,
            sse,
            recovery,
            first_of_connection: true,
            priming: false,
            pending: VecDeque::new(),
            done: false,
            busy: false,
        })
    }

    /// Like [`SessionStream::open`] after `last_seq`, but reads the engine's whole ring first
    /// and yields what it already delivered as [`StreamUpdate::Replayed`], so a restarted
    /// bridge knows the session's pending permissions without showing old events twice.
    pub fn open_primed(
        client: &BreadboardClient,
        session_id: &str,
        last_seq: u64,
        options: StreamOptions,
    ) -> Result<Self, BbError> {
        let mut stream = Self::open(client, session_id, Some(last_seq), options)?;
        stream.priming = true;
        stream.reopen(None);
        Ok(stream)
    }

    /// The session.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The last `seq` delivered (what to persist).
    pub fn last_seq(&self) -> Option<u64> {
        self.cursor.last_seq()
    }

    /// Whether a turn of the session runs (the caller knows from its events): while it does,
    /// a connection that carries nothing for [`StreamOptions::busy_read_timeout`] is
    /// declared dead and resumed; otherwise silence is normal and only the policy's read
    /// timeout applies.
    pub fn set_busy(&mut self, busy: bool) {
        self.busy = busy;
        self.sse.set_read_timeout(self.read_timeout());
    }

    fn read_timeout(&self) -> Duration {
        if self.busy { self.options.busy_read_timeout } else { self.options.policy.read_timeout }
    }

    /// Stops the stream: `next` returns `None`.
    pub fn close(&mut self) {
        self.sse.close();
        self.pending.clear();
        self.done = true;
    }

    fn reopen(&mut self, resume_id: Option<String>) {
        self.sse.close();
        self.sse = new_sse(&self.client, &self.session_id, &self.options, resume_id);
        self.sse.set_read_timeout(self.read_timeout());
        self.first_of_connection = true;
    }

    /// The next update; `Err` is a hard error (bad token, stream lost after every allowed
    /// attempt) after which the stream yields `None`; the caller may offer a Retry by opening
    /// a new stream from [`SessionStream::last_seq`].
    pub async fn next(&mut self) -> Option<Result<StreamUpdate, BbError>> {
        loop {
            if let Some(update) = self.pending.pop_front() {
                return Some(Ok(update));
            }
            if self.done {
                return None;
            }
            let item = match self.sse.next().await {
                None => {
                    self.done = true;
                    return None;
                }
                Some(Ok(item)) => item,
                Some(Err(error)) => match self.on_failure(error).await {
                    Ok(()) => continue,
                    Err(error) => {
                        self.done = true;
                        return Some(Err(error));
                    }
                },
            };
            match item {
                SseClientEvent::Connected { reconnects } => self.on_connected(reconnects).await,
                SseClientEvent::Event(event) => {
                    let admitted = self.admit(event.last_event_id, &event.data);
                    // Read (the payload is copied out): the buffer goes back for the next one.
                    self.sse.reuse_data(event.data);
                    match admitted {
                        Admitted::Next(event) => return Some(Ok(StreamUpdate::Event(event))),
                        Admitted::Queued => {}
                        Admitted::Deliver(event) => self.deliver(event).await,
                        Admitted::Jump { event, expected, got, first } => {
                            // Boxed: a jump is rare, and inline it would make every stream
                            // task larger.
                            Box::pin(self.on_jump(event, expected, got, first)).await;
                        }
                    }
                }
                SseClientEvent::Disconnected { reason: DropReason::Eof, attempt, delay } => {
                    self.on_eof(attempt, delay).await;
                }
                SseClientEvent::Disconnected { reason, attempt, delay } => {
                    self.pending.push_back(StreamUpdate::Reconnecting {
                        attempt,
                        delay,
                        error: reason.to_string(),
                    });
                }
                _ => {}
            }
        }
    }

    /// Borrows only the fields it needs, so the stream need not be `Sync` to be sent.
    /// Boxed, as every REST call on this path: they are rare (a connection, an EOF, a gap),
    /// and inline they would make every session's stream task kilobytes larger.
    async fn summary(client: &BreadboardClient, session_id: &str) -> Option<SessionSummary> {
        Box::pin(client.get_session(session_id)).await.ok()
    }

    /// A clean EOF: the engine ends a stream only when the session's run loop ends, unless
    /// the connection was cut. The session's state decides.
    async fn on_eof(&mut self, attempt: u32, delay: Duration) {
        match Box::pin(self.client.get_session(&self.session_id)).await {
            Err(BbError::NotFound { .. }) => self.end(None),
            Ok(summary) if summary.is_finished() => self.end(Some(summary)),
            _ => self.pending.push_back(StreamUpdate::Reconnecting {
                attempt,
                delay,
                error: DropReason::Eof.to_string(),
            }),
        }
    }

    fn end(&mut self, summary: Option<SessionSummary>) {
        self.sse.close();
        if let Recovery::FullReplay { refused: Some(last_seq), .. } = self.recovery {
            // Refused, and nothing newer came before the end: what followed is unknown.
            self.recovery = Recovery::None;
            let reason = GapReason::WindowExceeded { last_seq };
            self.pending.push_back(StreamUpdate::Gap { reason, lost: None });
        }
        self.pending.push_back(StreamUpdate::Ended { summary });
    }

    /// A connection opened. Without a resume id the engine answers 200 (empty, then EOF) even
    /// for an unknown session, so such a connection counts only once REST confirms the
    /// session; with one, an unknown session is a 404 and the 200 is proof enough.
    async fn on_connected(&mut self, reconnects: u32) {
        self.first_of_connection = true;
        if self.sse.resume_header().is_none() {
            match Box::pin(self.client.get_session(&self.session_id)).await {
                Err(BbError::NotFound { .. }) => return self.end(None),
                Ok(_) => {}
                // Not confirmed (the engine is not answering): the connection shows itself by
                // its events or its drop.
                Err(_) => return,
            }
        }
        self.pending.push_back(StreamUpdate::Connected { reconnects });
    }

    async fn on_failure(&mut self, error: SseClientError) -> Result<(), BbError> {
        match error {
            SseClientError::Auth { status } => Err(BbError::Unauthorized { status }),
            SseClientError::Fatal(TransportError::Http { status, body }) => {
                match from_status(status, &body) {
                    BbError::ResumeWindowExceeded { .. } => {
                        // A real gap, unless the whole ring still starts right after us: ask
                        // for it and let its first event say what is lost.
                        let refused = Some(self.cursor.last_seq().unwrap_or(0));
                        self.recovery = Recovery::FullReplay { refused, attempts: 0 };
                        self.reopen(None);
                        Ok(())
                    }
                    BbError::NotFound { .. } => {
                        self.end(None);
                        Ok(())
                    }
                    other => Err(other),
                }
            }
            SseClientError::Fatal(other) => Err(BbError::Transport(other)),
            SseClientError::GaveUp { attempts, last } => {
                Err(BbError::StreamLost { attempts, last: last.to_string() })
            }
            other => Err(BbError::StreamLost { attempts: 0, last: other.to_string() }),
        }
    }

    /// One event of the stream, admitted: [`Admitted::Next`] when it is the next in order and
    /// nothing is queued (the common case: it goes to the caller without passing through the
    /// queue). Not async, so the event is written once into what it returns rather than
    /// moved through an async call's state and output (~200 bytes a move).
    fn admit(&mut self, sse_id: EventId, data: &str) -> Admitted {
        let mut event = match BbEvent::parse("", data) {
            Ok(event) => event,
            Err(error) => {
                let error = error.to_string();
                self.pending.push_back(StreamUpdate::Malformed { sse_id, error });
                return Admitted::Queued;
            }
        };
        // The SSE id is moved in, not copied.
        event.sse_id = sse_id;
        let admission = self.cursor.admit(event.seq);
        let first = self.first_of_connection;
        if matches!(admission, Admission::Deliver | Admission::Gap { .. }) {
            self.first_of_connection = false;
        }
        match admission {
            Admission::Unsequenced => self.pending.push_back(StreamUpdate::Event(event)),
            Admission::Duplicate if self.priming => {
                self.pending.push_back(StreamUpdate::Replayed(event));
            }
            Admission::Duplicate => {}
            Admission::Deliver => {
                self.priming = false;
                self.recovery = Recovery::None;
                if self.pending.is_empty() && event.kind != "stream.gap" {
                    self.advance(event.seq);
                    return Admitted::Next(event);
                }
                return Admitted::Deliver(event);
            }
            Admission::Gap { expected, got } => {
                self.priming = false;
                return Admitted::Jump { event, expected, got, first };
            }
        }
        Admitted::Queued
    }

    /// A `seq` jump: refill it by resuming from the last contiguous `seq` (the engine's drop
    /// chaos skips events per connection, its ring keeps them); only a ring that no longer
    /// holds the missing events, or a run of fruitless refills, is a gap.
    async fn on_jump(&mut self, event: BbEvent, expected: u64, got: u64, first: bool) {
        let limit = self.options.refill_attempts;
        match self.recovery {
            Recovery::FullReplay { refused, attempts } if first => {
                if refused.is_none() && attempts < limit {
                    // No cursor: the ring may start later, or a drop hit its first events.
                    self.recovery = Recovery::FullReplay { refused, attempts: attempts + 1 };
                    self.reopen(None);
                    return;
                }
                let reason = match refused {
                    Some(last_seq) => GapReason::WindowExceeded { last_seq },
                    None => GapReason::Discontinuity { expected, got },
                };
                self.declare(reason, Some((expected, got - 1))).await;
                self.deliver(event).await;
            }
            Recovery::Refilling { expected: e, attempts } if e == expected && attempts >= limit => {
                self.declare(GapReason::Discontinuity { expected, got }, None).await;
                self.deliver(event).await;
            }
            Recovery::Refilling { expected: e, attempts } if e == expected => {
                self.recovery = Recovery::Refilling { expected, attempts: attempts + 1 };
                self.reopen(self.cursor.resume_id());
            }
            _ => {
                tracing::debug!(session = %self.session_id, expected, got, "seq jump: refilling");
                self.recovery = Recovery::Refilling { expected, attempts: 1 };
                self.reopen(self.cursor.resume_id());
            }
        }
    }

    /// Announces one real gap, then the rebuilt state.
    async fn declare(&mut self, reason: GapReason, lost: Option<(u64, u64)>) {
        self.recovery = Recovery::None;
        self.pending.push_back(StreamUpdate::Gap { reason, lost });
        let summary = Self::summary(&self.client, &self.session_id).await;
        self.pending.push_back(StreamUpdate::Rebuilt { summary });
    }

    /// The cursor moves past `seq`, and the client resumes after it.
    fn advance(&mut self, seq: Option<u64>) {
        if let Some(seq) = seq {
            self.cursor.advance(seq);
            // The last `seq`, kept by the client as a number: written out only when it
            // reconnects, not per event.
            if let Some(last) = self.cursor.last_seq() {
                self.sse.set_resume_id_to(last);
            }
        }
    }

    /// Queues `event`, with the gap it reports when it is the engine's `stream.gap`.
    async fn deliver(&mut self, event: BbEvent) {
        self.advance(event.seq);
        let engine_gap = (event.kind == "stream.gap").then(|| {
            event
                .payload
                .get("reason")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("unspecified")
                .to_owned()
        });
        self.pending.push_back(StreamUpdate::Event(event));
        if let Some(reason) = engine_gap {
            self.declare(GapReason::EngineGap { reason }, None).await;
        }
    }
}

fn new_sse(
    client: &BreadboardClient,
    session_id: &str,
    options: &StreamOptions,
    resume_id: Option<String>,
) -> SseClient {
    let request = EngineRequest::get(format!("/v1/sessions/{session_id}/events"))
        .with_query("replay", "true");
    let sse = SseClient::new(std::sync::Arc::clone(client.transport()), request)
        .with_policy(options.policy)
        .with_resume_from(ResumeFrom::Caller);
    match resume_id {
        Some(id) => sse.with_resume_id(id),
        None => sse,
    }
}
