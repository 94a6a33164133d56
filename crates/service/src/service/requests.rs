//! The loop's request path: every request takes its turn in the connection's
//! [`RequestOrder`](crate::order::RequestOrder), is answered by the bridge itself (its own
//! `bb.command`s, the open breaker), held while the engine starts, or dispatched; responses
//! leave in request order; at end of input what is in flight is answered within a grace.

use std::time::Instant;

use bb_protocol::V1Message;
use bb_protocol::v1::{
    CommandResult, ConnectionPayload, PermissionDecision, V1Call, V1Error, V1Method, V1Request,
    V1Response,
};
use bb_supervisor::CrashHistory;
use serde_json::json;
use tokio::sync::mpsc;

use super::{Completion, MAX_HELD, Service, Task};
use crate::engine::EngineError;
use crate::lifecycle::{BridgeCommand, bridge_command};
use crate::order::Ticket;

impl Service {
    /// A request arrived: it takes its turn; what may start now starts.
    pub(super) async fn on_request(
        &mut self,
        req: V1Request,
        now: Instant,
        outbound: &mpsc::Sender<V1Message>,
    ) -> Vec<Task> {
        self.life.metrics.request();
        let start = self.order.admit(req);
        self.start_requests(start, now, outbound).await
    }

    /// The bridge refused a line: its answer takes its turn.
    pub(super) async fn on_rejected(
        &mut self,
        response: V1Response,
        outbound: &mpsc::Sender<V1Message>,
    ) {
        self.life.metrics.request();
        let due = self.order.answer_now(response);
        self.send_responses(due, outbound).await;
    }

    /// Starts requests whose turn came: answers, holds or dispatches each.
    pub(super) async fn start_requests(
        &mut self,
        mut start: Vec<(Ticket, V1Request)>,
        now: Instant,
        outbound: &mpsc::Sender<V1Message>,
    ) -> Vec<Task> {
        let mut tasks = Vec::new();
        while !start.is_empty() {
            let mut next = Vec::new();
            for (ticket, req) in start {
                match self.start_one(ticket, req, now) {
                    Started::Task(task) => tasks.push(task),
                    Started::Held => {}
                    Started::Answered(ticket, response) => {
                        let (due, more) = self.order.complete(ticket, response);
                        self.send_responses(due, outbound).await;
                        next.extend(more);
                    }
                    Started::Restart(ticket, response, task) => {
                        tasks.push(task);
                        let (due, more) = self.order.complete(ticket, response);
                        self.send_responses(due, outbound).await;
                        next.extend(more);
                    }
                }
            }
            start = next;
        }
        tasks
    }

    fn start_one(&mut self, ticket: Ticket, req: V1Request, now: Instant) -> Started {
        if let Some((command, session_id)) = bridge_command(&req.call) {
            return match command {
                BridgeCommand::Metrics => {
                    let result = self.life.metrics_result(session_id, self.queue_depth);
                    Started::Answered(ticket, success(req.id, &result))
                }
                BridgeCommand::EngineRestart => self.engine_restart(ticket, req.id, session_id),
            };
        }
        let method = req.call.method();
        if method != V1Method::Init
            && let Some(err) = self.life.unavailable()
        {
            return Started::Answered(ticket, V1Response::failure(req.id, err.to_wire()));
        }
        // While the supervised engine (re)starts, engine calls wait for it (bb.init answers
        // at once with the engine's status); the call timeout starts when it is dispatched.
        let waiting = !self.engine_bound && !self.gave_up;
        if waiting && method != V1Method::Init && self.held.len() < MAX_HELD {
            self.held.push_back((ticket, req));
            return Started::Held;
        }
        if let V1Call::SendMessage(p) = &req.call {
            self.life.metrics.message_sent(&p.session_id, now);
        }
        Started::Task(self.call(ticket, req))
    }

    /// `bb.command {command: "engine.restart"}`.
    fn engine_restart(&mut self, ticket: Ticket, id: String, session_id: String) -> Started {
        let Some(supervision) = self.supervision.as_mut() else {
            let err = EngineError::InvalidRequest(
                "the bridge did not start this engine (it is attached by URL); restart it where \
                 it runs"
                    .into(),
            );
            return Started::Answered(ticket, V1Response::failure(id, err.to_wire()));
        };
        let starting = !self.engine_bound && !self.gave_up && self.restart_at.is_none();
        if starting {
            let result = CommandResult {
                session_id,
                output: Some(json!({"restarting": true, "alreadyStarting": true})),
            };
            return Started::Answered(ticket, success(id, &result));
        }
        supervision.history = CrashHistory::new(supervision.history.policy());
        let supervisor = supervision.supervisor.clone();
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
            Completion::Started(supervisor.start().await)
        });
        let result = CommandResult { session_id, output: Some(json!({"restarting": true})) };
        Started::Restart(ticket, success(id, &result), task)
    }

    /// A call finished: its response takes its turn; what may start now starts.
    pub(super) async fn respond(
        &mut self,
        ticket: Ticket,
        response: V1Response,
        now: Instant,
        outbound: &mpsc::Sender<V1Message>,
    ) -> Vec<Task> {
        let (due, start) = self.order.complete(ticket, response);
        self.send_responses(due, outbound).await;
        self.start_requests(start, now, outbound).await
    }

    async fn send_responses(&mut self, due: Vec<V1Response>, outbound: &mpsc::Sender<V1Message>) {
        for response in due {
            if let Some(error) = &response.error {
                self.life.metrics.error(&error.code);
            }
            if outbound.send(V1Message::Response(response)).await.is_err() {
                tracing::debug!("webview gone before a response could be sent");
            }
        }
    }

    /// The webview's input closed: answer what is in flight within the grace.
    pub(super) fn input_closed(&mut self, now: Instant) {
        let in_flight = self.order.unanswered();
        if in_flight > 0 {
            tracing::info!(in_flight, grace = ?self.config.eof_grace, "webview input closed; answering what is in flight");
        }
        self.closing = Some(now + self.config.eof_grace);
    }

    /// Whether the loop may end: input closed and every request answered.
    pub(super) fn finished(&self) -> bool {
        self.closing.is_some() && self.order.unanswered() == 0
    }

    /// The grace after end of input ran out: everything still unanswered gets an error.
    pub(super) async fn grace_expired(&mut self, outbound: &mpsc::Sender<V1Message>) {
        self.held.clear();
        let grace = self.config.eof_grace;
        let due = self.order.abandon(|id| {
            let message = format!(
                "the webview closed its input and the engine did not answer within {grace:?}; \
                 the request may or may not have taken effect"
            );
            V1Response::failure(id, V1Error::new("engine_timeout", message))
        });
        self.send_responses(due, outbound).await;
    }

    /// Counts a permission answer the engine accepted.
    pub(super) fn note_success(&mut self, call: &CallNote) {
        if let CallNote::Permission(allowed) = call {
            self.life.metrics.permission_answered(*allowed);
        }
    }

    /// The `bb/connection` payload with diagnostics.
    pub(super) fn decorated(&self, payload: ConnectionPayload) -> ConnectionPayload {
        self.life.decorate(payload, self.queue_depth)
    }
}

/// What a call's success should be counted as.
#[derive(Debug, Clone, Copy)]
pub(super) enum CallNote {
    None,
    /// A permission answer: allowed or denied.
    Permission(bool),
}

impl CallNote {
    pub(super) fn of(call: &V1Call) -> Self {
        match call {
            V1Call::ApprovePermission(p) => {
                CallNote::Permission(p.decision != PermissionDecision::Deny)
            }
            _ => CallNote::None,
        }
    }
}

/// How a request whose turn came was started.
enum Started {
    Task(Task),
    Held,
    Answered(Ticket, V1Response),
    Restart(Ticket, V1Response, Task),
}

fn success<T: serde::Serialize>(id: String, result: &T) -> V1Response {
    match V1Response::success_with(id.clone(), result) {
        Ok(response) => response,
        Err(err) => V1Response::failure(id, V1Error::new("internal_error", err.to_string())),
    }
}
