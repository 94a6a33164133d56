//! A session's run loop: startup events, then one turn per queued input, each turn playing a
//! script in the upstream replay format (with `delay_ms`).
//!
//! Like the engine, a turn fed by input `replay:<path>` is a plain replay: `stop` does not
//! interrupt it (only DELETE does) and its `permission_request` events do not block. A turn
//! played from the configured scripts stands for an agent turn: `stop` ends it at the next
//! event boundary and a `permission_request` waits for its decision.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::config::ScriptSource;
use crate::engine::EngineState;
use crate::script::{Script, is_known_type};
use crate::session::{Decision, Session, Status};

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// How a turn ended.
#[derive(Debug, PartialEq)]
enum TurnEnd {
    Finished,
    Stopped,
    Failed(String),
}

/// Runs a session until its input queue closes or a turn fails, then ends its log.
pub(crate) async fn run_session(
    engine: Arc<EngineState>,
    session: Arc<Session>,
    mut inputs: mpsc::UnboundedReceiver<String>,
) {
    let selection = json!({"mode": "blocklist", "allowlist": [], "blocklist": [], "profile": null});
    session.publish(
        "skills_catalog",
        object(json!({
            "catalog": {"catalog_version": "skills-v1", "selection": selection, "skills": [],
                        "prompt_skills": [], "graph_skills": []},
            "selection": selection,
            "sources": {"config_path": session.config_path,
                        "workspace": session.workspace.as_ref()
                            .unwrap_or(&engine.config.default_workspace).display().to_string()},
        })),
        None,
    );
    session.publish("skills_selection", object(json!({"selection": selection})), None);
    session.set_status(Status::Running);

    while let Some(content) = inputs.recv().await {
        match run_turn(&engine, &session, &content).await {
            TurnEnd::Finished | TurnEnd::Stopped => {}
            TurnEnd::Failed(message) => {
                session.publish("error", object(json!({"message": message})), None);
                session.set_status(Status::Failed);
                break;
            }
        }
        if session.oneshot {
            session.set_status(Status::Completed);
            break;
        }
    }
    session.close_inputs();
    session.end_log();
}

/// Loads the script for one input: `replay:<path>`, or the engine's next configured script.
fn load_script(engine: &EngineState, session: &Session, content: &str) -> Result<Script, String> {
    let source = match content.strip_prefix("replay:") {
        Some(path) => Some(ScriptSource::File(std::path::PathBuf::from(path.trim()))),
        None => {
            session.publish("user_message", object(json!({"text": content})), None);
            engine.next_script()
        }
    };
    let text = match source {
        None => return Ok(echo_script(content)),
        Some(ScriptSource::Inline(text)) => text,
        Some(ScriptSource::File(path)) => std::fs::read_to_string(&path)
            .map_err(|e| format!("replay file {}: {e}", path.display()))?,
    };
    Script::parse(&text).map_err(|e| e.to_string())
}

/// The script used when the engine has none configured: one assistant reply.
fn echo_script(content: &str) -> Script {
    let text = format!(
        "{{\"type\":\"assistant_message\",\"payload\":{{\"text\":{}}}}}",
        json!(format!("You said: {content}"))
    );
    Script::parse(&text).unwrap_or_default()
}

/// Waits `delay`, returning early (true) when the turn is stopped. A replay-fed turn
/// (`replay:<path>`) is not interrupted by `stop`, only by DELETE, like the engine's.
async fn delay_or_stop(session: &Session, delay: Duration, replay_fed: bool) -> bool {
    let mut stop = if replay_fed { session.deleting.subscribe() } else { session.stop.subscribe() };
    if *stop.borrow_and_update() {
        return true;
    }
    tokio::select! {
        () = tokio::time::sleep(delay) => *stop.borrow(),
        _ = stop.changed() => true,
    }
}

async fn run_turn(engine: &EngineState, session: &Session, content: &str) -> TurnEnd {
    session.stop.send_replace(false);
    let script = match load_script(engine, session, content) {
        Ok(script) => script,
        Err(message) => return TurnEnd::Failed(message),
    };
    let replay_fed = content.starts_with("replay:");
    let mut published = 0u64;
    // The answer to the turn's last permission request (`when` lines follow it).
    let mut answer: Option<&'static str> = None;
    for line in &script.lines {
        if line.when.is_some_and(|w| !w.plays(answer)) {
            continue;
        }
        if delay_or_stop(session, Duration::from_millis(line.delay_ms), replay_fed).await {
            return stop_turn(session, published);
        }
        if !is_known_type(&line.kind) {
            return TurnEnd::Failed(format!("'{}' is not a valid EventType", line.kind));
        }
        session.publish(&line.kind, line.payload.clone(), line.turn);
        published += 1;
        // A replayed permission request does not block (and a decision for it gets 409 "no
        // permission request is active"); an agent turn's does.
        if line.kind == "permission_request" && !replay_fed {
            match await_permission(engine, session, &line.payload).await {
                Some(decision) => answer = Some(decision.response),
                None => return stop_turn(session, published),
            }
        }
    }
    if !script.has("completion") {
        published += 1;
        session.publish(
            "completion",
            object(json!({"summary": {"completed": true, "reason": "replay"}, "mode": null})),
            None,
        );
    }
    if !script.has("run_finished") {
        session.publish(
            "run_finished",
            object(json!({"eventCount": published, "completed": true, "reason": "replay", "logging_dir": null})),
            None,
        );
    }
    TurnEnd::Finished
}

/// Blocks the turn until the request is answered; the answer, or `None` when the request
/// was abandoned (DELETE while the engine is set not to wait).
async fn await_permission(
    engine: &EngineState,
    session: &Session,
    payload: &Map<String, Value>,
) -> Option<Decision> {
    let request_id = payload
        .get("request_id")
        .or_else(|| payload.get("id"))
        .and_then(Value::as_str)
        .map_or_else(|| format!("permission_{}", session.last_seq()), str::to_owned);
    let decision = session.add_permission(&request_id);
    let mut deleting = session.deleting.subscribe();
    tokio::select! {
        answer = decision => answer.ok(),
        () = async {
            loop {
                if *deleting.borrow_and_update() && !engine.faults().delete_waits_for_permission {
                    return;
                }
                if deleting.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        } => {
            session.take_permission(&request_id);
            None
        }
    }
}

fn stop_turn(session: &Session, published: u64) -> TurnEnd {
    session.publish(
        "completion",
        object(json!({"summary": {"completed": false, "reason": "stopped_by_user", "method": "interrupt", "exit_kind": "stopped"}, "mode": null})),
        None,
    );
    session.publish(
        "run_finished",
        object(json!({"eventCount": published, "completed": false, "reason": "stopped_by_user", "logging_dir": null})),
        None,
    );
    TurnEnd::Stopped
}
