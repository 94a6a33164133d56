//! The hub's events (other than permission requests) as the sidebar's engine updates.
//!
//! Events the bridge makes, besides the agent's `session/update` kinds:
//! * `turn_started`, `turn_ended {stopReason, usage?}`, `turn_error {code, message}`;
//! * `elicitation {requestId, mode, title, requestedSchema? | url?}` (a question card;
//!   answered with `bb.command question.reply` / `question.reject`),
//!   `elicitation_settled {requestId, decision, outcome}`, `elicitation_completed
//!   {elicitationId}`;
//! * `terminal_output {terminalId, toolCallId?, output}` (streamed tool output),
//!   `terminal_exited {terminalId, toolCallId?, exitStatus}`;
//! * `fs_read {path}`, `fs_write {path, file}`, `fs_refused {op, path, message}`;
//! * `subagent_activity {subagentSessionId, parentSessionId, taskId, status, update}`: an
//!   update of a child session an agent announced with `subagent_update`, shown under its
//!   parent (the tasks lane), not as a session of its own;
//! * `agent_exited`, `agent_restarting`, `session_resumed`, `session_resume_failed`,
//!   `session_closed` ([`super::life`], [`super::commands`]).
//!
//! Updates of a session nobody opened or announced are forwarded under their own session id
//! (the host keeps them until a tab shows it); events that name no session at all are
//! counted as `events.unrouted_count`.

use std::collections::HashMap;

use bb_protocol::ws::AcpRequestId;
use bb_service::EngineUpdate;
use serde_json::{Map, Value, json};

use super::{Inner, lock, request_key};
use crate::AcpEventKind;
use bb_host::permissions::RequestKind;

/// What the sidebar keeps of the agent's updates.
#[derive(Debug, Default)]
pub(crate) struct Tracked {
    /// Per session: the agent's available commands (its `/` menu).
    pub(crate) commands: HashMap<String, Vec<Value>>,
    /// Terminal id → the tool call that shows it.
    terminals: HashMap<String, String>,
    /// Child session → parent session (`subagent_update`).
    children: HashMap<String, String>,
    /// (session, request id as sent) → the agent's elicitation request id.
    pub(crate) questions: HashMap<(String, String), AcpRequestId>,
    /// URL elicitation id → (session, request id as sent).
    elicitation_ids: HashMap<String, (String, String)>,
    /// Events that named no session.
    pub(crate) unrouted: u64,
}

fn obj(pairs: impl IntoIterator<Item = (&'static str, Value)>) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// Maps one hub event (not a permission request or settlement, not the connection closing).
pub(crate) fn map(inner: &Inner, kind: AcpEventKind) -> Vec<EngineUpdate> {
    let mut out = Vec::new();
    match kind {
        AcpEventKind::SessionUpdate { session_id, update } => {
            out.extend(session_update(inner, session_id, update));
        }
        AcpEventKind::State { session_id: Some(session), state: s, detail } => {
            let running = s == "running";
            let kind = match (s, detail.contains_key("error")) {
                ("running", _) => "turn_started",
                (_, true) => "turn_error",
                _ => "turn_ended",
            };
            let payload = match detail.get("error") {
                Some(Value::Object(e)) => e.clone(),
                _ => detail,
            };
            out.push(inner.event(&session, kind, payload));
            if !running {
                // A turn that ended leaves no request of it open.
                inner.permits.cancel_session(&session);
                let mut st = lock(&inner.state);
                st.asked.retain(|(s, _), _| *s != session);
                st.tracked.questions.retain(|(s, _), _| *s != session);
                drop(st);
                out.push(inner.permits.count_update(&session));
            }
            out.push(EngineUpdate::SessionRunning { session_id: session, running });
        }
        AcpEventKind::Elicitation { session_id: Some(session), request_id, request } => {
            let key = request_key(&request_id);
            {
                let mut st = lock(&inner.state);
                if let Some(eid) = request.get("elicitationId").and_then(Value::as_str) {
                    st.tracked
                        .elicitation_ids
                        .insert(eid.to_owned(), (session.clone(), key.clone()));
                }
                st.tracked.questions.insert((session.clone(), key.clone()), request_id);
            }
            if inner.permits.raised(&session, &key, RequestKind::Question) {
                let mut payload = obj([
                    ("requestId", json!(key)),
                    ("mode", request.get("mode").cloned().unwrap_or(Value::Null)),
                    ("title", request.get("message").cloned().unwrap_or(Value::Null)),
                ]);
                for field in ["requestedSchema", "url", "elicitationId", "toolCallId"] {
                    if let Some(v) = request.get(field) {
                        payload.insert(field.to_owned(), v.clone());
                    }
                }
                out.push(inner.event(&session, "elicitation", payload));
            }
            out.push(inner.permits.count_update(&session));
        }
        AcpEventKind::Elicitation { session_id: None, request, .. } => {
            // A request-scoped elicitation (before any session) has no tab to show it on.
            lock(&inner.state).tracked.unrouted += 1;
            tracing::warn!(message = ?request.get("message"), "an ACP elicitation outside any session is not shown; answer it over the gateway's acp_* methods");
        }
        AcpEventKind::ElicitationSettled {
            session_id: Some(session),
            request_id: Some(id),
            outcome,
        } => {
            let key = request_key(&id);
            inner.permits.replied(&session, &key);
            lock(&inner.state).tracked.questions.remove(&(session.clone(), key.clone()));
            let decision = outcome.get("action").cloned().unwrap_or(Value::Null);
            let payload =
                obj([("requestId", json!(key)), ("decision", decision), ("outcome", outcome)]);
            out.push(inner.event(&session, "elicitation_settled", payload));
            out.push(inner.permits.count_update(&session));
        }
        AcpEventKind::ElicitationSettled { outcome, .. } => {
            let eid = outcome.get("elicitationId").and_then(Value::as_str).unwrap_or_default();
            let target = lock(&inner.state).tracked.elicitation_ids.remove(eid);
            match target {
                Some((session, key)) => {
                    let payload = obj([("elicitationId", json!(eid)), ("requestId", json!(key))]);
                    out.push(inner.event(&session, "elicitation_completed", payload));
                }
                None => lock(&inner.state).tracked.unrouted += 1,
            }
        }
        AcpEventKind::TerminalOutput { session_id, terminal_id, output } => {
            let call = lock(&inner.state).tracked.terminals.get(&terminal_id).cloned();
            let mut payload = obj([("terminalId", json!(terminal_id)), ("output", json!(output))]);
            if let Some(c) = call {
                payload.insert("toolCallId".to_owned(), json!(c));
            }
            out.push(inner.event(&session_id, "terminal_output", payload));
        }
        AcpEventKind::TerminalExited { session_id, terminal_id, exit } => {
            let call = lock(&inner.state).tracked.terminals.get(&terminal_id).cloned();
            let mut payload = obj([("terminalId", json!(terminal_id)), ("exitStatus", exit)]);
            if let Some(c) = call {
                payload.insert("toolCallId".to_owned(), json!(c));
            }
            out.push(inner.event(&session_id, "terminal_exited", payload));
        }
        AcpEventKind::FileAccess { session_id, op, path, refused } => {
            let (kind, payload) = match refused {
                Some(why) => (
                    "fs_refused",
                    obj([("op", json!(op)), ("path", json!(path)), ("message", json!(why))]),
                ),
                None if op == "write" => {
                    ("fs_write", obj([("path", json!(path)), ("file", json!(path))]))
                }
                None => ("fs_read", obj([("path", json!(path))])),
            };
            out.push(inner.event(&session_id, kind, payload));
        }
        // Handled by the pump; a request-scoped settlement without id was handled above.
        AcpEventKind::PermissionRequest { .. }
        | AcpEventKind::PermissionSettled { .. }
        | AcpEventKind::State { session_id: None, .. } => {}
    }
    out
}

/// One `session/update`: tracked facts (commands, terminals, sub-agents), then the event.
fn session_update(inner: &Inner, session_id: String, update: Value) -> Vec<EngineUpdate> {
    let kind =
        update.get("sessionUpdate").and_then(Value::as_str).unwrap_or("unknown_update").to_owned();
    let parent = {
        let mut st = lock(&inner.state);
        match kind.as_str() {
            "available_commands_update" => {
                let commands = update.get("availableCommands").and_then(Value::as_array).cloned();
                st.tracked.commands.insert(session_id.clone(), commands.unwrap_or_default());
            }
            "tool_call" | "tool_call_update" => {
                let call = update.get("toolCallId").and_then(Value::as_str);
                for c in update.get("content").and_then(Value::as_array).into_iter().flatten() {
                    if c.get("type").and_then(Value::as_str) == Some("terminal")
                        && let (Some(t), Some(call)) =
                            (c.get("terminalId").and_then(Value::as_str), call)
                    {
                        st.tracked.terminals.insert(t.to_owned(), call.to_owned());
                    }
                }
            }
            "subagent_update" => {
                if let Some(child) = update.get("sessionId").and_then(Value::as_str) {
                    st.tracked.children.insert(child.to_owned(), session_id.clone());
                }
            }
            _ => {}
        }
        st.tracked.children.get(&session_id).cloned()
    };
    let payload = match update {
        Value::Object(map) => map,
        other => obj([("update", other)]),
    };
    match parent {
        // A child session's activity shows under its parent, as the child's task.
        Some(parent) => {
            let status = match kind.as_str() {
                "agent_message_chunk"
                | "agent_thought_chunk"
                | "tool_call"
                | "tool_call_update"
                | "plan" => "running",
                _ => "active",
            };
            let payload = obj([
                ("subagentSessionId", json!(session_id)),
                ("taskId", json!(session_id)),
                ("status", json!(status)),
                ("kind", json!(kind)),
                ("update", Value::Object(payload)),
            ]);
            vec![inner.event(&parent, "subagent_activity", payload)]
        }
        None => vec![inner.event(&session_id, &kind, payload)],
    }
}
