//! `bb.command` on an ACP agent, prompts, and the config options of new sessions.
//!
//! * `session.close`: the tab closed: the session's late updates are dropped (counted as
//!   `acp.updates_dropped_after_close`), its open questions answered `cancelled`, its
//!   terminals killed, the prompts queued behind its turn withdrawn, then `session/close`
//!   when the agent offers it (`output.agentClosed` says whether it did; without it a
//!   running turn is cancelled). The session stays listed and reopens (resume or load) when
//!   selected again.
//! * `config.options`: the session's config options (`output.configOptions`) and what is
//!   remembered for the workspace (`output.remembered`); `config.set {configId, value}`:
//!   `session/set_config_option` (the value checked against the options first), then
//!   remembered for the workspace, so later sessions start with it.
//! * `commands`: the agent's available commands (its `/` menu) for the session;
//!   `/<name> [input]` or `{command: "<name>", args: {input}}` for one of them: sent as the
//!   prompt `/<name> input`, as ACP runs commands.
//! * `question.reply {requestId, answers}` (a form's values by field; none for a URL
//!   elicitation), `question.reject {requestId}` (declined), `question.cancel {requestId}`:
//!   answers to the host's question prompts, which the host allows first (shown, pending,
//!   once); `bb.approvePermission` with `deny` declines one too.
//! * `agent.restart`: starts the agent again (after the crash-loop breaker opened, or to
//!   replace it); its open sessions are resumed.
//! * anything else: `unknown_command`, listing these and the agent's commands.

use std::sync::Arc;

use bb_host::{Input, Verdict};
use bb_protocol::v1::{CommandParams, CommandResult};
use bb_protocol::ws::{
    AcpElicitationReplyParams, AcpSessionParams, AcpSessionPromptParams, AcpSetConfigOptionParams,
    ContentBlock, ElicitationActionKind,
};
use bb_service::{AnswerReason, EngineError};
use serde_json::{Map, Value, json};

use super::config::{option_for, remembered_changes};
use super::{Inner, engine_error, lock};

/// The bridge's own commands, for `unknown_command`.
const OWN: &[&str] = &[
    "session.close",
    "config.options",
    "config.set",
    "commands",
    "question.reply",
    "question.reject",
    "question.cancel",
    "agent.restart",
];

/// Starts a turn in the background, or queues the prompt behind the session's turn on its
/// way: ACP runs one prompt per session at a time (a `session/prompt` is answered when its
/// turn ends), so the bridge holds the rest and sends each as the turn before it ends. The
/// host counts a send while the session runs at once and bounds the queue (`queue_full`);
/// the count left is reported as each queued prompt starts or the queue is withdrawn
/// ([`withdraw_queued`]). Each turn's end arrives as `turn_ended` (or `turn_error`); a
/// queued prompt that cannot be sent when its turn comes (the agent down, the session not
/// reopened) is a `turn_error` naming its text.
pub(crate) fn prompt(inner: &Arc<Inner>, session: &str, text: String) {
    {
        let mut st = lock(&inner.state);
        if let Some(queue) = st.turns.get_mut(session) {
            queue.push_back(text);
            drop(st);
            inner.save_queues();
            return;
        }
        st.turns.insert(session.to_owned(), Default::default());
    }
    let (inner, session) = (Arc::clone(inner), session.to_owned());
    tokio::spawn(async move {
        let mut next = Some((text, false));
        while let Some((text, queued)) = next {
            run_turn(&inner, &session, text, queued).await;
            let popped = {
                let mut st = lock(&inner.state);
                let popped = st
                    .turns
                    .get_mut(&session)
                    .and_then(|q| q.pop_front().map(|text| (text, q.len() as u64)));
                if popped.is_none() {
                    st.turns.remove(&session);
                }
                popped
            };
            let Some((text, count)) = popped else { break };
            inner.save_queues();
            inner.send(Input::QueuedPrompts { session_id: session.clone(), count }).await;
            next = Some((text, true));
        }
    });
}

/// Withdraws the prompts queued behind `session`'s turn (`bb.stop`, the tab closed): the
/// count goes to 0 and they are named ([`withdrawn`]).
pub(crate) async fn withdraw_queued(inner: &Inner, session: &str, why: &str) {
    let prompts: Vec<String> = lock(&inner.state)
        .turns
        .get_mut(session)
        .map(|q| q.drain(..).collect())
        .unwrap_or_default();
    if prompts.is_empty() {
        return;
    }
    inner.save_queues();
    inner.send(Input::QueuedPrompts { session_id: session.to_owned(), count: 0 }).await;
    withdrawn(inner, session, prompts, why).await;
}

/// One `prompts_withdrawn {count, prompts, message}` event naming prompts that were queued
/// and will not be sent, so nothing typed is lost without a word.
pub(crate) async fn withdrawn(inner: &Inner, session: &str, prompts: Vec<String>, why: &str) {
    let n = prompts.len();
    // The texts are in the message too: a webview receiving the reduced view shows the
    // message, not the payload.
    let quoted: Vec<String> = prompts.iter().map(|p| format!("{p:?}")).collect();
    let message = format!(
        "{why} withdrew the {n} prompt{} queued behind the turn; send again what should still \
         run: {}",
        if n == 1 { "" } else { "s" },
        quoted.join(", ")
    );
    let payload = Map::from_iter([
        ("count".to_owned(), json!(n)),
        ("prompts".to_owned(), json!(prompts)),
        ("message".to_owned(), json!(message)),
    ]);
    inner.send(inner.event(session, "prompts_withdrawn", payload)).await;
}

/// One `session/prompt`, to its turn's end. A queued one reopens its session first (the
/// agent may have been restarted since it was queued).
async fn run_turn(inner: &Inner, session: &str, text: String, queued: bool) {
    if queued && let Err(err) = inner.ensure_open(session).await {
        let message = format!(
            "the prompt queued behind the last turn was not sent ({err}); send it again: {text}"
        );
        let payload = Map::from_iter([
            ("code".to_owned(), json!(err.code())),
            ("message".to_owned(), json!(message)),
            ("prompt".to_owned(), json!(text)),
        ]);
        // A turn that failed before it began: the host counts it started (one fewer
        // queued) and over.
        let running = |running| Input::SessionRunning { session_id: session.to_owned(), running };
        inner.send(running(true)).await;
        inner.send(inner.event(session, "turn_error", payload)).await;
        inner.send(running(false)).await;
        return;
    }
    let params = AcpSessionPromptParams {
        connection_id: inner.conn(),
        session_id: session.to_owned(),
        prompt: vec![ContentBlock::Text { text, annotations: None }],
    };
    if let Err(err) = inner.hub.session_prompt(params).await {
        tracing::info!(%err, "ACP prompt failed");
    }
}

/// Applies to a new session what was remembered for the workspace, then the `model` and
/// `permissionMode` the request named (checked against the options: an unknown value fails).
pub(crate) async fn configure_new(
    inner: &Inner,
    session: &str,
    options: &[Value],
    model: Option<&str>,
    mode: Option<&str>,
) -> Result<(), EngineError> {
    let mut changes = remembered_changes(options, &inner.config.values());
    for (key, wanted) in [("model", model), ("mode", mode)] {
        let Some(wanted) = wanted else { continue };
        let Some(id) = option_for(options, key).and_then(|o| o.get("id")).and_then(Value::as_str)
        else {
            return Err(EngineError::refused(
                "invalid_params",
                format!("the agent offers no {key} option for its sessions; leave {key} out"),
            ));
        };
        changes.retain(|(c, _)| c != id);
        changes.push((id.to_owned(), json!(wanted)));
    }
    for (config_id, value) in changes {
        inner
            .hub
            .session_set_config_option(AcpSetConfigOptionParams {
                connection_id: inner.conn(),
                session_id: session.to_owned(),
                config_id,
                value,
            })
            .await
            .map_err(engine_error)?;
    }
    Ok(())
}

fn arg<'a>(args: &'a Map<String, Value>, name: &str) -> Result<&'a Value, EngineError> {
    args.get(name).ok_or_else(|| {
        EngineError::refused("invalid_params", format!("this command needs args.{name}"))
    })
}

fn request_arg(args: &Map<String, Value>) -> Result<String, EngineError> {
    match arg(args, "requestId")? {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(EngineError::refused("invalid_params", "args.requestId must be a string")),
    }
}

/// The question prompt a `bb.command` answers, and how: `question.reply` replies,
/// `question.reject` and `question.cancel` deny.
pub(crate) fn answers_prompt(params: &CommandParams) -> Option<(String, Verdict)> {
    let verdict = match params.command.as_str() {
        "question.reply" => Verdict::Reply,
        "question.reject" | "question.cancel" => Verdict::Deny,
        _ => return None,
    };
    let request = request_arg(params.args.as_ref()?).ok()?;
    Some((request, verdict))
}

/// A question prompt answered other than by `bb.command`: declined (`bb.approvePermission`
/// `deny`, or expired), or cancelled (a stopped turn).
pub(crate) async fn answer_question(
    inner: &Inner,
    key: &(String, String),
    verdict: Verdict,
    reason: AnswerReason,
) -> Result<(), EngineError> {
    let id = lock(&inner.state).tracked.questions.get(key).cloned();
    let Some(request_id) = id else {
        // A withdrawal of a question the agent no longer holds has nothing to tell.
        if reason != AnswerReason::User {
            return Ok(());
        }
        let (session, request) = key;
        return Err(EngineError::refused(
            "permission_not_pending",
            format!("no question {request} is waiting in session {session}"),
        ));
    };
    let action = match (verdict, reason) {
        (_, AnswerReason::Cancelled) => ElicitationActionKind::Cancel,
        (Verdict::Deny, _) => ElicitationActionKind::Decline,
        _ => {
            return Err(EngineError::refused(
                "invalid_params",
                "answer a question with bb.command question.reply {requestId, answers}",
            ));
        }
    };
    inner
        .hub
        .elicitation_reply(AcpElicitationReplyParams {
            connection_id: inner.conn(),
            request_id,
            action,
            content: None,
        })
        .await
        .map_err(engine_error)
}

/// `bb.command`.
pub(crate) async fn command(
    inner: &Arc<Inner>,
    params: CommandParams,
) -> Result<CommandResult, EngineError> {
    let session = params.session_id.clone();
    let args = params.args.unwrap_or_default();
    let done =
        |output: Value| Ok(CommandResult { session_id: session.clone(), output: Some(output) });
    if params.command == "agent.restart" {
        super::life::restart_requested(inner.clone()).await;
        return match inner.unavailable() {
            Some(err) => Err(err),
            None => done(json!({"restarted": true})),
        };
    }
    if let Some(err) = inner.unavailable() {
        return Err(err);
    }
    if !inner.known(&session) {
        return Err(EngineError::SessionNotFound(session));
    }
    match params.command.as_str() {
        "session.close" => {
            let agent_closed = inner
                .hub
                .session_close_local(&AcpSessionParams {
                    connection_id: inner.conn(),
                    session_id: session.clone(),
                })
                .await
                .map_err(engine_error)?;
            {
                let mut st = lock(&inner.state);
                if let Some(s) = st.sessions.iter_mut().find(|s| s.session_id == session) {
                    s.status = Some("closed".to_owned());
                }
            }
            let payload = Map::from_iter([("agentClosed".to_owned(), json!(agent_closed))]);
            inner.send(inner.event(&session, "session_closed", payload)).await;
            inner.forget_prompts(&session).await;
            withdraw_queued(inner, &session, "closing the tab").await;
            inner.send(Input::SessionRunning { session_id: session.clone(), running: false }).await;
            done(json!({"agentClosed": agent_closed}))
        }
        "config.options" => {
            inner.ensure_open(&session).await?;
            let options = inner.hub.config_options(&inner.conn(), &session).unwrap_or_default();
            let remembered: Map<String, Value> = inner.config.values().into_iter().collect();
            done(json!({"configOptions": options, "remembered": remembered}))
        }
        "config.set" => {
            inner.ensure_open(&session).await?;
            let config_id = match arg(&args, "configId")? {
                Value::String(s) => s.clone(),
                _ => {
                    return Err(EngineError::refused(
                        "invalid_params",
                        "args.configId must be a string",
                    ));
                }
            };
            let value = arg(&args, "value")?.clone();
            let setup = inner
                .hub
                .session_set_config_option(AcpSetConfigOptionParams {
                    connection_id: inner.conn(),
                    session_id: session.clone(),
                    config_id: config_id.clone(),
                    value: value.clone(),
                })
                .await
                .map_err(engine_error)?;
            inner.config.remember(&config_id, value);
            done(json!({"configOptions": setup.config_options.unwrap_or_default()}))
        }
        "commands" => {
            let commands =
                lock(&inner.state).tracked.commands.get(&session).cloned().unwrap_or_default();
            done(json!({"commands": commands}))
        }
        "question.reply" | "question.reject" | "question.cancel" => {
            let key = request_arg(&args)?;
            let id =
                lock(&inner.state).tracked.questions.get(&(session.clone(), key.clone())).cloned();
            let Some(request_id) = id else {
                return Err(EngineError::refused(
                    "permission_not_pending",
                    format!("no question {key} is waiting in session {session}"),
                ));
            };
            let (action, content) = match params.command.as_str() {
                "question.reply" => {
                    let content = match args.get("answers") {
                        None | Some(Value::Null) => None,
                        Some(Value::Object(m)) => Some(m.clone()),
                        Some(_) => {
                            return Err(EngineError::refused(
                                "invalid_params",
                                "args.answers must be an object of the form's values by field",
                            ));
                        }
                    };
                    (ElicitationActionKind::Accept, content)
                }
                "question.reject" => (ElicitationActionKind::Decline, None),
                _ => (ElicitationActionKind::Cancel, None),
            };
            inner
                .hub
                .elicitation_reply(AcpElicitationReplyParams {
                    connection_id: inner.conn(),
                    request_id,
                    action,
                    content,
                })
                .await
                .map_err(engine_error)?;
            done(json!({"answered": key}))
        }
        other => {
            let name = other.strip_prefix('/').unwrap_or(other);
            let (name, inline) = match name.split_once(' ') {
                Some((n, rest)) => (n, Some(rest.trim().to_owned())),
                None => (name, None),
            };
            let commands =
                lock(&inner.state).tracked.commands.get(&session).cloned().unwrap_or_default();
            let offered: Vec<&str> =
                commands.iter().filter_map(|c| c.get("name").and_then(Value::as_str)).collect();
            if !offered.contains(&name) {
                return Err(EngineError::refused(
                    "unknown_command",
                    format!(
                        "unknown command {other:?}: the bridge's are {OWN:?}; the agent's for this session are {offered:?}"
                    ),
                ));
            }
            let input =
                inline.or_else(|| args.get("input").and_then(Value::as_str).map(str::to_owned));
            let text = match input.filter(|i| !i.is_empty()) {
                Some(i) => format!("/{name} {i}"),
                None => format!("/{name}"),
            };
            inner.ensure_open(&session).await?;
            prompt(inner, &session, text.clone());
            done(json!({"prompt": text}))
        }
    }
}
