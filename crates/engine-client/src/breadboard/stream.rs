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
use crate::sse::{
    DropReason, ReconnectPolicy, ResumeFrom, SseClient, SseClientError, SseClientEvent,
};
use crate::transport::{EngineRequest, TransportError};

/// What a session stream yields, in order.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamUpdate {
    /// A connection is open.
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
    /// Continuity was broken: the view must say so (`bb/connection {gapDetected: true}` and a
    /// transcript warning). A [`StreamUpdate::Rebuilt`] follows.
    Gap {
        /// What broke it.
        reason: GapReason,
    },
    /// After a gap: the stream continues from what the engine still holds.
    Rebuilt {
        /// The session as the engine sees it now, when it could be read.
        summary: Option<SessionSummary>,
        /// `seq` range (inclusive) that the engine no longer has, if any was lost for good.
        lost: Option<(u64, u64)>,
    },
    /// An SSE event that is not a BreadBoard envelope; kept, not delivered as an event.
    Malformed {
        /// Its SSE id.
        sse_id: String,
        /// Why it did not decode.
        error: String,
    },
    /// The session's run loop ended (deleted, failed or a finished oneshot): no more events.
    Ended {
        /// The final summary, `None` when the session is gone.
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
}

impl Default for StreamOptions {
    /// 250 ms doubling to 5 s with jitter, 8 attempts, 60 s read timeout.
    fn default() -> Self {
        Self {
            policy: ReconnectPolicy {
                initial_delay: Duration::from_millis(250),
                max_delay: Duration::from_secs(5),
                max_attempts: 8,
                read_timeout: Duration::from_secs(60),
            },
        }
    }
}

/// Where recovery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recovery {
    /// Nothing to recover.
    None,
    /// A discontinuity was seen; reconnected from the last `seq` to fetch what was skipped.
    Resuming { expected: u64 },
    /// Connected asking for the whole ring; a gap at its first new event is real loss.
    FullReplay,
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
    /// A gap was announced and its [`StreamUpdate::Rebuilt`] is still owed.
    rebuild_owed: bool,
    first_of_connection: bool,
    pending: VecDeque<StreamUpdate>,
    done: bool,
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
        let recovery = if last_seq.is_none() { Recovery::FullReplay } else { Recovery::None };
        let sse = new_sse(client, session_id, &options, cursor.resume_id());
        Ok(Self {
            client: client.clone(),
            session_id: session_id.to_owned(),
            options,
            cursor,
            sse,
            recovery,
            rebuild_owed: false,
            first_of_connection: true,
            pending: VecDeque::new(),
            done: false,
        })
    }

    /// The session.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The last `seq` delivered (what to persist).
    pub fn last_seq(&self) -> Option<u64> {
        self.cursor.last_seq()
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
                SseClientEvent::Connected { reconnects } => {
                    self.first_of_connection = true;
                    self.pending.push_back(StreamUpdate::Connected { reconnects });
                }
                SseClientEvent::Event(event) => {
                    self.on_event(&event.last_event_id, &event.data).await
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
    async fn summary(client: &BreadboardClient, session_id: &str) -> Option<SessionSummary> {
        client.get_session(session_id).await.ok()
    }

    /// A clean EOF: the engine ends a stream only when the session's run loop ends, unless
    /// the connection was cut. The session's state decides.
    async fn on_eof(&mut self, attempt: u32, delay: Duration) {
        match self.client.get_session(&self.session_id).await {
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
        self.pending.push_back(StreamUpdate::Ended { summary });
    }

    async fn on_failure(&mut self, error: SseClientError) -> Result<(), BbError> {
        match error {
            SseClientError::Auth { status } => Err(BbError::Unauthorized { status }),
            SseClientError::Fatal(TransportError::Http { status, body }) => {
                match from_status(status, &body) {
                    BbError::ResumeWindowExceeded { .. } => {
                        let last_seq = self.cursor.last_seq().unwrap_or(0);
                        self.pending.push_back(StreamUpdate::Gap {
                            reason: GapReason::WindowExceeded { last_seq },
                        });
                        self.recovery = Recovery::FullReplay;
                        self.rebuild_owed = true;
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
        }
    }

    async fn on_event(&mut self, sse_id: &str, data: &str) {
        let event = match BbEvent::parse(sse_id, data) {
            Ok(event) => event,
            Err(error) => {
                self.pending.push_back(StreamUpdate::Malformed {
                    sse_id: sse_id.to_owned(),
                    error: error.to_string(),
                });
                return;
            }
        };
        let admission = self.cursor.admit(event.seq);
        let first = self.first_of_connection;
        if matches!(admission, Admission::Deliver | Admission::Gap { .. }) {
            self.first_of_connection = false;
        }
        match admission {
            Admission::Unsequenced => self.pending.push_back(StreamUpdate::Event(event)),
            Admission::Duplicate => {}
            Admission::Deliver => {
                if std::mem::take(&mut self.rebuild_owed) {
                    let summary = Self::summary(&self.client, &self.session_id).await;
                    self.pending.push_back(StreamUpdate::Rebuilt { summary, lost: None });
                }
                self.recovery = Recovery::None;
                self.deliver(event).await;
            }
            Admission::Gap { expected, got } => {
                if self.recovery == Recovery::FullReplay && first {
                    // The engine sent everything it holds: what came before is lost for good.
                    if !std::mem::take(&mut self.rebuild_owed) {
                        self.pending.push_back(StreamUpdate::Gap {
                            reason: GapReason::Discontinuity { expected, got },
                        });
                    }
                    let summary = Self::summary(&self.client, &self.session_id).await;
                    self.pending.push_back(StreamUpdate::Rebuilt {
                        summary,
                        lost: Some((expected, got - 1)),
                    });
                    self.recovery = Recovery::None;
                    self.deliver(event).await;
                } else if self.recovery == (Recovery::Resuming { expected }) {
                    // Resuming from the last seq skipped the same events again: ask for the
                    // whole ring.
                    self.recovery = Recovery::FullReplay;
                    self.reopen(None);
                } else {
                    self.pending.push_back(StreamUpdate::Gap {
                        reason: GapReason::Discontinuity { expected, got },
                    });
                    self.rebuild_owed = true;
                    self.recovery = Recovery::Resuming { expected };
                    self.reopen(self.cursor.resume_id());
                }
            }
        }
    }

    async fn deliver(&mut self, event: BbEvent) {
        if let Some(seq) = event.seq {
            self.cursor.advance(seq);
            self.sse.set_resume_id(self.cursor.resume_id());
        }
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
            self.pending.push_back(StreamUpdate::Gap { reason: GapReason::EngineGap { reason } });
            let summary = Self::summary(&self.client, &self.session_id).await;
            self.pending.push_back(StreamUpdate::Rebuilt { summary, lost: None });
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
