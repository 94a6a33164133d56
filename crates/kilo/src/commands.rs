//! `bb.command` on Kilo. The bridge's own commands:
//!
//! | command | args | does |
//! | --- | --- | --- |
//! | `fork` | `messageId?` | `POST /session/:id/fork`; the new session is listed and its summary returned |
//! | `revert` | `messageId` | `POST /session/:id/revert` |
//! | `unrevert` | | `POST /session/:id/unrevert` |
//! | `summarize` | `model?` (`provider/model`) | `POST /session/:id/summarize` (default: the session's model, else the engine's default) |
//! | `todo` | | `GET /session/:id/todo` |
//! | `mcp.list` | | `GET /mcp` |
//! | `mcp.add` | `name`, `config` | `POST /mcp` (the engine owns MCP) |
//! | `question.reply` | `requestId`, `answers` (`[[label…]…]`) | `POST /question/:id/reply`, once (the host decides it as an answer to the question) |
//! | `question.reject` | `requestId` | `POST /question/:id/reject`, once (likewise) |
//! | `retry` | | rebuilds a session whose rebuild failed, else sends the last prompt again |
//! | `commands` | | the engine's slash commands (`GET /command`) |
//!
//! `engine.restart`, `metrics` and `body.get` belong to the runtime. Any other name is one
//! of the engine's slash commands (`GET /command`) run with `args.arguments`
//! (`POST /session/:id/command`), else `unknown_command` listing every name that exists.

use crate::client::KiloClient;
use bb_protocol::v1::{CommandParams, CommandResult, SessionSummary};
use serde_json::{Map, Value, json};

use crate::errors::{checked_session_id, map};
use crate::{KiloAdapter, answer, invalid_params, summary};
use bb_host::{Input, Verdict};
use bb_service::engine::EngineError;

/// The bridge's own commands on Kilo.
pub const COMMANDS: [&str; 11] = [
    "fork",
    "revert",
    "unrevert",
    "summarize",
    "todo",
    "mcp.list",
    "mcp.add",
    "question.reply",
    "question.reject",
    "retry",
    "commands",
];

/// Commands the runtime implements for every engine (listed in `unknown_command`).
pub const RUNTIME_COMMANDS: [&str; 3] = ["engine.restart", "metrics", "body.get"];

fn arg<'a>(args: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    args.get(name).and_then(Value::as_str)
}

fn required<'a>(
    args: &'a Map<String, Value>,
    name: &str,
    command: &str,
) -> Result<&'a str, EngineError> {
    arg(args, name).ok_or_else(|| invalid_params(format!("{command} needs args.{name} (a string)")))
}

fn result(session_id: &str, output: Value) -> CommandResult {
    CommandResult { session_id: session_id.to_owned(), output: Some(output) }
}

pub(super) async fn run(
    adapter: &KiloAdapter,
    client: &KiloClient,
    params: CommandParams,
) -> Result<CommandResult, EngineError> {
    let args = params.args.clone().unwrap_or_default();
    let command = params.command.as_str();
    // Commands of the engine as a whole still name a session (v1 requires it).
    let id = params.session_id.as_str();
    match command {
        "mcp.list" => return Ok(result(id, client.mcp().await.map_err(|e| map(e, None))?)),
        "mcp.add" => {
            let name = required(&args, "name", command)?;
            let config = args
                .get("config")
                .filter(|c| c.is_object())
                .cloned()
                .ok_or_else(|| invalid_params("mcp.add needs args.config (an object)"))?;
            let out = client.mcp_add(name, config).await.map_err(|e| map(e, None))?;
            return Ok(result(id, out));
        }
        "commands" => {
            let listed = client.commands().await.map_err(|e| map(e, None))?;
            return Ok(result(id, Value::Array(listed)));
        }
        _ => {}
    }
    let id = checked_session_id(id)?;
    let out = match command {
        "fork" => {
            let session =
                client.fork(id, arg(&args, "messageId")).await.map_err(|e| map(e, Some(id)))?;
            adapter.track(&session.id);
            let listed: SessionSummary = summary(&session);
            let _ = adapter.updates.send(Input::SessionUpserted(Box::new(listed.clone()))).await;
            serde_json::to_value(listed).unwrap_or_default()
        }
        "revert" => {
            let message = required(&args, "messageId", command)?;
            let session = client.revert(id, message).await.map_err(|e| map(e, Some(id)))?;
            json!({ "sessionId": session.id, "revert": session.extra.get("revert") })
        }
        "unrevert" => {
            let session = client.unrevert(id).await.map_err(|e| map(e, Some(id)))?;
            json!({ "sessionId": session.id, "revert": session.extra.get("revert") })
        }
        "summarize" => {
            let (p, m) = match arg(&args, "model") {
                Some(model) => model
                    .split_once('/')
                    .map(|(p, m)| (p.to_owned(), m.to_owned()))
                    .ok_or_else(|| invalid_params("args.model is provider/model"))?,
                None => match adapter.shared.with(id, |f| f.model.clone()) {
                    Some(model) => model,
                    None => default_model(client).await?,
                },
            };
            json!(client.summarize(id, &p, &m).await.map_err(|e| map(e, Some(id)))?)
        }
        "todo" => client.todo(id).await.map_err(|e| map(e, Some(id)))?,
        "question.reply" => {
            let request = required(&args, "requestId", command)?.to_owned();
            let answers: Vec<Vec<String>> = args
                .get("answers")
                .and_then(|a| serde_json::from_value(a.clone()).ok())
                .ok_or_else(|| invalid_params("question.reply needs args.answers: [[label, …], …] (one list per question)"))?;
            answer::bounded(adapter, &request, client.reply_question(&request, answers)).await?;
            json!(true)
        }
        "question.reject" => {
            let request = required(&args, "requestId", command)?.to_owned();
            answer::bounded(adapter, &request, client.reject_question(&request)).await?;
            json!(true)
        }
        "retry" => {
            if adapter.shared.with(id, |f| f.rebuild_failed) {
                adapter.rehydrate(id)?;
                json!({ "retried": "rebuild" })
            } else if answer::resend(adapter, client, id).await? {
                json!({ "retried": "prompt" })
            } else {
                return Err(invalid_params(
                    "nothing to retry: the session has no failed rebuild and no prompt sent through this bridge",
                ));
            }
        }
        other => return slash(client, id, other, &args).await.map(|out| result(id, out)),
    };
    Ok(result(id, out))
}

/// The engine's default model (`GET /config/providers` `default`).
async fn default_model(client: &KiloClient) -> Result<(String, String), EngineError> {
    let listed = client.providers().await.map_err(|e| map(e, None))?;
    listed["default"]
        .as_object()
        .and_then(|d| d.iter().next())
        .and_then(|(p, m)| m.as_str().map(|m| (p.clone(), m.to_owned())))
        .ok_or_else(|| invalid_params("the engine has no default model: give args.model"))
}

/// One of the engine's slash commands, or `unknown_command`.
async fn slash(
    client: &KiloClient,
    id: &str,
    command: &str,
    args: &Map<String, Value>,
) -> Result<Value, EngineError> {
    let listed = client.commands().await.map_err(|e| map(e, None))?;
    let names: Vec<&str> = listed.iter().filter_map(|c| c["name"].as_str()).collect();
    let name = command.trim_start_matches('/');
    if names.contains(&name) {
        let arguments = arg(args, "arguments").unwrap_or_default();
        return client.run_command(id, name, arguments).await.map_err(|e| map(e, Some(id)));
    }
    let mut all: Vec<String> =
        COMMANDS.iter().chain(RUNTIME_COMMANDS.iter()).map(|s| (*s).to_owned()).collect();
    all.extend(names.iter().map(|n| format!("/{n}")));
    Err(EngineError::refused(
        "unknown_command",
        format!("unknown command {command:?}; commands: {}", all.join(", ")),
    ))
}

/// The question a `question.reply` / `question.reject` answers, for the host to decide.
pub(crate) fn answers_prompt(params: &CommandParams) -> Option<(String, Verdict)> {
    let verdict = match params.command.as_str() {
        "question.reply" => Verdict::Reply,
        "question.reject" => Verdict::Deny,
        _ => return None,
    };
    let request = params.args.as_ref()?.get("requestId")?.as_str()?;
    Some((request.to_owned(), verdict))
}
