//! Identity, session and command routes of the fake engine, with the engine's status codes.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::engine::EngineState;
use crate::error::{ApiError, quirk_internal_error};
use crate::runner::run_session;
use crate::session::{Decision, Session};
use crate::util::{iso_utc, random_hex};

type Body = Result<Json<Value>, axum::extract::rejection::JsonRejection>;

fn identity(state: &EngineState) -> Map<String, Value> {
    let started = state.started_at;
    let value = json!({
        "status": "ok",
        "protocol_version": "1.0",
        "version": "0.1.0",
        "engine_version": "0.1.0",
        "started_at": iso_utc(Duration::from_secs(started.as_secs())).replace(".000000Z", "Z"),
        "started_at_unix": started.as_secs_f64(),
        "pid": std::process::id(),
        "served_revision": {"repo_root": null, "commit": null, "branch": null, "dirty": null},
    });
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

pub(crate) async fn health(State(state): State<Arc<EngineState>>) -> Json<Value> {
    Json(Value::Object(identity(&state)))
}

pub(crate) async fn ready(State(state): State<Arc<EngineState>>) -> Json<Value> {
    let mut map = identity(&state);
    map.insert("ready".into(), Value::Bool(true));
    map.insert("provider_runtimes".into(), json!(["replay"]));
    Json(Value::Object(map))
}

pub(crate) async fn status(State(state): State<Arc<EngineState>>) -> Json<Value> {
    let mut map = identity(&state);
    let uptime = crate::util::wall_now().saturating_sub(state.started_at);
    map.insert("uptime_s".into(), json!(uptime.as_secs_f64()));
    map.insert("ray".into(), json!({"available": false, "initialized": false}));
    Json(Value::Object(map))
}

pub(crate) async fn models(
    Query(query): Query<std::collections::HashMap<String, String>>,
) -> Json<Value> {
    Json(json!({
        "models": [{"id": "replay/fake", "adapter": "replay", "provider": "replay", "name": "replay/fake",
                    "context_length": null, "params": null, "routing": null, "metadata": null}],
        "default_model": "replay/fake",
        "config_path": query.get("config_path"),
    }))
}

fn parse_body(body: Body) -> Result<Value, ApiError> {
    match body {
        Ok(Json(value)) => Ok(value),
        Err(rejection) => Err(ApiError::invalid_body(&rejection.body_text())),
    }
}

fn existing(state: &EngineState, id: &str) -> Result<Arc<Session>, ApiError> {
    state.session(id).ok_or_else(ApiError::session_not_found)
}

pub(crate) async fn create(
    State(state): State<Arc<EngineState>>,
    body: Body,
) -> Result<Json<Value>, ApiError> {
    let body = parse_body(body)?;
    let config_path = required_str(&body, "config_path")?;
    let task = required_str(&body, "task")?;
    let workspace = body.get("workspace").and_then(Value::as_str).map(PathBuf::from);
    let mut metadata = body.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    if let Some(mode) = body.get("permission_mode").and_then(Value::as_str) {
        metadata.insert("permission_mode".into(), Value::String(mode.to_owned()));
    }
    let (session, inputs) =
        Session::new(config_path.to_owned(), workspace, metadata, state.config.ring_capacity);
    if !task.trim().is_empty() {
        session.push_input(task.to_owned());
    }
    state.insert(Arc::clone(&session));
    tokio::spawn(run_session(Arc::clone(&state), Arc::clone(&session), inputs));
    // Like the engine: a `model` it refuses is an error after the session exists.
    if let Some(model) = body.get("model") {
        let model = model.as_str().unwrap_or_default();
        check_model(&state, model)?;
        session.set_model(model.to_owned());
    }
    Ok(Json(json!({
        "session_id": session.id,
        "status": "starting",
        "created_at": session.created_at,
        "logging_dir": null,
    })))
}

pub(crate) async fn list(State(state): State<Arc<EngineState>>) -> Json<Value> {
    Json(Value::Array(state.sessions().iter().map(|s| s.summary()).collect()))
}

pub(crate) async fn get_one(
    State(state): State<Arc<EngineState>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(existing(&state, &id)?.summary()))
}

pub(crate) async fn input(
    State(state): State<Arc<EngineState>>,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let session = existing(&state, &id)?;
    let body = parse_body(body)?;
    let content = required_str(&body, "content")?;
    if content.trim().is_empty() {
        return Ok(quirk_internal_error());
    }
    if session.is_closed() || !session.push_input(content.to_owned()) {
        return Err(ApiError::closed());
    }
    Ok((StatusCode::ACCEPTED, Json(json!({"status": "accepted"}))).into_response())
}

/// A string field of a request body; a missing one (or one of another type) is the
/// engine's 422.
fn required_str<'a>(body: &'a Value, field: &str) -> Result<&'a str, ApiError> {
    match body.get(field) {
        Some(Value::String(text)) => Ok(text),
        Some(other) => Err(ApiError::not_a_string(field, other)),
        None => Err(ApiError::missing_field(field, body)),
    }
}

/// The engine's `set_model` checks: non-empty, and allowed by the config.
fn check_model(state: &EngineState, model: &str) -> Result<(), ApiError> {
    if model.trim().is_empty() {
        return Err(ApiError::bad_request("set_model requires non-empty 'model'"));
    }
    match &state.config.allowed_models {
        Some(allowed) if !allowed.iter().any(|m| m == model) => {
            Err(ApiError::bad_request(format!("model '{model}' is not allowed by the config")))
        }
        _ => Ok(()),
    }
}

fn accepted(detail: Value) -> Result<Response, ApiError> {
    Ok((StatusCode::ACCEPTED, Json(json!({"status": "accepted", "detail": detail})))
        .into_response())
}

fn map_decision(decision: &str) -> Option<(&'static str, bool)> {
    match decision.replace('_', "-").as_str() {
        "allow-once" | "once" | "allow" => Some(("once", false)),
        "allow-always" | "always" => Some(("always", false)),
        "deny-once" | "deny-always" | "deny" | "reject" => Some(("reject", false)),
        "deny-stop" => Some(("reject", true)),
        _ => None,
    }
}

/// Holds or loses a decision while [`crate::DecisionFault`] says so (counted while held: a
/// sender gone meanwhile drops it, nothing decided).
async fn decision_fault(state: &EngineState) -> Result<(), ApiError> {
    struct Held<'a>(&'a AtomicUsize);
    impl Drop for Held<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
    state.held_decisions.fetch_add(1, Ordering::SeqCst);
    let _held = Held(&state.held_decisions);
    loop {
        match state.faults().decisions {
            crate::DecisionFault::None => return Ok(()),
            crate::DecisionFault::Hold => tokio::time::sleep(Duration::from_millis(20)).await,
            crate::DecisionFault::Lose => {
                return Err(ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "the decision was lost (injected fault)",
                ));
            }
        }
    }
}

fn request_stop(session: &Session) {
    session.publish("task_event", crate_object(json!({"kind": "stop_requested"})), None);
    session.stop.send_replace(true);
}

fn crate_object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

pub(crate) async fn command(
    State(state): State<Arc<EngineState>>,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let session = existing(&state, &id)?;
    let body = parse_body(body)?;
    let command = required_str(&body, "command")?;
    if command.trim().is_empty() {
        return Ok(quirk_internal_error());
    }
    if session.is_closed() {
        return Err(ApiError::closed());
    }
    let payload = body.get("payload").and_then(Value::as_object).cloned().unwrap_or_default();
    let text = |key: &str| payload.get(key).and_then(Value::as_str).map(str::to_owned);
    match command {
        "stop" => {
            request_stop(&session);
            accepted(json!({"status": "ok", "stopping": true}))
        }
        "permission_decision" | "respond_permission" | "permission_response" => {
            let request_id =
                text("request_id").filter(|r| !r.trim().is_empty()).ok_or_else(|| {
                    ApiError::bad_request(format!("{command} requires non-empty 'request_id'"))
                })?;
            let raw = text("decision").or_else(|| text("response")).unwrap_or_default();
            let (response, stop) = map_decision(&raw)
                .ok_or_else(|| ApiError::bad_request(format!("unsupported decision: {raw}")))?;
            decision_fault(&state).await?;
            let waiter = session.take_permission(&request_id).ok_or_else(|| {
                ApiError::new(StatusCode::CONFLICT, "conflict", "no permission request is active")
            })?;
            session.publish(
                "permission_response",
                crate_object(
                    json!({"request_id": request_id, "response": response, "decision": response}),
                ),
                None,
            );
            waiter.resolve(Decision { response });
            if stop {
                request_stop(&session);
            }
            accepted(json!({"status": "ok", "delivered": {"status": "ok", "request_id": request_id,
                "delivered": {"permission_id": request_id, "response": response}}}))
        }
        "set_mode" => {
            let mode =
                text("mode").ok_or_else(|| ApiError::bad_request("set_mode requires 'mode'"))?;
            session.set_mode(mode.clone());
            accepted(json!({"status": "ok", "mode": mode}))
        }
        "set_model" => {
            let model = text("model").unwrap_or_default();
            check_model(&state, &model)?;
            session.set_model(model.clone());
            accepted(json!({"status": "ok", "model": model}))
        }
        "set_skills" => {
            let selection =
                json!({"mode": "blocklist", "allowlist": [], "blocklist": [], "profile": null});
            session.publish(
                "skills_selection",
                crate_object(json!({"selection": selection})),
                None,
            );
            session.publish(
                "skills_catalog",
                crate_object(json!({"catalog": {"catalog_version": "skills-v1",
                "selection": selection, "skills": [], "prompt_skills": [], "graph_skills": []},
                "selection": selection, "sources": {}})),
                None,
            );
            accepted(json!({"status": "ok", "selection": selection}))
        }
        "list_checkpoints" => {
            session.publish("checkpoint_list", crate_object(checkpoints()), None);
            accepted(json!({"status": "ok", "count": 1}))
        }
        "restore_checkpoint" => {
            let checkpoint_id = text("checkpoint_id").ok_or_else(|| {
                ApiError::bad_request("restore_checkpoint requires 'checkpoint_id'")
            })?;
            let mode = text("mode").unwrap_or_else(|| "code".to_owned());
            session.publish(
                "checkpoint_restored",
                crate_object(json!({"checkpoint_id": checkpoint_id, "mode": mode, "prune": false})),
                None,
            );
            session.publish("checkpoint_list", crate_object(checkpoints()), None);
            accepted(json!({"status": "ok", "checkpoint_id": checkpoint_id, "mode": mode}))
        }
        "session_child_next" | "session_child_previous" | "session_parent" => {
            accepted(json!({"status": "ok", "session_id": session.id}))
        }
        "run_tests" if session.metadata.get("debug_permissions") == Some(&Value::Bool(true)) => {
            let request_id = format!("debug-perm-{}", random_hex(8));
            session.add_detached_permission(&request_id);
            session.publish("permission_request", crate_object(json!({"request_id": request_id, "tool": "bash",
                "kind": "run", "rewindable": true, "summary": "Tool requests permission to run bash (unit).",
                "default_scope": "project", "metadata": {"function": "run_shell", "command": "pwd", "kind": "run"}})), None);
            accepted(json!({"status": "ok", "debug": true, "request_id": request_id}))
        }
        "run_tests" | "apply_diff" => Err(ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "internal",
            format!("{command} not yet implemented"),
        )),
        other => Err(ApiError::bad_request(format!("Unsupported command: {other}"))),
    }
}

fn checkpoints() -> Value {
    json!({"checkpoints": [{"checkpoint_id": "ckpt-1", "created_at": 0, "preview": "Session start",
        "tracked_files": 0, "additions": 0, "deletions": 0, "has_untracked_changes": false}]})
}

pub(crate) async fn delete(
    State(state): State<Arc<EngineState>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let session = existing(&state, &id)?;
    session.close_inputs();
    session.deleting.send_replace(true);
    session.stop.send_replace(true);
    session.wait_finished().await;
    state.remove(&id);
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub(crate) async fn skills(
    State(state): State<Arc<EngineState>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    existing(&state, &id)?;
    let selection = json!({"mode": "blocklist", "allowlist": [], "blocklist": [], "profile": null});
    Ok(Json(
        json!({"catalog": {"catalog_version": "skills-v1", "selection": selection, "skills": [],
        "prompt_skills": [], "graph_skills": []}, "selection": selection, "sources": {}}),
    ))
}

pub(crate) async fn ctrees(
    State(state): State<Arc<EngineState>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    existing(&state, &id)?;
    Ok(Json(
        json!({"snapshot": null, "compiler": null, "collapse": null, "runner": null, "last_node": null}),
    ))
}

pub(crate) async fn records(
    State(state): State<Arc<EngineState>>,
    Path(id): Path<String>,
    Query(query): Query<std::collections::HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    existing(&state, &id)?;
    let number =
        |key: &str, default: u64| query.get(key).and_then(|v| v.parse().ok()).unwrap_or(default);
    Ok(Json(
        json!({"session_id": id, "records": [], "offset": number("offset", 0), "limit": number("limit", 100), "total": 0}),
    ))
}
