//! The Kilo calls that act on a session: create (model, permission mode, first prompt),
//! prompts (attachments, the queue bound), stop, the answers the host allowed (permissions,
//! a question's rejection), and diffs.

use std::sync::Arc;

use crate::client::{KiloClient, KiloError, PermissionReply, Session};
use bb_engine_client::transport::TransportError;
use bb_host::{EngineEvents, Input, PromptKind, Verdict};
use bb_protocol::v1::{
    CreateSessionParams, EngineEvent, OpenDiffParams, SendMessageParams, SendMessageResult,
    SessionAck, SessionParams,
};
use serde_json::{Map, Value, json};

use crate::errors::{checked_session_id, map};
use crate::{KiloAdapter, files, invalid_params};
use bb_service::engine::{EngineError, PromptAnswer};

/// The supported `permissionMode` values.
pub(crate) const PERMISSION_MODES: [&str; 4] = ["default", "ask", "readOnly", "acceptEdits"];

/// Kilo permission rules of a mode (`None`: the engine's configuration). `acceptEdits` needs
/// a trusted workspace: the service checks it before the call.
fn rules(mode: &str) -> Result<Option<Value>, EngineError> {
    let rule = |permission: &str, action: &str| json!({ "permission": permission, "pattern": "*", "action": action });
    match mode {
        "default" => Ok(None),
        "ask" => Ok(Some(json!([rule("edit", "ask"), rule("bash", "ask")]))),
        "readOnly" => Ok(Some(json!([rule("edit", "deny"), rule("bash", "deny")]))),
        "acceptEdits" => Ok(Some(json!([rule("edit", "allow"), rule("bash", "ask")]))),
        other => Err(invalid_params(format!(
            "permissionMode {other:?} is not supported; use one of {}",
            PERMISSION_MODES.join(", ")
        ))),
    }
}

/// `provider/model`, checked against the engine's providers.
async fn checked_model(client: &KiloClient, model: &str) -> Result<(String, String), EngineError> {
    let listed = client.providers().await.map_err(|e| map(e, None))?;
    let mut known = Vec::new();
    for provider in listed["providers"].as_array().into_iter().flatten() {
        let pid = provider["id"].as_str().unwrap_or_default();
        for mid in provider["models"].as_object().into_iter().flat_map(|m| m.keys()) {
            known.push(format!("{pid}/{mid}"));
        }
    }
    if let Some((p, m)) = model.split_once('/')
        && known.iter().any(|k| k == model)
    {
        return Ok((p.to_owned(), m.to_owned()));
    }
    known.truncate(20);
    Err(invalid_params(format!(
        "model {model:?} is not one of the engine's models (provider/model): {}",
        known.join(", ")
    )))
}

pub(super) async fn create_session(
    adapter: &KiloAdapter,
    client: &KiloClient,
    params: CreateSessionParams,
) -> Result<Session, EngineError> {
    if params.config_path.is_some() {
        return Err(invalid_params("configPath has no counterpart in the Kilo engine"));
    }
    let permission = rules(params.permission_mode.as_deref().unwrap_or("default"))?;
    let model = match &params.model {
        Some(m) => Some(checked_model(client, m).await?),
        None => None,
    };
    let mut body = json!({});
    if let Some(task) = &params.task {
        body["title"] = json!(task.chars().take(100).collect::<String>());
    }
    if let Some(rules) = permission {
        body["permission"] = rules;
    }
    if let Some((p, m)) = &model {
        body["model"] = json!({ "id": m, "providerID": p });
    }
    let session = client.create_session_with(body).await.map_err(|e| map(e, None))?;
    adapter.track(&session.id);
    adapter.shared.with(&session.id, |f| f.model = model);
    if let Some(task) = params.task {
        let parts = vec![json!({ "type": "text", "text": task })];
        prompt(adapter, client, &session.id, parts).await?;
    }
    Ok(session)
}

/// Sends one prompt (the host keeps the bound on prompts queued behind a running turn).
async fn prompt(
    adapter: &KiloAdapter,
    client: &KiloClient,
    id: &str,
    parts: Vec<Value>,
) -> Result<(), EngineError> {
    let model = adapter.shared.with(id, |f| f.model.clone());
    let model_ref = model.as_ref().map(|(p, m)| (p.as_str(), m.as_str()));
    client.prompt_parts(id, parts.clone(), model_ref).await.map_err(|e| map(e, Some(id)))?;
    adapter.shared.with(id, |f| f.last_prompt = Some(parts));
    adapter.track(id);
    Ok(())
}

pub(super) async fn send_message(
    adapter: &KiloAdapter,
    client: &KiloClient,
    params: SendMessageParams,
) -> Result<SendMessageResult, EngineError> {
    let id = checked_session_id(&params.session_id)?;
    let mut parts = vec![json!({ "type": "text", "text": params.text })];
    let attachments = params.attachment_ids.unwrap_or_default();
    if !attachments.is_empty() {
        let root = adapter.root(id).await?;
        for attachment in attachments {
            parts.push(files::attachment(adapter, root.clone(), attachment).await?);
        }
    }
    prompt(adapter, client, id, parts).await?;
    Ok(SendMessageResult { session_id: params.session_id, message_id: None })
}

/// Sends the last prompt again (Retry after a failed turn).
pub(super) async fn resend(
    adapter: &KiloAdapter,
    client: &KiloClient,
    id: &str,
) -> Result<bool, EngineError> {
    let Some(parts) = adapter.shared.with(id, |f| f.last_prompt.clone()) else {
        return Ok(false);
    };
    prompt(adapter, client, id, parts).await?;
    Ok(true)
}

pub(super) async fn stop(
    client: &KiloClient,
    params: SessionParams,
) -> Result<SessionAck, EngineError> {
    let id = checked_session_id(&params.session_id)?;
    client.get_session(id).await.map_err(|e| map(e, Some(id)))?;
    client.abort(id).await.map_err(|e| map(e, Some(id)))?;
    // The host withdraws the turn's open prompts next: each pending one comes back here as
    // a denial to send (`answer`).
    Ok(SessionAck { session_id: params.session_id })
}

/// One answer call, bounded by the engine deadline; a 404 (the engine no longer knows the
/// request) is `permission_not_pending`.
pub(super) async fn bounded(
    adapter: &KiloAdapter,
    request: &str,
    call: impl Future<Output = Result<bool, KiloError>>,
) -> Result<(), EngineError> {
    match tokio::time::timeout(adapter.settings.engine_timeout, call).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(KiloError::Transport(TransportError::Http { status: 404, .. }))) => {
            Err(EngineError::refused(
                "permission_not_pending",
                format!("the engine no longer knows request {request} (stale)"),
            ))
        }
        Ok(Err(err)) => Err(map(err, None)),
        Err(_) => Err(EngineError::Timeout(adapter.settings.engine_timeout)),
    }
}

/// Carries an answer the host allowed to the engine: a permission's `once` / `always` /
/// `reject`, a question's rejection (its answers go with `bb.command question.reply`).
pub(super) async fn answer(
    adapter: &KiloAdapter,
    client: &KiloClient,
    answer: PromptAnswer,
) -> Result<(), EngineError> {
    let request = answer.prompt.request_id.as_str();
    if answer.prompt.kind == PromptKind::Question {
        if answer.verdict != Verdict::Deny {
            return Err(invalid_params(
                "a question is answered with bb.command question.reply {requestId, answers}",
            ));
        }
        return bounded(adapter, request, client.reject_question(request)).await;
    }
    let reply = match (answer.verdict, answer.remember) {
        (Verdict::Deny, _) => PermissionReply::Reject,
        (_, true) => PermissionReply::Always,
        (_, false) => PermissionReply::Once,
    };
    bounded(adapter, request, client.reply_permission(request, reply, None)).await
}

pub(super) async fn open_diff(
    adapter: &KiloAdapter,
    client: &KiloClient,
    params: OpenDiffParams,
) -> Result<SessionAck, EngineError> {
    let id = checked_session_id(&params.session_id)?;
    let diffs = client.diff(id).await.map_err(|e| map(e, Some(id)))?;
    let wanted = params.file_path.trim_start_matches("./");
    let same = |file: &str| {
        !file.is_empty()
            && (file == wanted
                || file.ends_with(&format!("/{wanted}"))
                || wanted.ends_with(&format!("/{file}")))
    };
    let mut payload = Map::new();
    payload.insert("sessionID".into(), json!(id));
    if let Some(diff) = diffs.into_iter().find(|d| same(&d.file)) {
        payload.insert("file".into(), json!(diff.file));
        payload.insert("patch".into(), json!(diff.patch));
        payload.insert("additions".into(), json!(diff.additions));
        payload.insert("deletions".into(), json!(diff.deletions));
        payload.insert("status".into(), json!(diff.status));
    } else if let Some(patch) = adapter
        .shared
        .with(id, |f| f.seen_diffs.iter().find(|(file, _)| same(file)).map(|(_, d)| d.clone()))
    {
        // The engine keeps no diff (snapshots off): the one its tool events showed.
        payload.insert("file".into(), json!(wanted));
        payload.insert("patch".into(), json!(patch));
        payload.insert("source".into(), json!("tool"));
    } else {
        return Err(EngineError::refused(
            "diff_not_found",
            format!("the session has no change to {}", params.file_path),
        ));
    }
    let n = adapter.shared.with(id, |f| {
        f.diffs_sent += 1;
        f.diffs_sent
    });
    let event = EngineEvent {
        id: format!("bb-diff-{n}").into(),
        event_type: "bridge.diff".into(),
        turn: None,
        ts: None,
        payload: payload.into(),
    };
    let events = EngineEvents::one(crate::events::classed(event));
    let _ = adapter.updates.send(Input::Events { session_id: Arc::from(id), events }).await;
    Ok(SessionAck { session_id: params.session_id })
}
