//! The hub's events (other than permission requests) as the sidebar's host inputs.
//!
//! Events the bridge makes, besides the agent's `session/update` kinds:
//! * `turn_started`, `turn_ended {stopReason, usage?}`, `turn_error {code, message}`;
//! * `elicitation {requestId, mode, title, requestedSchema? | url?}` (a question card;
//!   answered with `bb.command question.reply` / `question.reject`),
//!   `elicitation_settled {requestId, decision, outcome}`, `elicitation_completed
//!   {elicitationId}`;
//! * `terminal_output {terminalId, toolCallId?, output}` (streamed tool output),
//!   `terminal_exited {terminalId, toolCallId?, exitStatus}`. A terminal's output usually
//!   starts before the agent names the tool call that shows it: until it does, the output is
//!   held (at most [`HELD_OUTPUT`] bytes per terminal, then sent without the call), and sent
//!   right after the update that names the call, or when the terminal exits;
//! * `fs_read {path}`, `fs_write {path, file}`, `fs_refused {op, path, message}`;
//! * `subagent_activity {subagentSessionId, parentSessionId, taskId, status, update}`: an
//!   update of a child session an agent announced with `subagent_update`, shown under its
//!   parent (the tasks lane); the child is listed in `bb/state` with its parent, so a
//!   prompt it raises shows on the parent's tab;
//! * `agent_exited`, `agent_restarting`, `session_resumed`, `session_resume_failed`,
//!   `session_closed` (`super::life`, `super::commands`).
//!
//! Updates of a session nobody opened or announced are forwarded under their own session id
//! (the host keeps them until a tab shows it); events that name no session at all are
//! counted as `events.unrouted_count`.

use std::collections::HashMap;

use bb_host::{Input, Prompt, PromptKind};
use bb_protocol::v1::SessionSummary;
use bb_protocol::ws::AcpRequestId;
use serde_json::{Map, Value, json};

use super::{Inner, lock, request_key};
use crate::AcpEventKind;

/// Output of a terminal no tool call names yet, held per terminal (bytes).
pub const HELD_OUTPUT: usize = 64 * 1024;

/// A terminal's output (and exit) held until a tool call names the terminal.
#[derive(Debug)]
struct Held {
    session: String,
    output: Vec<String>,
    bytes: usize,
    /// Its exit status, once it exited.
    exit: Option<Value>,
}

/// What the sidebar keeps of the agent's updates.
#[derive(Debug, Default)]
pub(crate) struct Tracked {
    /// Per session: the agent's available commands (its `/` menu).
    pub(crate) commands: HashMap<String, Vec<Value>>,
    /// Terminal id → the tool call that shows it.
    terminals: HashMap<String, String>,
    /// Terminal id → what was not sent yet because no tool call names the terminal yet.
    held: HashMap<String, Held>,
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
pub(crate) fn map(inner: &Inner, kind: AcpEventKind) -> Vec<Input> {
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
                // What a terminal no tool call named held goes out before the turn's end.
                let held: Vec<(String, Held)> = {
                    let mut st = lock(&inner.state);
                    let ids: Vec<String> = st
                        .tracked
                        .held
                        .iter()
                        .filter(|(_, h)| h.session == session)
                        .map(|(t, _)| t.clone())
                        .collect();
                    ids.into_iter()
                        .filter_map(|t| st.tracked.held.remove(&t).map(|h| (t, h)))
                        .collect()
                };
                let end = out.pop();
                for (terminal, h) in held {
                    out.extend(release(inner, &terminal, None, h));
                }
                out.extend(end);
                // A turn that ended leaves no request of it open.
                out.push(inner.forgotten(&session));
            }
            out.push(Input::SessionRunning { session_id: session, running });
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
            // A question: shown once by the host, answered with `question.*`.
            let prompt = Prompt::new(&session, &key, PromptKind::Question);
            let shows = inner.classed(&session, "elicitation", payload);
            out.push(Input::PromptRaised {
                prompt: Box::new(prompt),
                event: Some(Box::new(shows)),
            });
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
            lock(&inner.state).tracked.questions.remove(&(session.clone(), key.clone()));
            let decision = outcome.get("action").cloned().unwrap_or(Value::Null);
            let payload = obj([
                ("requestId", json!(key.clone())),
                ("decision", decision),
                ("outcome", outcome),
            ]);
            let says = inner.classed(&session, "elicitation_settled", payload);
            out.push(Input::PromptSettled {
                session_id: session,
                request_id: key,
                event: Some(Box::new(says)),
            });
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
            let mut st = lock(&inner.state);
            let call = st.tracked.terminals.get(&terminal_id).cloned();
            if call.is_none() {
                let held = st.tracked.held.entry(terminal_id.clone()).or_insert_with(|| Held {
                    session: session_id.clone(),
                    output: Vec::new(),
                    bytes: 0,
                    exit: None,
                });
                if held.bytes + output.len() <= HELD_OUTPUT {
                    held.bytes += output.len();
                    held.output.push(output);
                    return out;
                }
            }
            drop(st);
            out.push(terminal_output(inner, &session_id, &terminal_id, call.as_deref(), output));
        }
        AcpEventKind::TerminalExited { session_id, terminal_id, exit } => {
            let mut st = lock(&inner.state);
            let call = st.tracked.terminals.get(&terminal_id).cloned();
            if call.is_none()
                && let Some(held) = st.tracked.held.get_mut(&terminal_id)
            {
                // Sent with its output once a tool call names it, or when the turn ends.
                held.exit = Some(exit);
                return out;
            }
            drop(st);
            out.push(terminal_exited(inner, &session_id, &terminal_id, call.as_deref(), exit));
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

fn terminal_exited(
    inner: &Inner,
    session: &str,
    terminal: &str,
    call: Option<&str>,
    exit: Value,
) -> Input {
    let mut payload = obj([("terminalId", json!(terminal)), ("exitStatus", exit)]);
    if let Some(c) = call {
        payload.insert("toolCallId".to_owned(), json!(c));
    }
    inner.event(session, "terminal_exited", payload)
}

/// What was held for a terminal, as events (its output, then its exit if it exited).
fn release(inner: &Inner, terminal: &str, call: Option<&str>, held: Held) -> Vec<Input> {
    let mut out: Vec<Input> = held
        .output
        .into_iter()
        .map(|o| terminal_output(inner, &held.session, terminal, call, o))
        .collect();
    if let Some(exit) = held.exit {
        out.push(terminal_exited(inner, &held.session, terminal, call, exit));
    }
    out
}

fn terminal_output(
    inner: &Inner,
    session: &str,
    terminal: &str,
    call: Option<&str>,
    output: String,
) -> Input {
    let mut payload = obj([("terminalId", json!(terminal)), ("output", json!(output))]);
    if let Some(c) = call {
        payload.insert("toolCallId".to_owned(), json!(c));
    }
    inner.event(session, "terminal_output", payload)
}

/// One `session/update`: tracked facts (commands, terminals, sub-agents), then the event
/// (and the output held for a terminal it names).
fn session_update(inner: &Inner, session_id: String, update: Value) -> Vec<Input> {
    let kind =
        update.get("sessionUpdate").and_then(Value::as_str).unwrap_or("unknown_update").to_owned();
    let mut released = Vec::new();
    let mut retitled = None;
    let mut child = None;
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
                        if let Some(held) = st.tracked.held.remove(t) {
                            released.push((t.to_owned(), call.to_owned(), held));
                        }
                    }
                }
            }
            "subagent_update" => {
                if let Some(id) = update.get("sessionId").and_then(Value::as_str)
                    && id != session_id
                    && st.tracked.children.insert(id.to_owned(), session_id.clone()).is_none()
                {
                    // Listed with its parent: a prompt of the child shows on its tab.
                    child = Some(SessionSummary {
                        session_id: id.to_owned(),
                        parent_id: Some(session_id.clone()),
                        ..SessionSummary::default()
                    });
                }
            }
            // The title the agent gives a session is its title in `bb/state` too.
            "session_info_update" => {
                if let Some(title) = update.get("title").and_then(Value::as_str)
                    && let Some(s) = st.sessions.iter_mut().find(|s| s.session_id == session_id)
                {
                    s.title = Some(title.to_owned());
                    retitled = Some(s.clone());
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
    let mut out: Vec<Input> =
        child.map(|s| Input::SessionUpserted(Box::new(s))).into_iter().collect();
    out.push(match parent {
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
            inner.event(&parent, "subagent_activity", payload)
        }
        None => inner.event(&session_id, &kind, payload),
    });
    for (terminal, call, held) in released {
        out.extend(release(inner, &terminal, Some(&call), held));
    }
    out.extend(retitled.map(|s| Input::SessionUpserted(Box::new(s))));
    out
}
