//! The service loop: one closed event enum handled in order by one function.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bb_host::{AnswerOutcome, Clock, ConnId, Engine, Host, HostConfig, Input, Prompt, Withdraw};
use bb_protocol::v1::{
    ApprovePermissionParams, ConnectionPayload, ConnectionStatus, EngineKind, PermissionDecision,
    SessionAck, V1Call, V1Method, V1Request, V1Response, V1Topic, VisibilityResult,
};
use bb_supervisor::{CrashHistory, EngineProcess, ExitInfo, RestartDecision};
use futures_util::stream::{FuturesUnordered, StreamExt};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::connections::{ConnEvent, Connections, Refused};
use crate::engine::{AnswerReason, EngineAdapter, EngineError, InputReceiver, PromptAnswer};
use crate::ingest::connection;
use crate::lifecycle::EngineLife;
use crate::order::Ticket;
use crate::pace::Pace;
use crate::saved::PromptFile;
use crate::sink::{Inbound, WebviewSink};
use crate::starter::{EngineStarter, StartedEngine};
use crate::trim::{MemoryTrim, Trimmer};

mod requests;
use requests::{CallNote, Order};

type Task = Pin<Box<dyn Future<Output = Completion> + Send>>;

/// Most requests held while the supervised engine starts; later ones are dispatched at once
/// (and answer `engine_unavailable`).
const MAX_HELD: usize = 256;

/// Most engine inputs handled in one round of the loop, between two drains of the host's
/// output (one 16 KiB read of a dense stream holds a few dozen).
const INPUTS_PER_ROUND: usize = 256;

/// Tunables of the service.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// The host core's batching and buffering.
    pub host: HostConfig,
    /// Bound on one engine call.
    pub call_timeout: Duration,
    /// Grace between TERM and KILL when the supervised engine is stopped.
    pub stop_grace: Duration,
    /// After a webview's input closes, how long its requests in flight may take before they
    /// are answered with an error.
    pub eof_grace: Duration,
    /// The workspace folders the bridge serves (canonical paths, the default first):
    /// `bb.init` lists them, and a `bb.createSession` `folder` must be one of them
    /// (`folder_not_in_workspace`). Empty: no list, and `folder` is not checked.
    pub folders: Vec<String>,
    /// The bridge's state directory: the open prompts are kept there
    /// (`prompts.json`, see [`crate::PROMPTS_FILE`]) and shown again after a restart.
    /// `None`: they live as long as the bridge.
    pub state_dir: Option<PathBuf>,
    /// Returns the allocator's free memory after a burst of engine inputs (the binary's
    /// allocator hook); `None`: never.
    pub trim: Option<MemoryTrim>,
    /// Gathering while busy ([`crate::pace`]): the loop counts the engine events it is
    /// handed and publishes its next deadline to the runtimes this paces. `None`: no pacing.
    pub pace: Option<Pace>,
}

impl Default for ServiceConfig {
    /// Host defaults with the heartbeat toward the webview on (every
    /// [`bb_host::HEARTBEAT_INTERVAL`]), 60 s per engine call, 5 s stop grace, 10 s
    /// end-of-input grace.
    fn default() -> Self {
        Self {
            host: HostConfig {
                heartbeat: Some(bb_host::HEARTBEAT_INTERVAL),
                ..HostConfig::default()
            },
            call_timeout: Duration::from_secs(60),
            stop_grace: Duration::from_secs(5),
            eof_grace: Duration::from_secs(10),
            folders: Vec::new(),
            state_dir: None,
            trim: None,
            pace: None,
        }
    }
}

/// Why the service loop ended abnormally.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceError {
    /// The webview's outbound side closed while the service still had output.
    #[error("the webview connection closed")]
    WebviewClosed,
}

/// The engine process the service supervises (spawn mode): how to (re)start it and the crash
/// history that paces restarts and opens the breaker.
#[derive(Debug)]
pub struct Supervision {
    /// Starts the engine.
    pub starter: Arc<dyn EngineStarter>,
    /// Crashes so far.
    pub history: CrashHistory,
}

impl Supervision {
    /// Supervision with the starter's restart policy.
    pub fn new(starter: Arc<dyn EngineStarter>) -> Self {
        let history = CrashHistory::new(starter.restart_policy());
        Self { starter, history }
    }
}

/// What finished in the background.
enum Completion {
    /// An engine call answered; `after` is applied once the response is out, whatever the
    /// outcome.
    Call {
        conn: ConnId,
        ticket: Ticket,
        note: CallNote,
        id: String,
        method: V1Method,
        outcome: Result<(Value, Vec<Input>), EngineError>,
        after: Vec<Input>,
    },
    /// A refusal that waited for the prompts file (an answer it names saved first).
    Refused { conn: ConnId, ticket: Ticket, response: V1Response },
    /// A (re)start attempt of the supervised engine finished.
    Started(Result<StartedEngine, EngineError>),
    /// The adapter was pointed at a freshly started engine.
    Bound(Result<(), EngineError>),
    /// The engine was told to deny a prompt nobody answered in time or whose turn stopped.
    Withdrawn(Withdraw, Result<(), EngineError>),
    /// The engine said which of the prompts shown again after a restart it no longer knows;
    /// the answers saved on their way that it still waited for were sent again, with these
    /// outcomes.
    Forgotten(Vec<Prompt>, Vec<(Prompt, AnswerOutcome)>),
}

/// Everything the loop reacts to, in the order it happens.
enum Event {
    Accepted(WebviewSink),
    Webview(ConnId, ConnEvent),
    /// Engine inputs, taken into `Service::taken`.
    Engine,
    Child(std::io::Result<ExitInfo>),
    Completed(Completion),
    Tick,
}

/// One webview connection's service loop.
#[derive(Debug)]
pub struct Service {
    config: ServiceConfig,
    host: Host,
    adapter: Arc<dyn EngineAdapter>,
    inputs: Option<InputReceiver>,
    /// The inputs one wake-up took from `inputs`, handled in order (kept for its room).
    taken: Vec<Input>,
    clock: Arc<dyn Clock>,
    supervision: Option<Supervision>,
    process: Option<Box<dyn EngineProcess>>,
    restart_at: Option<Instant>,
    connection: ConnectionPayload,
    /// Whether the adapter is bound to a live engine (always, without supervision).
    engine_bound: bool,
    /// The crash-loop breaker opened: nothing will start the engine again.
    gave_up: bool,
    /// A started engine was bound before: the next one is a restart (its prompts died).
    bound_before: bool,
    /// Requests held while the supervised engine starts, answered once it is bound (or
    /// failed for good).
    held: VecDeque<(ConnId, Ticket, V1Request)>,
    conns: Connections,
    /// Each connection's requests in their order.
    orders: HashMap<ConnId, Order>,
    /// Connections whose input closed, with the end of their grace.
    closing: BTreeMap<ConnId, Instant>,
    /// Turns asked for (a message sent, a session created with a task) that have not run
    /// and ended yet: the session and the turns it had started when it was asked.
    asked_turns: Vec<(String, u64)>,
    /// Restarts, the breaker, diagnostics and counters.
    life: EngineLife,
    /// Where the open prompts are kept, with a state directory.
    saved: Option<PromptFile>,
    /// Prompts shown again after a restart that the engine is still to be asked about (once
    /// it is bound), each with the saved call of the answer that was on its way, if any.
    restored: Vec<(Prompt, Option<Option<Value>>)>,
    /// When the allocator's free memory goes back after a burst.
    trimmer: Trimmer,
}

impl Service {
    /// A service driving `adapter` (whose inputs arrive on `inputs`). With `supervision`,
    /// the loop starts the engine itself and binds the adapter to it.
    pub fn new(
        config: ServiceConfig,
        adapter: Arc<dyn EngineAdapter>,
        inputs: InputReceiver,
        clock: Arc<dyn Clock>,
        supervision: Option<Supervision>,
    ) -> Self {
        let supervision_absent = supervision.is_none();
        adapter.trust_changed(config.host.trusted);
        adapter.reports_deliveries();
        let host = Host::new(normalize_engine(adapter.kind()), config.host);
        let saved = config.state_dir.as_deref().map(PromptFile::new);
        let trimmer = Trimmer::new(config.trim.clone());
        Self {
            trimmer,
            config,
            host,
            adapter,
            inputs: Some(inputs),
            taken: Vec::new(),
            clock,
            supervision,
            process: None,
            restart_at: None,
            connection: connection(ConnectionStatus::Connecting, None, None),
            engine_bound: supervision_absent,
            gave_up: false,
            bound_before: false,
            held: VecDeque::new(),
            conns: Connections::new(),
            orders: HashMap::new(),
            closing: BTreeMap::new(),
            asked_turns: Vec::new(),
            life: EngineLife::default(),
            saved,
            restored: Vec::new(),
        }
    }

    /// Serves every webview connection received on `connections` (each with its own tabs,
    /// sequence numbers and visibility) until that channel is closed and no connection is
    /// left, then stops the engine.
    pub async fn run(
        mut self,
        mut connections: mpsc::Receiver<WebviewSink>,
    ) -> Result<(), ServiceError> {
        let mut tasks: FuturesUnordered<Task> = FuturesUnordered::new();
        if let Some(start) = self.start_task() {
            self.set_connection(connection(ConnectionStatus::Connecting, None, None));
            tasks.push(start);
        }
        self.restore();
        tasks.extend(self.check_restored());
        let mut accepting = true;
        loop {
            self.drain();
            if !accepting && self.conns.is_empty() {
                break;
            }
            let now = self.clock.now();
            if self.trimmer.due(now) {
                // The host's queues first: the room they give back is among what is returned.
                self.host.release_spare();
            }
            if self.trimmer.poll(now) {
                tracing::debug!("the engine went quiet after a burst; memory returned");
            }
            let deadline = [
                self.host.poll_timeout(),
                self.restart_at,
                self.closing_deadline(),
                self.trimmer.deadline(),
            ]
            .into_iter()
            .flatten()
            .min();
            if let Some(pace) = &self.config.pace {
                // The pause also ends before a shown session's next beat: a session that
                // streams keeps its cadence however long the pause may be.
                let beat = self.host.next_beat(now);
                pace.set_due([deadline, beat].into_iter().flatten().min());
            }
            let event = tokio::select! {
                biased;
                sink = connections.recv(), if accepting => match sink {
                    Some(sink) => Event::Accepted(sink),
                    None => { accepting = false; continue; }
                },
                Some((conn, report)) = self.conns.next() => Event::Webview(conn, report),
                Some(done) = tasks.next(), if !tasks.is_empty() => Event::Completed(done),
                n = next_inputs(&mut self.inputs, &mut self.taken) => match n {
                    0 => { self.inputs = None; continue; }
                    _ => Event::Engine,
                },
                exit = wait_child(&mut self.process) => Event::Child(exit),
                () = sleep_until(deadline) => Event::Tick,
            };
            tasks.extend(self.handle(event).await);
            tasks.extend(self.withdrawals());
            self.save_prompts();
            if !self.closing.is_empty() {
                let now = self.clock.now();
                self.close_drained(now);
            }
        }
        drop(tasks);
        self.shutdown().await;
        Ok(())
    }

    /// Handles one event; may hand back tasks for the loop to own.
    async fn handle(&mut self, event: Event) -> Vec<Task> {
        let now = self.clock.now();
        match event {
            Event::Accepted(sink) => {
                let conn = self.conns.accept(sink);
                tracing::info!(conn, "webview connected");
                self.host.handle(Input::Opened(conn), now);
            }
            Event::Webview(conn, report) => return self.on_webview(conn, report, now),
            Event::Engine => {
                // What the engine client queued is handled before the host's output is
                // drained: a burst's state changes leave as one `bb/state`. Bounded
                // (`INPUTS_PER_ROUND`), so webview requests wait at most one round.
                let mut taken = std::mem::take(&mut self.taken);
                let handled = taken.len();
                for (i, input) in taken.drain(..).enumerate() {
                    self.on_input(input, if i == 0 { now } else { self.clock.now() });
                }
                self.taken = taken;
                self.trimmer.inputs(handled, self.clock.now());
            }
            Event::Child(exit) => {
                self.process = None;
                let why = match exit {
                    Ok(info) => format!("the engine exited ({info})"),
                    Err(err) => format!("waiting for the engine failed: {err}"),
                };
                tracing::warn!("{why}");
                return self.engine_down(why, false, now).await;
            }
            Event::Completed(Completion::Call {
                conn,
                ticket,
                note,
                id,
                method,
                outcome,
                after,
            }) => {
                if let CallNote::Prompt(prompt) = &note {
                    let outcome = answer_outcome(&outcome);
                    let answered = Input::PromptAnswered {
                        session_id: prompt.session_id.clone(),
                        request_id: prompt.request_id.clone(),
                        outcome,
                    };
                    self.host.handle(answered, now);
                }
                let outcome = self.lost_session(conn, &note, outcome);
                let response = match outcome {
                    Ok((result, inputs)) => {
                        let asked = result.get("sessionId").and_then(Value::as_str);
                        if let (CallNote::Turn(before), Some(session)) = (&note, asked) {
                            self.asked_turns.push((session.to_owned(), *before));
                            if method == V1Method::SendMessage {
                                let queued = Input::PromptQueued { session_id: session.into() };
                                self.host.handle(queued, now);
                            }
                        }
                        let select_new = method == V1Method::CreateSession
                            && self.host.active_session(conn).is_none();
                        for input in inputs {
                            let created = match &input {
                                Input::SessionUsed { session_id, tab_id, .. } if select_new => {
                                    Some((session_id.clone(), tab_id.clone()))
                                }
                                _ => None,
                            };
                            self.host.handle(input, now);
                            if let Some((session_id, tab_id)) = created {
                                let select = Input::SessionSelected { conn, session_id, tab_id };
                                self.host.handle(select, now);
                            }
                        }
                        V1Response::success(id, result)
                    }
                    Err(err) => {
                        tracing::debug!(%method, code = err.code(), %err, "engine call failed");
                        V1Response::failure(id, err.to_wire())
                    }
                };
                // The response goes out (in its turn) before what it caused (bb.init →
                // state). A webview that called bb.init listens from then on, even if the
                // call failed.
                return self.respond(conn, ticket, response, after, now);
            }
            Event::Completed(Completion::Refused { conn, ticket, response }) => {
                return self.respond(conn, ticket, response, Vec::new(), now);
            }
            Event::Completed(Completion::Started(Ok(engine))) => {
                let endpoint = engine.endpoint;
                tracing::info!(url = %endpoint.base_url(), version = %engine.version, pid = engine.process.pid(), "engine ready");
                self.life.started(engine.process.pid(), endpoint.port());
                if std::mem::replace(&mut self.bound_before, true) {
                    // The requests of the engine that went down died with it.
                    self.host.handle(Input::EngineRestarted, now);
                }
                self.process = Some(engine.process);
                let adapter = self.adapter.clone();
                return vec![Box::pin(async move {
                    Completion::Bound(adapter.reconnect(endpoint).await)
                })];
            }
            Event::Completed(Completion::Started(Err(err))) => {
                tracing::warn!(%err, "engine start failed");
                let auth = matches!(err, EngineError::Auth { .. });
                return self.engine_down(err.to_string(), auth, now).await;
            }
            Event::Completed(Completion::Bound(Ok(()))) => {
                self.engine_bound = true;
                let mut tasks = self.check_restored();
                tasks.extend(self.release_held(now));
                return tasks;
            }
            Event::Completed(Completion::Forgotten(prompts, resent)) => {
                if !prompts.is_empty() {
                    tracing::info!(
                        count = prompts.len(),
                        "prompts shown again after a restart are no longer known to the engine"
                    );
                }
                let forgotten = prompts.into_iter().map(|p| (p.session_id, p.request_id)).collect();
                self.host.handle(Input::PromptsForgotten(forgotten), now);
                for (prompt, outcome) in resent {
                    tracing::info!(request = %prompt.request_id, ?outcome, "an answer saved on its way at the last exit was sent again");
                    let Prompt { session_id, request_id, .. } = prompt;
                    self.host.handle(Input::PromptResent { session_id, request_id, outcome }, now);
                }
            }
            Event::Completed(Completion::Withdrawn(withdraw, result)) => {
                let request = withdraw.prompt.request_id;
                match result {
                    Ok(()) => {
                        tracing::info!(%request, why = withdraw.why.name(), "the engine was told to deny an unanswered request")
                    }
                    Err(err) => {
                        tracing::warn!(%request, %err, "telling the engine to deny a request failed")
                    }
                }
            }
            Event::Completed(Completion::Bound(Err(err))) => {
                tracing::warn!(%err, "binding to the started engine failed");
                self.gave_up = true;
                let payload = self.life.tripped(err.to_string(), false, false);
                self.set_connection(payload);
                return self.release_held(now);
            }
            Event::Tick => {
                self.host.handle_timeout(now);
                self.graces_expired(now);
                if self.restart_at.is_some_and(|at| at <= now) {
                    self.restart_at = None;
                    self.life.start_began();
                    return self.start_task().into_iter().collect();
                }
            }
        }
        Vec::new()
    }

    /// A report of one webview connection.
    fn on_webview(&mut self, conn: ConnId, report: ConnEvent, now: Instant) -> Vec<Task> {
        match report {
            ConnEvent::Inbound(Inbound::Request(req)) => return self.on_request(conn, req, now),
            ConnEvent::Inbound(Inbound::Rejected(response)) => {
                self.on_rejected(conn, *response, now);
            }
            ConnEvent::InputClosed => self.input_closed(conn, now),
            ConnEvent::Inbound(Inbound::Visibility(visible)) => {
                self.host.handle(Input::visibility(conn, visible), now);
            }
            ConnEvent::Closed => self.close_conn(conn, now),
            ConnEvent::Written(n) => {
                let written = self.conns.on_written(conn, n);
                if !written.is_empty() {
                    self.host.handle(Input::Written(written), now);
                }
            }
            ConnEvent::Drained(marks) => {
                self.conns.drained();
                if !marks.is_empty() {
                    self.host.handle(Input::Written(marks), now);
                }
            }
            ConnEvent::Writable => {
                if self.conns.on_writable(conn) {
                    self.host.handle(Input::Stalled { conn, stalled: false }, now);
                }
            }
        }
        Vec::new()
    }

    fn call(&mut self, conn: ConnId, ticket: Ticket, req: V1Request, note: CallNote) -> Task {
        let timeout = self.config.call_timeout;
        let folders = match &req.call {
            V1Call::Init(_) if !self.config.folders.is_empty() => Some(self.config.folders.clone()),
            _ => None,
        };
        // Write-ahead: an answer is saved (with the prompt, in the state directory) before
        // the call that carries it runs.
        let ahead = match note {
            CallNote::Prompt(_) => {
                self.save_prompts();
                self.saved.clone()
            }
            _ => None,
        };
        let call = (req.id, req.call, note);
        call_task(self.adapter.clone(), conn, ticket, call, (timeout, folders, ahead))
    }

    /// Starts the held requests, in arrival order (dispatched, or answered at once when the
    /// breaker opened).
    fn release_held(&mut self, now: Instant) -> Vec<Task> {
        let held: Vec<(ConnId, Ticket, V1Request)> = self.held.drain(..).collect();
        let mut tasks = Vec::new();
        for (conn, ticket, req) in held {
            tasks.extend(self.start_requests(conn, vec![(ticket, req)], now));
        }
        tasks
    }

    /// One input of the engine: the loop notes what it means for the engine's life and
    /// diagnostics, the host core handles it.
    fn on_input(&mut self, input: Input, now: Instant) {
        match input {
            Input::Connection(payload) => {
                self.life.engine_connection(payload.status);
                self.set_connection(*payload);
            }
            Input::Gap { session_id } => {
                self.life.gap(session_id.as_deref(), self.clock.wall_ms());
                let mut payload = self.decorated(self.connection.clone());
                payload.session_id = session_id;
                payload.gap_detected = Some(true);
                self.host.handle(Input::Connection(Box::new(payload)), now);
            }
            input => {
                if let Input::Events { events, .. } = &input {
                    self.life.events_arrived(now);
                    if let Some(pace) = &self.config.pace {
                        pace.counted(events.len());
                    }
                }
                self.host.handle(input, now);
            }
        }
    }

    /// Tasks telling the engine to deny the prompts the host withdrew (expired, or their turn
    /// stopped).
    fn withdrawals(&mut self) -> Vec<Task> {
        let mut tasks = Vec::new();
        while let Some(withdraw) = self.host.poll_withdraw() {
            let reason = match withdraw.why {
                bb_host::PromptState::Expired => AnswerReason::Expired,
                _ => AnswerReason::Cancelled,
            };
            let answer = PromptAnswer::withdraw(withdraw.prompt.clone(), reason);
            let adapter = self.adapter.clone();
            let timeout = self.config.call_timeout;
            tasks.push(Box::pin(async move {
                let told = tokio::time::timeout(timeout, adapter.answer(answer)).await;
                let told = told.unwrap_or(Err(EngineError::Timeout(timeout)));
                Completion::Withdrawn(withdraw, told)
            }) as Task);
        }
        tasks
    }

    /// Shows again the prompts a previous run saved, to be checked with the engine.
    fn restore(&mut self) {
        let Some(file) = &mut self.saved else { return };
        let restored = file.load();
        if restored.is_empty() {
            return;
        }
        tracing::info!(
            count = restored.len(),
            "showing again the prompts left open at the last exit"
        );
        self.restored = restored
            .iter()
            .map(|s| (s.prompt.clone(), s.answer.as_ref().map(|a| a.call.clone())))
            .collect();
        self.host.handle(Input::PromptsRestored(restored), self.clock.now());
    }

    /// Asks the bound engine which restored prompts it no longer knows.
    fn check_restored(&mut self) -> Vec<Task> {
        if !self.engine_bound || self.restored.is_empty() {
            return Vec::new();
        }
        let restored = std::mem::take(&mut self.restored);
        let adapter = self.adapter.clone();
        let timeout = self.config.call_timeout;
        vec![Box::pin(async move {
            let prompts = restored.iter().map(|(p, _)| p.clone()).collect();
            let asked = tokio::time::timeout(timeout, adapter.forgotten(prompts)).await;
            let forgotten = asked.unwrap_or_default();
            // An answer saved on its way whose request the engine still knows is delivered
            // now, not asked again; sending it twice is harmless (refused as not pending).
            let mut resent = Vec::new();
            for (prompt, answer) in restored {
                let Some(call) = answer else { continue };
                if forgotten.contains(&prompt) {
                    continue;
                }
                let sent = tokio::time::timeout(timeout, resend(&*adapter, &prompt, call)).await;
                resent.push((prompt, sent.unwrap_or(AnswerOutcome::Failed)));
            }
            Completion::Forgotten(forgotten, resent)
        })]
    }

    /// Saves the open prompts when they changed.
    fn save_prompts(&mut self) {
        if let Some(file) = &mut self.saved
            && let Some(prompts) = self.host.take_saved()
        {
            file.save(&prompts);
        }
    }

    fn set_connection(&mut self, payload: ConnectionPayload) {
        let payload = self.decorated(payload);
        self.connection = payload.clone();
        self.host.handle(Input::Connection(Box::new(payload)), self.clock.now());
    }

    /// The supervised engine is gone (exit or failed start): schedule a restart or open the
    /// breaker.
    async fn engine_down(&mut self, why: String, auth: bool, now: Instant) -> Vec<Task> {
        let Some(supervision) = self.supervision.as_mut() else {
            self.set_connection(connection(ConnectionStatus::Error, None, Some(why)));
            return Vec::new();
        };
        self.engine_bound = false;
        let decision = supervision.history.record_crash(now);
        // The adapter's streams point at the dead engine: stop them so they report nothing
        // stale; calls answer `engine_unavailable` until the restarted engine is bound.
        self.adapter.shutdown().await;
        match decision {
            RestartDecision::Restart { after, crashes } => {
                tracing::info!(?after, crashes, "restarting the engine");
                self.restart_at = Some(now + after);
                let retries = u64::try_from(crashes).unwrap_or(u64::MAX);
                let payload = self.life.restarting(retries, why, auth);
                self.set_connection(payload);
            }
            decision @ RestartDecision::GiveUp { .. } => {
                let message = format!("{why}; {}", decision.describe());
                tracing::error!("{message}");
                self.gave_up = true;
                let payload = self.life.tripped(message, true, auth);
                self.set_connection(payload);
                return self.release_held(now);
            }
        }
        Vec::new()
    }

    /// A (re)start of the supervised engine, when there is one.
    fn start_task(&self) -> Option<Task> {
        let starter = self.supervision.as_ref()?.starter.clone();
        Some(Box::pin(async move { Completion::Started(starter.start().await) }))
    }

    /// Hands every topic the host core has ready to its connection, without waiting: a
    /// topic that does not fit goes back and stalls that connection only.
    fn drain(&mut self) {
        while let Some((conn, topic)) = self.host.poll_output() {
            let written = match &topic {
                // A shared handle on the list: its classes are read once it is sent.
                // The session's id is copied only while a message awaits its first text.
                V1Topic::Events(batch) => {
                    let metrics = &self.life.metrics;
                    let session = &batch.session_id;
                    Some((
                        metrics.awaits_text(session).then(|| session.clone()),
                        batch.events.clone(),
                    ))
                }
                _ => None,
            };
            let sent = self.conns.send_topic(conn, topic);
            if let (Ok(_), Some((session, events))) = (&sent, written) {
                let now = self.clock.now();
                self.life.events_flushed(now);
                self.life.metrics.events_written(session.as_deref(), events.classes(), now);
            }
            match sent {
                Ok(mark) => {
                    if let Some(mark) = mark {
                        self.host.handle(Input::Written(vec![mark]), self.clock.now());
                    }
                }
                Err(Refused::Full(topic)) => self.host.push_back_front(conn, *topic),
                Err(Refused::Closed) => {
                    let now = self.clock.now();
                    self.close_conn(conn, now);
                }
            }
        }
        // How far every webview showing a session was written: where its stream may resume.
        while let Some((session, event)) = self.host.poll_resume() {
            self.adapter.delivered(&session, &event);
        }
    }

    async fn shutdown(&mut self) {
        self.save_prompts();
        if let Some(file) = &self.saved {
            file.flush().await;
        }
        self.adapter.shutdown().await;
        if let Some(mut process) = self.process.take() {
            match process.terminate(self.config.stop_grace).await {
                Ok(info) => tracing::info!(status = %info, "engine stopped"),
                Err(err) => tracing::warn!(%err, "stopping the engine failed"),
            }
        }
    }
}

/// Takes the inputs queued (at least one, at most [`INPUTS_PER_ROUND`]) into `taken`; `0`
/// once the channel is closed and empty.
async fn next_inputs(inputs: &mut Option<InputReceiver>, taken: &mut Vec<Input>) -> usize {
    match inputs {
        Some(rx) => rx.recv_many(taken, INPUTS_PER_ROUND).await,
        None => std::future::pending().await,
    }
}

async fn wait_child(process: &mut Option<Box<dyn EngineProcess>>) -> std::io::Result<ExitInfo> {
    match process {
        Some(p) => p.wait().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}

fn to_value<T: Serialize>(value: &T) -> Result<Value, EngineError> {
    serde_json::to_value(value)
        .map_err(|e| EngineError::Engine(format!("unserializable result: {e}")))
}

/// One engine call as a task: dispatch, bound in time, and the host inputs its result implies.
/// `note` is what the host decided of the call before (the prompt it answers); `folders`, the
/// workspace folders a `bb.init` lists; `ahead`, the prompts file to have on disk before the
/// call goes to the engine (an answer saved first).
fn call_task(
    adapter: Arc<dyn EngineAdapter>,
    conn: ConnId,
    ticket: Ticket,
    (id, call, note): (String, V1Call, CallNote),
    (timeout, folders, ahead): (Duration, Option<Vec<String>>, Option<PromptFile>),
) -> Task {
    let method = call.method();
    let after = crate::delivery::after_response(conn, &call);
    Box::pin(async move {
        let work = async {
            if let Some(file) = ahead {
                file.flush().await;
            }
            let done: (Value, Vec<Input>) = match call {
                V1Call::Init(_) => {
                    let mut init = adapter.init().await?;
                    init.folders = folders.or(init.folders);
                    (to_value(&init)?, Vec::new())
                }
                V1Call::CreateSession(p) => {
                    let tab_id = p.tab_id.clone();
                    let s = adapter.create_session(p).await?;
                    let session_id = s.session_id.clone();
                    let used = Input::SessionUsed { conn, session_id, tab_id };
                    (to_value(&s)?, vec![Input::SessionUpserted(Box::new(s)), used])
                }
                V1Call::ListSessions(_) => {
                    let r = adapter.list_sessions().await?;
                    (to_value(&r)?, vec![Input::SessionsListed(r.sessions)])
                }
                V1Call::SelectSession(p) => {
                    let tab_id = p.tab_id.clone();
                    let r = adapter.select_session(p).await?;
                    let session_id = r.session_id.clone();
                    (to_value(&r)?, vec![Input::SessionSelected { conn, session_id, tab_id }])
                }
                V1Call::DeleteSession(p) => {
                    let r = adapter.delete_session(p).await?;
                    (to_value(&r)?, vec![Input::SessionRemoved(r.session_id)])
                }
                V1Call::SendMessage(p) => (to_value(&adapter.send_message(p).await?)?, Vec::new()),
                V1Call::Stop(p) => {
                    let r = adapter.stop(p).await?;
                    // The stopped turn's prompts are withdrawn (the pending ones denied).
                    let cancel = Input::PromptsCancelled { session_id: r.session_id.clone() };
                    (to_value(&r)?, vec![cancel])
                }
                V1Call::Command(p) => (to_value(&adapter.command(p).await?)?, Vec::new()),
                V1Call::ApprovePermission(p) => {
                    let CallNote::Prompt(prompt) = &note else {
                        return Err(EngineError::Engine("an answer the host did not allow".into()));
                    };
                    let session_id = p.session_id.clone();
                    adapter.answer(user_answer(prompt.clone(), p)).await?;
                    (to_value(&SessionAck { session_id })?, Vec::new())
                }
                V1Call::ListFiles(p) => (to_value(&adapter.list_files(p).await?)?, Vec::new()),
                V1Call::ReadFileSnippet(p) => {
                    (to_value(&adapter.read_file_snippet(p).await?)?, Vec::new())
                }
                V1Call::OpenDiff(p) => (to_value(&adapter.open_diff(p).await?)?, Vec::new()),
                V1Call::DownloadArtifact(p) => {
                    (to_value(&adapter.download_artifact(p).await?)?, Vec::new())
                }
                V1Call::Visibility(p) => (
                    to_value(&VisibilityResult { visible: p.visible })?,
                    vec![Input::visibility(conn, p.visible)],
                ),
                // Answered by the bridge from the host's view before any engine call.
                V1Call::History(_) => {
                    return Err(EngineError::Engine("bb.history reached the engine".into()));
                }
            };
            Ok(done)
        };
        let outcome =
            tokio::time::timeout(timeout, work).await.unwrap_or(Err(EngineError::Timeout(timeout)));
        Completion::Call { conn, ticket, note, id, method, outcome, after }
    })
}

/// The user's answer a `bb.approvePermission` carries to the engine.
fn user_answer(prompt: Prompt, p: ApprovePermissionParams) -> PromptAnswer {
    PromptAnswer {
        prompt,
        verdict: verdict_of(p.decision),
        remember: p.decision == PermissionDecision::AllowRule,
        rule_update: p.rule_update,
        reason: AnswerReason::User,
    }
}

/// Sends again an answer a previous run saved on its way (`call`, as `resendable` kept it):
/// accepted, or refused as not pending (the first sending was taken), or failed. A call that
/// cannot be read back is a failure (the user is asked again).
async fn resend(
    adapter: &dyn EngineAdapter,
    prompt: &Prompt,
    call: Option<Value>,
) -> AnswerOutcome {
    let Some(mut call) = call else { return AnswerOutcome::Failed };
    let params = call["params"].take();
    let sent = match call["method"].as_str() {
        Some(requests::RESEND_APPROVE) => match serde_json::from_value(params) {
            Ok(p) => adapter.answer(user_answer(prompt.clone(), p)).await,
            Err(_) => return AnswerOutcome::Failed,
        },
        Some(requests::RESEND_COMMAND) => match serde_json::from_value(params) {
            Ok(p) => adapter.command(p).await.map(drop),
            Err(_) => return AnswerOutcome::Failed,
        },
        _ => return AnswerOutcome::Failed,
    };
    answer_outcome(&sent)
}

/// What a `bb.approvePermission` decision says.
pub(crate) fn verdict_of(decision: PermissionDecision) -> bb_host::Verdict {
    match decision {
        PermissionDecision::Deny => bb_host::Verdict::Deny,
        PermissionDecision::AllowOnce | PermissionDecision::AllowRule => bb_host::Verdict::Allow,
    }
}

/// How the engine took an answer, for the host: a refusal saying the engine no longer knows
/// the request makes it stale; any other failure leaves it pending.
fn answer_outcome<T>(result: &Result<T, EngineError>) -> AnswerOutcome {
    match result {
        Ok(_) => AnswerOutcome::Accepted,
        Err(err) if err.code() == "permission_not_pending" => AnswerOutcome::Unknown,
        Err(_) => AnswerOutcome::Failed,
    }
}

/// Which engine's event types the host classifies and coalesces (ACP chunks do not merge).
pub(crate) fn normalize_engine(kind: EngineKind) -> Engine {
    match kind {
        EngineKind::Breadboard => Engine::BreadBoard,
        EngineKind::Kilo => Engine::Kilo,
        EngineKind::Acp => Engine::Acp,
    }
}
