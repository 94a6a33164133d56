//! Every captured REST exchange of the real engine (`steps.json`) answered through the
//! in-memory transport and read by the client's typed call for that route: 2xx bodies decode,
//! error answers become the matching typed error.

use std::sync::Arc;

use bb_breadboard::client::{BbError, BreadboardClient, CreateSession, ReadMode, SnippetOptions};
use bb_engine_client::fake::FakeTransport;
use bb_engine_client::transport::{EngineResponse, HttpMethod, TransportError};
use serde_json::Value;

use crate::support::fixtures;

fn steps() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut stack = vec![fixtures()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "steps.json") {
                let doc: Value =
                    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
                for step in doc["steps"].as_array().unwrap() {
                    if step.get("method").is_some() {
                        out.push((path.display().to_string(), step.clone()));
                    }
                }
            }
        }
    }
    out
}

fn answer(step: &Value) -> Result<EngineResponse, TransportError> {
    let status = u16::try_from(step["status"].as_u64().unwrap()).unwrap();
    let body = match &step["body"] {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    match status {
        200..=299 => Ok(EngineResponse { status, headers: Vec::new(), body: body.into() }),
        401 | 403 => Err(TransportError::Auth { status }),
        _ => Err(TransportError::Http { status, body }),
    }
}

fn query(path: &str, key: &str) -> String {
    let Some((_, q)) = path.split_once('?') else { return String::new() };
    q.split('&').find_map(|kv| kv.strip_prefix(&format!("{key}="))).unwrap_or_default().to_owned()
}

/// Calls the client method of the step's route; `None` for routes the sidebar does not use.
async fn call(client: &BreadboardClient, step: &Value) -> Option<Result<(), BbError>> {
    let method = step["method"].as_str().unwrap();
    let full = step["path"].as_str().unwrap();
    let path = full.split('?').next().unwrap();
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let body = &step["request_body"];
    let text = |k: &str| body[k].as_str().unwrap_or_default().to_owned();
    Some(match (method, parts.as_slice()) {
        ("GET", ["health"]) => client.health().await.map(drop),
        ("POST", ["v1", "sessions"]) => {
            let request = CreateSession {
                config_path: text("config_path"),
                task: text("task"),
                ..CreateSession::default()
            };
            client.create_session(&request).await.map(drop)
        }
        ("GET", ["v1", "sessions"]) => client.list_sessions().await.map(drop),
        ("GET", ["v1", "sessions", id]) => client.get_session(id).await.map(drop),
        ("DELETE", ["v1", "sessions", id]) => {
            client.delete_session(id, std::time::Duration::from_secs(5)).await
        }
        ("POST", ["v1", "sessions", id, "input"]) => {
            client.send_input(id, &text("content"), &[]).await
        }
        ("POST", ["v1", "sessions", id, "command"]) => {
            let payload = body["payload"].as_object().cloned();
            client.command(id, &text("command"), payload).await.map(drop)
        }
        ("GET", ["v1", "sessions", id, "files"]) => {
            client.list_files(id, &query(full, "path")).await.map(drop)
        }
        ("GET", ["v1", "sessions", id, "files", "content"]) => client
            .read_file(id, &query(full, "path"), ReadMode::Cat, SnippetOptions::default())
            .await
            .map(drop),
        ("GET", ["v1", "sessions", id, "download"]) => {
            client.download(id, &query(full, "artifact")).await.map(drop)
        }
        _ => return None,
    })
}

#[tokio::test]
async fn every_captured_rest_answer_is_read_by_its_typed_call() {
    let mut checked = 0;
    for (file, step) in steps() {
        let fake = FakeTransport::new();
        let method = match step["method"].as_str().unwrap() {
            "GET" => HttpMethod::Get,
            "POST" => HttpMethod::Post,
            "DELETE" => HttpMethod::Delete,
            other => panic!("{other}"),
        };
        let path = step["path"].as_str().unwrap().split('?').next().unwrap().to_owned();
        fake.route(method, &path, answer(&step));
        let client = BreadboardClient::new(Arc::new(fake));
        let Some(result) = call(&client, &step).await else { continue };
        let status = step["status"].as_u64().unwrap();
        let what = format!("{file}: {} {} → {status}", step["method"], step["path"]);
        let blank = step["request_body"]["content"].as_str().is_some_and(|c| c.trim().is_empty())
            || step["request_body"]["command"].as_str().is_some_and(|c| c.trim().is_empty());
        match (status, result) {
            (200..=299, Ok(())) => {}
            // The engine's quirk (500 text/plain) is never reached: the client refuses blanks.
            (500, Err(BbError::Refused { .. })) if blank => {}
            (404, Err(BbError::NotFound { .. })) => {}
            (409, Err(BbError::Conflict { .. } | BbError::ResumeWindowExceeded { .. })) => {}
            (400 | 422, Err(BbError::InvalidRequest { .. })) => {}
            (501, Err(BbError::NotImplemented { .. })) => {}
            (_, other) => panic!("{what}: {other:?}"),
        }
        checked += 1;
    }
    assert!(checked >= 90, "only {checked} exchanges checked");
}
