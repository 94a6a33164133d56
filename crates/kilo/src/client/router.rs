//! The one-`GET /event`-stream-per-workspace router: events handed on in engine order (their
//! bodies unread: the adapter's mapping reads each once, session included), heartbeats
//! watched, and every tracked session rebuilt from REST on each (re)connection before live
//! events resume (refresh-on-reconnect).

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::event::{KiloEvent, Layout, SyncEcho, UnroutedEvent, cannot_name_session};
use super::rest::{KiloClient, KiloError};
use super::routes::QuestionRequest;
use super::types::{MessageWithParts, PermissionRequest, SessionStatus};
use bb_engine_client::sse::{ReconnectPolicy, SseClient, SseClientError, SseClientEvent};
use bb_engine_client::transport::TransportError;

/// What the router reports, in order. Per session, a `Rehydrated` snapshot always comes
/// before the live events of the connection it was taken on.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum KiloUpdate {
    /// The event stream is (re)connected. Live events of earlier connections that were not
    /// complete are gone; a `Rehydrated` per tracked session follows.
    Connected {
        /// Connections opened before this one.
        reconnects: u32,
    },
    /// The stream dropped (error, stall past the read timeout, end); reconnecting.
    Reconnecting {
        /// Consecutive failed attempts (1-based).
        attempt: u32,
        /// Wait before the next attempt.
        delay: Duration,
        /// Why the stream dropped.
        last_error: String,
    },
    /// A tracked session's state, rebuilt from REST on (re)connection or on request.
    Rehydrated {
        /// The session.
        session_id: String,
        /// All its messages with their parts, oldest first.
        messages: Vec<MessageWithParts>,
        /// Its run status (`idle` when the engine lists none).
        status: SessionStatus,
        /// Its pending permission requests.
        permissions: Vec<PermissionRequest>,
        /// Its pending questions (none when the engine has no question route).
        questions: Vec<QuestionRequest>,
    },
    /// Rebuilding a session failed: a hard error for that session until a
    /// [`KiloRouterHandle::rehydrate`] (the Retry action) succeeds.
    RehydrateFailed {
        /// The session.
        session_id: String,
        /// Why.
        error: KiloError,
    },
    /// An event that may name a session, as sent (every session, tracked or not); its body
    /// is not read here ([`KiloEvent::session`] reads its session). In Kilo's own layout it
    /// is not even validated here ([`KiloEvent::is_unread`]): the mapping's read does that.
    Event {
        /// The event.
        event: KiloEvent,
    },
    /// A `sync` event (the echo of the previous event, with the session's sequence number),
    /// read without its body.
    Sync(SyncEcho),
    /// An event that cannot name a session (`server.connected`, `server.heartbeat`,
    /// instance and project events: neither key appears in it), as sent.
    Unrouted(UnroutedEvent),
    /// Event data that is not a Kilo event (kept, never dropped silently).
    Malformed {
        /// The SSE `data`.
        data: String,
        /// Why it is not an event.
        error: String,
    },
    /// The stream is gone for good (auth refused, attempts exhausted); the router stops.
    Failed(SseClientError),
}

#[derive(Debug)]
enum Command {
    Track(String),
    Untrack(String),
    Rehydrate(String),
}

/// Controls a running router. Dropping it stops the router.
#[derive(Debug)]
pub struct KiloRouterHandle {
    commands: mpsc::UnboundedSender<Command>,
    task: JoinHandle<()>,
}

impl KiloRouterHandle {
    /// Tracks a session: it is rebuilt on every reconnection from now on.
    pub fn track(&self, session_id: impl Into<String>) {
        // A closed channel means the router has stopped; its `Failed` update says why.
        let _ = self.commands.send(Command::Track(session_id.into()));
    }

    /// Stops tracking a session (its events are still reported).
    pub fn untrack(&self, session_id: impl Into<String>) {
        let _ = self.commands.send(Command::Untrack(session_id.into()));
    }

    /// Tracks a session and rebuilds it now (the Retry action after `RehydrateFailed`).
    pub fn rehydrate(&self, session_id: impl Into<String>) {
        let _ = self.commands.send(Command::Rehydrate(session_id.into()));
    }

    /// Whether the router has stopped.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }
}

impl Drop for KiloRouterHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Settings of the router.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouterOptions {
    /// Reconnect policy of the event stream (read timeout: 15 s, heartbeats come every 10 s).
    pub policy: ReconnectPolicy,
}

impl Default for RouterOptions {
    /// The default reconnect policy (250 ms doubling to 5 s) with unbounded attempts: the
    /// stream of an engine that is meant to run is never given up (a restarting engine may
    /// take long to come back); only refused credentials stop it.
    fn default() -> Self {
        let policy = ReconnectPolicy { max_attempts: u32::MAX, ..ReconnectPolicy::default() };
        Self { policy }
    }
}

/// Starts the router on the current tokio runtime: one `GET /event` stream (`sse`, a client
/// of `client`'s instance), whose updates go straight to `out` in the router's own task: no
/// channel and no second task between the stream and what consumes its updates (the
/// adapter's pump).
pub fn spawn_router_into(
    client: KiloClient,
    sse: SseClient,
    out: impl Consumer + Send + 'static,
) -> KiloRouterHandle {
    let (commands, command_rx) = mpsc::unbounded_channel();
    let router = Router { client, sse, out, tracked: BTreeSet::new(), routing: Routing::default() };
    let task = tokio::spawn(router.run(command_rx));
    KiloRouterHandle { commands, task }
}

/// What the router hands its updates to, in order, in its own task.
pub trait Consumer {
    /// Runs first, when the router's task starts.
    fn started(&mut self) {}

    /// One update.
    fn take(&mut self, update: KiloUpdate) -> impl Future<Output = Result<(), Gone>> + Send;

    /// One event of the stream ([`KiloUpdate::Event`]), taken as it is routed, without a
    /// future: an event is most of a stream, and its update moved into [`Consumer::take`]'s
    /// future is a copy of 200 bytes or more at each step. `Err` gives it back to be taken by
    /// [`Consumer::take`] (the default).
    // The event goes back by move, as `take` would take it: a box would allocate.
    #[allow(clippy::result_large_err)]
    fn take_event(&mut self, event: KiloEvent) -> Result<(), KiloEvent> {
        Err(event)
    }

    /// The stream has nothing more ready now (or a batch of [`READY_BATCH`] updates was
    /// taken): what was taken goes on.
    fn flush(&mut self) -> impl Future<Output = Result<(), Gone>> + Send;
}

/// The updates of one wake-up the router takes before its consumer flushes.
pub const READY_BATCH: usize = 256;

/// A channel as the consumer: each update handed on as it is taken (a full channel pauses
/// the router's reading of the stream). What a test or a stream of a test's own reads.
impl Consumer for mpsc::Sender<KiloUpdate> {
    async fn take(&mut self, update: KiloUpdate) -> Result<(), Gone> {
        self.send(update).await.map_err(|_| Gone)
    }

    async fn flush(&mut self) -> Result<(), Gone> {
        Ok(())
    }
}

/// Routes one SSE `data` payload of the stream: the session it belongs to, no session, or
/// not a Kilo event. Pure: [`Routing::route`] without the previous event.
pub fn route(data: String) -> KiloUpdate {
    Routing::default().route(data)
}

/// The stream's routing, with the one thing it keeps between events: the body of the last
/// routed event, which the `sync` echo that follows it repeats ([`SyncEcho::parse_echo`]
/// then compares the repeat with it instead of decoding it). The router task and in-process
/// replays route with it alike.
#[derive(Debug, Default)]
pub struct Routing {
    last_body: String,
    /// The last routed event's body is unread ([`KiloEvent::is_unread`]).
    last_unread: bool,
}

impl Routing {
    /// Routes one SSE `data` payload, as [`route`] does.
    pub fn route(&mut self, data: String) -> KiloUpdate {
        if let Some(mut sync) = SyncEcho::parse_echo(&data, &self.last_body) {
            sync.repeats_unread = self.last_unread;
            return KiloUpdate::Sync(sync);
        }
        let update = route_fresh(data);
        if let KiloUpdate::Event { event, .. } = &update {
            self.last_unread = event.is_unread();
            let body = event.body.text().unwrap_or_default();
            self.last_body.clear();
            // The buffer is reused, but one huge body's worth of it is not kept past the
            // next event.
            if self.last_body.capacity() > KEPT_BODY_CAPACITY && body.len() <= KEPT_BODY_CAPACITY {
                self.last_body.shrink_to(KEPT_BODY_CAPACITY);
            }
            self.last_body.push_str(body);
        }
        update
    }
}

/// The capacity [`Routing`] keeps for the last body between events (Kilo's bodies are a few
/// hundred bytes; a file's content can be megabytes).
const KEPT_BODY_CAPACITY: usize = 64 * 1024;

/// [`route`]'s work, from the data alone.
fn route_fresh(data: String) -> KiloUpdate {
    // `GET /global/event` wraps each event (`{"directory", "project", "payload"}`): every
    // decode below reads the wrapper in its one pass. Kilo's own layout is read once: the
    // routing below goes by it, and an event in it is split at it.
    let layout = Layout::of(&data);
    let head = layout.filter(|layout| layout.bare);
    // A bare event whose head names another type is no `sync` (most of a stream): the search
    // for a `syncEvent` key in it is left out.
    if head.is_none_or(|head| head.event_type == "sync")
        && let Some(sync) = SyncEcho::parse(&data)
    {
        return KiloUpdate::Sync(sync);
    }
    // A third of a busy stream names no session (plugins, heartbeats): data in which no key
    // that could name one appears is read by the unrouted decode, no body kept; the rest is
    // an event whose body the mapping reads. A bare event whose `properties` opens with
    // `sessionID` (most of a stream, as Kilo writes it) has that key where the head ends:
    // the search through its data is left out.
    let names_first = head.is_some_and(|head| head.body.starts_with(r#"{"sessionID":""#));
    if !names_first && cannot_name_session(&data) {
        return match UnroutedEvent::parse(data) {
            Ok(unrouted) => KiloUpdate::Unrouted(unrouted),
            Err(data) => split_or_parse(data),
        };
    }
    // In Kilo's own layout the body is left to the mapping's one read of it, which
    // validates it (and reads the data as below should it not pass).
    match layout.and_then(KiloEvent::cut) {
        Some(event) => KiloUpdate::Event { event: event.unread_from(data) },
        None => parse(data),
    }
}

/// Data [`route_fresh`] did not route by its layout: split, else read whole.
fn split_or_parse(data: String) -> KiloUpdate {
    match KiloEvent::split(data) {
        Ok(event) => KiloUpdate::Event { event },
        Err(data) => parse(data),
    }
}

/// Data read whole: an event, or data that is not one.
fn parse(data: String) -> KiloUpdate {
    match KiloEvent::parse(&data) {
        Ok(event) => KiloUpdate::Event { event },
        Err(err) => KiloUpdate::Malformed { data, error: err.to_string() },
    }
}

struct Router<C> {
    client: KiloClient,
    sse: SseClient,
    out: C,
    tracked: BTreeSet<String>,
    routing: Routing,
}

/// The consumer went away: the router stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gone;

/// Whether the router goes on after a stream item.
enum Flow {
    Continue,
    Stop,
}

impl<C: Consumer> Router<C> {
    async fn run(mut self, mut commands: mpsc::UnboundedReceiver<Command>) {
        self.out.started();
        let _ = self.run_inner(&mut commands).await;
        self.sse.close();
    }

    async fn run_inner(
        &mut self,
        commands: &mut mpsc::UnboundedReceiver<Command>,
    ) -> Result<(), Gone> {
        let mut commands_open = true;
        loop {
            tokio::select! {
                biased;
                command = commands.recv(), if commands_open => match command {
                    Some(command) => {
                        self.command(command).await?;
                        self.out.flush().await?;
                    }
                    None => commands_open = false,
                },
                item = self.sse.next() => {
                    let mut flow = self.item(item).await?;
                    // What the stream has ready now goes with it, one flush for them all.
                    for _ in 1..READY_BATCH {
                        let Flow::Continue = flow else { break };
                        let Some(item) = self.ready_item().await else { break };
                        flow = self.item(item).await?;
                    }
                    self.out.flush().await?;
                    if let Flow::Stop = flow {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// The stream's next item when it has one ready now, without waiting for one.
    async fn ready_item(&mut self) -> Option<Option<Result<SseClientEvent, SseClientError>>> {
        let mut next = pin!(self.sse.next());
        std::future::poll_fn(|cx| match next.as_mut().poll(cx) {
            Poll::Ready(item) => Poll::Ready(Some(item)),
            Poll::Pending => Poll::Ready(None),
        })
        .await
    }

    /// One item of the stream: `Stop` once it is over.
    async fn item(
        &mut self,
        item: Option<Result<SseClientEvent, SseClientError>>,
    ) -> Result<Flow, Gone> {
        match item {
            // An event is most of a stream: routed and taken here, without a future where the
            // consumer can.
            Some(Ok(SseClientEvent::Event(event))) => match self.route_now(event.data) {
                None => Ok(Flow::Continue),
                Some(update) => self.out.take(update).await.map(|()| Flow::Continue),
            },
            Some(Ok(item)) => self.connection_item(item).await.map(|()| Flow::Continue),
            Some(Err(err)) => self.send(KiloUpdate::Failed(err)).await.map(|()| Flow::Stop),
            None => Ok(Flow::Stop),
        }
    }

    /// Routes `data`; an event its consumer takes at once ([`Consumer::take_event`]) is
    /// taken, anything else is given back for [`Consumer::take`]. Not `async`: nothing of
    /// the event is kept in the router's future.
    fn route_now(&mut self, data: String) -> Option<KiloUpdate> {
        match self.routing.route(data) {
            KiloUpdate::Event { event } => match self.out.take_event(event) {
                Ok(()) => None,
                Err(event) => Some(KiloUpdate::Event { event }),
            },
            update => Some(update),
        }
    }

    async fn send(&mut self, update: KiloUpdate) -> Result<(), Gone> {
        self.out.take(update).await
    }

    async fn command(&mut self, command: Command) -> Result<(), Gone> {
        match command {
            Command::Track(id) => {
                self.tracked.insert(id);
            }
            Command::Untrack(id) => {
                self.tracked.remove(&id);
            }
            Command::Rehydrate(id) => {
                self.tracked.insert(id.clone());
                self.rehydrate(&[id]).await?;
            }
        }
        Ok(())
    }

    /// A stream item other than an event (those [`Router::item`] routes itself).
    async fn connection_item(&mut self, item: SseClientEvent) -> Result<(), Gone> {
        match item {
            SseClientEvent::Connected { reconnects } => {
                self.send(KiloUpdate::Connected { reconnects }).await?;
                // Nothing is read from the new connection until every tracked session is
                // rebuilt: the snapshot precedes the live events.
                let sessions: Vec<String> = self.tracked.iter().cloned().collect();
                self.rehydrate(&sessions).await
            }
            SseClientEvent::Disconnected { reason, attempt, delay } => {
                let last_error = reason.to_string();
                self.send(KiloUpdate::Reconnecting { attempt, delay, last_error }).await
            }
            // Events are routed by `item`; Kilo sends no other item the client may report.
            _ => Ok(()),
        }
    }

    /// Rebuilds `sessions` from REST: status and permissions once, messages per session.
    async fn rehydrate(&mut self, sessions: &[String]) -> Result<(), Gone> {
        if sessions.is_empty() {
            return Ok(());
        }
        let status = self.client.status().await;
        let permissions = self.client.permissions().await;
        // An engine without the question route (opencode) has no questions to rebuild.
        let questions = match self.client.questions().await {
            Err(KiloError::Transport(TransportError::Http { status: 404, .. })) => Ok(Vec::new()),
            other => other,
        };
        let shared = match (status, permissions, questions) {
            (Ok(status), Ok(permissions), Ok(questions)) => Ok((status, permissions, questions)),
            (Err(err), _, _) | (_, Err(err), _) | (_, _, Err(err)) => Err(err),
        };
        for session_id in sessions {
            let update = match &shared {
                Err(err) => KiloUpdate::RehydrateFailed {
                    session_id: session_id.clone(),
                    error: err.clone(),
                },
                Ok((status, permissions, questions)) => {
                    match self.client.messages(session_id).await {
                        Ok(messages) => KiloUpdate::Rehydrated {
                            session_id: session_id.clone(),
                            messages,
                            status: status
                                .get(session_id)
                                .cloned()
                                .unwrap_or_else(SessionStatus::idle),
                            permissions: permissions
                                .iter()
                                .filter(|p| &p.session_id == session_id)
                                .cloned()
                                .collect(),
                            questions: questions
                                .iter()
                                .filter(|q| &q.session_id == session_id)
                                .cloned()
                                .collect(),
                        },
                        Err(error) => {
                            KiloUpdate::RehydrateFailed { session_id: session_id.clone(), error }
                        }
                    }
                }
            };
            self.send(update).await?;
        }
        Ok(())
    }
}
