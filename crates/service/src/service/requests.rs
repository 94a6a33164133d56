//! The loop's request path: every request takes its turn in its connection's
//! [`RequestOrder`](crate::order::RequestOrder), is answered by the bridge itself (its own
//! `bb.command`s, the open breaker), held while the engine starts, or dispatched; responses
//! leave in request order, each followed by what it caused; when a connection's input
//! closes, what is in flight is answered within a grace before the connection is closed.

use std::time::Instant;

use bb_host::{ConnId, Input, Verdict};
use bb_protocol::V1Message;
use bb_protocol::v1::{
    CommandResult, ConnectionPayload, V1Call, V1Error, V1Method, V1Request, V1Response,
};
use bb_supervisor::CrashHistory;
use serde_json::{Value, json};

use super::{Completion, MAX_HELD, Service, Task};
use crate::engine::EngineError;
use crate::lifecycle::{BridgeCommand, bridge_command};
use crate::order::{RequestOrder, Ticket};

/// `bb.command {command: "session.close"}`: the webview closed the session's tab.
const SESSION_CLOSE: &str = "session.close";

/// A connection's order: each response carries the host inputs to apply once it is out.
pub(super) type Order = RequestOrder<Vec<Input>>;

impl Service {
    /// A request arrived: it takes its turn; what may start now starts.
    pub(super) fn on_request(&mut self, conn: ConnId, req: V1Request, now: Instant) -> Vec<Task> {
        self.life.metrics.request();
        let start = self.orders.entry(conn).or_default().admit(req);
        self.start_requests(conn, start, now)
    }

    /// The bridge refused a line: its answer takes its turn.
    pub(super) fn on_rejected(&mut self, conn: ConnId, response: V1Response, now: Instant) {
        self.life.metrics.request();
        let due = self.orders.entry(conn).or_default().answer_now(response);
        self.send_due(conn, due, now);
    }

    /// Starts requests whose turn came: answers, holds or dispatches each.
    pub(super) fn start_requests(
        &mut self,
        conn: ConnId,
        mut start: Vec<(Ticket, V1Request)>,
        now: Instant,
    ) -> Vec<Task> {
        let mut tasks = Vec::new();
        while !start.is_empty() {
            let mut next = Vec::new();
            for (ticket, req) in start {
                let answered = match self.start_one(conn, ticket, req, now) {
                    Started::Task(task) => {
                        tasks.push(task);
                        continue;
                    }
                    Started::Held => continue,
                    Started::Answered(response) => response,
                    Started::Restart(response, task) => {
                        tasks.push(task);
                        response
                    }
                };
                next.extend(self.complete(conn, ticket, answered, Vec::new(), now));
            }
            start = next;
        }
        tasks
    }

    fn start_one(&mut self, conn: ConnId, ticket: Ticket, req: V1Request, now: Instant) -> Started {
        if let Some((command, session_id)) = bridge_command(&req.call) {
            return match command {
                BridgeCommand::Metrics => {
                    let depth = self.conns.queue_depth();
                    let prompts = self.host.prompt_counters();
                    let mut engine = vec![
                        ("permissions.prompt_count", prompts.shown),
                        ("tools.write.allow_count", prompts.write_allow),
                        ("tools.write.deny_count", prompts.write_deny),
                    ];
                    engine.extend(self.adapter.counters());
                    let warnings = self.adapter.diagnostics();
                    let result = self.life.metrics_result(session_id, depth, &engine, warnings);
                    Started::Answered(success(req.id, &result))
                }
                BridgeCommand::EngineRestart => self.engine_restart(req.id, session_id),
            };
        }
        if let Some(response) = crate::delivery::bridge_answer(&mut self.host, &req) {
            return Started::Answered(response);
        }
        // A tab closed on an engine that cannot close a session: nothing to tell the engine
        // (the session keeps running); the webview stops showing it.
        if let V1Call::Command(p) = &req.call
            && p.command == SESSION_CLOSE
            && !self.adapter.closes_sessions()
        {
            let output = json!({"closed": false, "reason": format!(
                "the {} engine has no session close: the session keeps running", self.adapter.name())});
            let result = CommandResult { session_id: p.session_id.clone(), output: Some(output) };
            return Started::Answered(success(req.id, &result));
        }
        let method = req.call.method();
        if method != V1Method::Init
            && let Some(err) = self.life.unavailable()
        {
            return Started::Answered(V1Response::failure(req.id, err.to_wire()));
        }
        let trusted = self.host.trusted();
        for input in crate::delivery::on_dispatch(conn, &req) {
            self.host.handle(input, now);
        }
        if self.host.trusted() != trusted {
            self.adapter.trust_changed(self.host.trusted());
        }
        // While the supervised engine (re)starts, engine calls wait for it (bb.init answers
        // at once with the engine's status); the call timeout starts when it is dispatched.
        let waiting = !self.engine_bound && !self.gave_up;
        if waiting && method != V1Method::Init && self.held.len() < MAX_HELD {
            self.held.push_back((conn, ticket, req));
            return Started::Held;
        }
        if let V1Call::SendMessage(p) = &req.call {
            self.life.metrics.message_sent(&p.session_id, now);
        }
        // The host decides every answer to a prompt (pending, once, trust): only one it
        // allows reaches the engine.
        let note = match self.allow_answer(conn, &req) {
            Ok(note) => note,
            Err(Refusal { error, behind_answer }) => {
                let response = V1Response::failure(req.id, error.to_wire());
                // Refused because another window's answer is on its way: said once that
                // answer is saved, so a bridge killed after saying it still delivers it.
                return match self.saved.clone().filter(|_| behind_answer) {
                    Some(file) => {
                        self.save_prompts();
                        Started::Task(Box::pin(async move {
                            file.flush().await;
                            Completion::Refused { conn, ticket, response }
                        }))
                    }
                    None => Started::Answered(response),
                };
            }
        };
        Started::Task(self.call(conn, ticket, req, note))
    }

    /// `bb.command {command: "engine.restart"}`.
    fn engine_restart(&mut self, id: String, session_id: String) -> Started {
        let Some(supervision) = self.supervision.as_mut() else {
            let err = EngineError::InvalidRequest(
                "the bridge did not start this engine (it is attached by URL); restart it where \
                 it runs"
                    .into(),
            );
            return Started::Answered(V1Response::failure(id, err.to_wire()));
        };
        let starting = !self.engine_bound && !self.gave_up && self.restart_at.is_none();
        if starting {
            let result = CommandResult {
                session_id,
                output: Some(json!({"restarting": true, "alreadyStarting": true})),
            };
            return Started::Answered(success(id, &result));
        }
        supervision.history = CrashHistory::new(supervision.history.policy());
        let starter = supervision.starter.clone();
        self.gave_up = false;
        self.engine_bound = false;
        self.restart_at = None;
        let payload = self.life.restart_requested();
        self.set_connection(payload);
        // The running engine (if any) is stopped on purpose: taken out of the loop's watch,
        // so its exit is no crash.
        let process = self.process.take();
        let adapter = self.adapter.clone();
        let grace = self.config.stop_grace;
        let task: Task = Box::pin(async move {
            adapter.shutdown().await;
            if let Some(mut process) = process {
                match process.terminate(grace).await {
                    Ok(info) => tracing::info!(status = %info, "engine stopped for a restart"),
                    Err(err) => tracing::warn!(%err, "stopping the engine for a restart failed"),
                }
            }
            Completion::Started(starter.start().await)
        });
        let result = CommandResult { session_id, output: Some(json!({"restarting": true})) };
        Started::Restart(success(id, &result), task)
    }

    /// A call of `conn` finished: its response takes its turn (then `after` is applied);
    /// what may start now starts.
    pub(super) fn respond(
        &mut self,
        conn: ConnId,
        ticket: Ticket,
        response: V1Response,
        after: Vec<Input>,
        now: Instant,
    ) -> Vec<Task> {
        let start = self.complete(conn, ticket, response, after, now);
        self.start_requests(conn, start, now)
    }

    fn complete(
        &mut self,
        conn: ConnId,
        ticket: Ticket,
        response: V1Response,
        after: Vec<Input>,
        now: Instant,
    ) -> Vec<(Ticket, V1Request)> {
        let Some(order) = self.orders.get_mut(&conn) else { return Vec::new() };
        let (due, start) = order.complete(ticket, response, after);
        self.send_due(conn, due, now);
        start
    }

    /// Sends responses now due, each followed by what it caused; closes a connection whose
    /// input closed once everything is answered.
    fn send_due(&mut self, conn: ConnId, due: Vec<(V1Response, Vec<Input>)>, now: Instant) {
        for (response, after) in due {
            if let Some(error) = &response.error {
                self.life.metrics.error(&error.code);
            }
            let request_id = response.id.clone();
            if !self.conns.send_response(conn, V1Message::Response(response)) {
                self.host.handle(Input::Stalled { conn, stalled: true }, now);
            }
            for input in after {
                self.host.handle(input, now);
            }
            // What the request claimed (a session it was about to bind) is released.
            self.host.handle(Input::Answered { conn, request_id }, now);
        }
        self.close_if_drained(conn, now);
    }

    /// A connection whose input closed closes once nothing it asked is unanswered and no
    /// turn streams, nor is about to: one asked for has run and ended or waits on the user
    /// (its events still reach it until then, and what is due at `now` — a run end, a
    /// prompt — is published to it before it closes).
    pub(super) fn close_if_drained(&mut self, conn: ConnId, now: Instant) {
        if !self.closing.contains_key(&conn) || self.unanswered(conn) > 0 {
            return;
        }
        let host = &self.host;
        self.asked_turns.retain(|(session, before)| {
            let (turns, streaming) = host.turns(session);
            turns <= *before || streaming
        });
        if self.asked_turns.is_empty() && !self.host.any_streaming() {
            self.host.handle_timeout(now);
            self.drain();
            self.close_conn(conn, now);
        }
    }

    /// Closes the connections whose input closed and that have nothing left to wait for
    /// (a turn ended since).
    pub(super) fn close_drained(&mut self, now: Instant) {
        let closing: Vec<ConnId> = self.closing.keys().copied().collect();
        for conn in closing {
            self.close_if_drained(conn, now);
        }
    }

    fn unanswered(&self, conn: ConnId) -> usize {
        self.orders.get(&conn).map_or(0, RequestOrder::unanswered)
    }

    /// The input of `conn` closed: it closes once what is in flight is answered and no turn
    /// streams any more, at the latest after the grace.
    pub(super) fn input_closed(&mut self, conn: ConnId, now: Instant) {
        let in_flight = self.unanswered(conn);
        let streaming = self.host.any_streaming() || !self.asked_turns.is_empty();
        let grace = self.config.eof_grace;
        tracing::info!(
            conn,
            in_flight,
            streaming,
            ?grace,
            "webview input closed; answering what is in flight and streaming what runs"
        );
        self.closing.insert(conn, now + grace);
        self.close_if_drained(conn, now);
    }

    /// Forgets a connection.
    pub(super) fn close_conn(&mut self, conn: ConnId, now: Instant) {
        tracing::info!(conn, "webview disconnected");
        self.closing.remove(&conn);
        self.orders.remove(&conn);
        self.held.retain(|(c, _, _)| *c != conn);
        self.conns.close(conn);
        self.host.handle(Input::Closed(conn), now);
    }

    /// The earliest end of a closing connection's grace.
    pub(super) fn closing_deadline(&self) -> Option<Instant> {
        self.closing.values().min().copied()
    }

    /// Connections whose grace ran out: everything still unanswered gets an error, then the
    /// connection closes.
    pub(super) fn graces_expired(&mut self, now: Instant) {
        let expired: Vec<ConnId> =
            self.closing.iter().filter(|(_, at)| **at <= now).map(|(c, _)| *c).collect();
        let grace = self.config.eof_grace;
        for conn in expired {
            self.held.retain(|(c, _, _)| *c != conn);
            let due = self.orders.get_mut(&conn).map(|order| {
                order.abandon(|id| {
                    let message = format!(
                        "the webview closed its input and the engine did not answer within \
                         {grace:?}; the request may or may not have taken effect"
                    );
                    V1Response::failure(id, V1Error::new("engine_timeout", message))
                })
            });
            self.send_due(conn, due.unwrap_or_default(), now);
            if self.closing.contains_key(&conn) {
                self.close_conn(conn, now);
            }
        }
    }

    /// What the host says of a request before it is dispatched: an answer to a prompt
    /// (`bb.approvePermission`, or a `bb.command` the adapter says answers one) goes only
    /// when the host allows it (pending, once, trust); a `bb.createSession` whose
    /// `permissionMode` lets the engine write without asking needs trust too; a
    /// `bb.sendMessage` needs room in its session's prompt queue.
    fn allow_answer(&mut self, conn: ConnId, req: &V1Request) -> Result<CallNote, Refusal> {
        let refused = |err: bb_host::AnswerError| Refusal {
            behind_answer: err.being_answered(),
            error: EngineError::refused(err.code(), err.to_string()),
        };
        if let V1Call::CreateSession(p) = &req.call
            && let Some(folder) = &p.folder
            && !self.config.folders.is_empty()
        {
            crate::folders::folder_index(folder, &self.config.folders)?;
        }
        let (session, request, verdict, decision) = match &req.call {
            V1Call::ApprovePermission(p) => {
                // An answer to an earlier card is not taken for a later request of its id.
                self.host
                    .answers_card(&p.session_id, &p.request_id, p.event_id.as_deref())
                    .map_err(refused)?;
                let decision = serde_json::to_value(p.decision)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                let verdict = super::verdict_of(p.decision);
                (p.session_id.as_str(), p.request_id.clone(), verdict, decision)
            }
            V1Call::Command(p) => match self.adapter.answers_prompt(p) {
                Some((request, verdict)) => {
                    let decision = if verdict == Verdict::Reply { "reply" } else { "deny" };
                    (p.session_id.as_str(), request, verdict, decision.to_owned())
                }
                None => return Ok(CallNote::None),
            },
            V1Call::CreateSession(p)
                if p.permission_mode.as_deref() == Some(WRITES_WITHOUT_ASKING)
                    && !self.host.trusted() =>
            {
                return Err(EngineError::refused(
                    "workspace_untrusted",
                    format!(
                        "permissionMode {WRITES_WITHOUT_ASKING} lets the engine write without \
                         asking: trust the workspace first (bb.init {{\"workspaceTrusted\": \
                         true}}, or start the bridge with --trusted)"
                    ),
                )
                .into());
            }
            // The turns the session started before: the one asked for is the next (a new
            // session has none).
            V1Call::SendMessage(p) => {
                // One prompt runs at a time per session; a bounded number wait behind it.
                if let Err((queued, max)) = self.host.queue_room(&p.session_id) {
                    return Err(EngineError::refused(
                        "queue_full",
                        format!(
                            "{queued} prompts are already queued behind the running turn (at \
                             most {max}); wait for the turn to end or bb.stop it"
                        ),
                    )
                    .into());
                }
                return Ok(CallNote::Turn(self.host.turns(&p.session_id).0));
            }
            V1Call::CreateSession(p) if p.task.is_some() => return Ok(CallNote::Turn(0)),
            V1Call::SelectSession(p) => return Ok(CallNote::Select { tab_id: p.tab_id.clone() }),
            _ => return Ok(CallNote::None),
        };
        let prompt = self
            .host
            .begin_answer_from(conn, session, &request, verdict, &decision)
            .map_err(refused)?;
        // Saved with the answer (before it is sent): what a restarted bridge sends again.
        if let Some(call) = resendable(&req.call) {
            self.host.keep_answer_call(&prompt, call);
        }
        Ok(CallNote::Prompt(prompt))
    }

    /// The `bb/connection` payload with diagnostics.
    pub(super) fn decorated(&self, payload: ConnectionPayload) -> ConnectionPayload {
        self.life.decorate(payload, self.conns.queue_depth(), self.adapter.diagnostics())
    }
}

impl Service {
    /// A `session_not_found` of a session the bridge kept the view of (the engine restarted
    /// without it): a select shows that view, read-only, with a notice saying so
    /// ([`Input::SessionLost`]); any other call says the session is read-only and how to go
    /// on. Other outcomes pass unchanged.
    pub(super) fn lost_session(
        &self,
        conn: ConnId,
        note: &CallNote,
        outcome: Result<(Value, Vec<Input>), EngineError>,
    ) -> Result<(Value, Vec<Input>), EngineError> {
        let Err(EngineError::SessionNotFound(id)) = &outcome else { return outcome };
        if !self.host.kept_view(id) {
            return outcome;
        }
        if let CallNote::Select { tab_id } = note {
            let lost = Input::SessionLost { session_id: id.clone() };
            let tab_id = tab_id.clone();
            let selected = Input::SessionSelected { conn, session_id: id.clone(), tab_id };
            return Ok((json!({"sessionId": id}), vec![lost, selected]));
        }
        Err(EngineError::refused(
            "session_not_found",
            format!(
                "the engine no longer holds session {id} (it restarted without it, or it was \
                 deleted elsewhere); what the bridge kept of it is shown read-only: start a new \
                 session (bb.createSession) to go on"
            ),
        ))
    }
}

/// Why the host refused a request before it was dispatched.
pub(super) struct Refusal {
    error: EngineError,
    /// Another answer to the prompt is on its way (the refusal says "being answered").
    behind_answer: bool,
}

impl From<EngineError> for Refusal {
    fn from(error: EngineError) -> Self {
        Self { error, behind_answer: false }
    }
}

/// The call carrying an answer, as it is saved to be sent again after a restart
/// (`{"method", "params"}`, read back by `resend`).
fn resendable(call: &V1Call) -> Option<Value> {
    let (method, params) = match call {
        V1Call::ApprovePermission(p) => (RESEND_APPROVE, serde_json::to_value(p).ok()?),
        V1Call::Command(p) => (RESEND_COMMAND, serde_json::to_value(p).ok()?),
        _ => return None,
    };
    Some(json!({"method": method, "params": params}))
}

/// The saved call of an answer given with `bb.approvePermission`.
pub(super) const RESEND_APPROVE: &str = "bb.approvePermission";
/// The saved call of an answer given with a `bb.command` (a question's reply).
pub(super) const RESEND_COMMAND: &str = "bb.command";

/// The `permissionMode` that lets an engine write without asking: it needs trust.
const WRITES_WITHOUT_ASKING: &str = "acceptEdits";

/// What the host decided of a call before it was dispatched.
#[derive(Debug, Clone)]
pub(super) enum CallNote {
    None,
    /// It answers this prompt (the host allowed the answer; how the engine takes it is
    /// reported back to the host).
    Prompt(bb_host::Prompt),
    /// It starts a turn (a message, a session created with a task) of a session that had
    /// started this many before.
    Turn(u64),
    /// It selects a session for this tab: one the engine no longer holds is shown from what
    /// the bridge kept, read-only.
    Select {
        tab_id: Option<String>,
    },
}

/// How a request whose turn came was started.
enum Started {
    Task(Task),
    Held,
    Answered(V1Response),
    Restart(V1Response, Task),
}

fn success<T: serde::Serialize>(id: String, result: &T) -> V1Response {
    match V1Response::success_with(id.clone(), result) {
        Ok(response) => response,
        Err(err) => V1Response::failure(id, V1Error::new("internal_error", err.to_string())),
    }
}
