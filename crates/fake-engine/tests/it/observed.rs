//! README §11.1: the HTTP answers of the real engine where a fake is easily wrong, row by row
//! (status, content type, body), plus the points of §11 that are not a single answer:
//! a `from_id` left empty, files of a session created without a workspace, and a refused
//! `model` at create answered after the session exists.

use serde_json::{Value, json};

use super::support::{BOUND, create_with, read_events, start};
use bb_fake_engine::EngineConfig;

/// One request and what the real engine answered.
struct Row {
    method: &'static str,
    /// `{s}`: a session with a workspace; `{bare}`: one created without.
    path: &'static str,
    body: Option<Value>,
    status: u16,
    /// Content type prefix.
    kind: &'static str,
    /// The whole JSON body, or (for text) the whole text; `None`: not compared.
    expect: Option<Value>,
}

fn rows() -> Vec<Row> {
    let envelope =
        |error: &str, detail: &str| json!({"error": error, "detail": detail, "path": null});
    vec![
        Row {
            method: "POST",
            path: "/v1/sessions",
            body: Some(json!({"config_path": 1, "task": ""})),
            status: 422,
            kind: "application/json",
            expect: Some(json!({"error": "invalid_request", "path": null, "detail": {"errors": [
                {"type": "string_type", "loc": ["body", "config_path"],
                 "msg": "Input should be a valid string", "input": 1}]}})),
        },
        Row {
            method: "POST",
            path: "/v1/sessions/{s}/input",
            body: Some(json!({"content": "   "})),
            status: 500,
            kind: "text/plain",
            expect: Some(json!("Internal Server Error")),
        },
        Row {
            method: "POST",
            path: "/v1/sessions/{s}/command",
            body: Some(json!({"command": "  "})),
            status: 500,
            kind: "text/plain",
            expect: Some(json!("Internal Server Error")),
        },
        Row {
            method: "POST",
            path: "/v1/sessions/{s}/command",
            body: Some(json!({"command": "set_model"})),
            status: 400,
            kind: "application/json",
            expect: Some(envelope("invalid_request", "set_model requires non-empty 'model'")),
        },
        Row {
            method: "POST",
            path: "/v1/sessions/{s}/command",
            body: Some(json!({"command": "apply_diff"})),
            status: 501,
            kind: "application/json",
            expect: Some(envelope("internal", "apply_diff not yet implemented")),
        },
        Row {
            method: "POST",
            path: "/v1/sessions/{s}/command",
            body: Some(json!({"command": "run_tests"})),
            status: 501,
            kind: "application/json",
            expect: Some(envelope("internal", "run_tests not yet implemented")),
        },
        Row {
            method: "POST",
            path: "/v1/sessions/{s}/command",
            body: Some(
                json!({"command": "permission_decision", "payload": {"request_id": "p", "decision": "allow-once"}}),
            ),
            status: 409,
            kind: "application/json",
            expect: Some(envelope("conflict", "no permission request is active")),
        },
        Row {
            method: "POST",
            path: "/v1/sessions/{s}/command",
            body: Some(
                json!({"command": "respond_permission", "payload": {"request_id": "p", "response": "once"}}),
            ),
            status: 409,
            kind: "application/json",
            expect: Some(envelope("conflict", "no permission request is active")),
        },
        Row {
            method: "GET",
            path: "/v1/sessions/{s}/download",
            body: None,
            status: 422,
            kind: "application/json",
            expect: None,
        },
        Row {
            method: "GET",
            path: "/v1/sessions/{s}/download?artifact=src",
            body: None,
            status: 404,
            kind: "application/json",
            expect: Some(envelope("not_found", "artifact not found")),
        },
        Row {
            method: "GET",
            path: "/v1/sessions/{s}/files/content?path=n.txt&mode=zzz",
            body: None,
            status: 200,
            kind: "application/json",
            expect: Some(
                json!({"path": "n.txt", "content": numbers(), "truncated": false, "total_bytes": 3893}),
            ),
        },
        Row {
            method: "GET",
            path: "/v1/sessions/00000000-0000-4000-8000-000000000000/events",
            body: None,
            status: 200,
            kind: "text/event-stream",
            expect: Some(json!("")),
        },
        Row {
            method: "GET",
            path: "/v1/sessions/{bare}/files?path=.",
            body: None,
            status: 409,
            kind: "application/json",
            expect: Some(envelope("conflict", "workspace not ready")),
        },
        Row {
            method: "GET",
            path: "/v1/sessions/{bare}/files/content?path=n.txt",
            body: None,
            status: 409,
            kind: "application/json",
            expect: Some(envelope("conflict", "workspace not ready")),
        },
    ]
}

/// `1\n2\n…\n1000\n`, 3893 bytes.
fn numbers() -> String {
    (1..=1000).map(|i| format!("{i}\n")).collect()
}

#[tokio::test]
async fn every_observed_answer_of_the_real_engine() {
    let engine = start(EngineConfig::default()).await;
    let url = engine.url();
    let http = reqwest::Client::new();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("n.txt"), numbers()).unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    let workspace = dir.path().display().to_string();
    let s = create_with(
        &http,
        url,
        &json!({"config_path": "c.yaml", "task": "", "workspace": workspace}),
    )
    .await;
    let bare = create_with(&http, url, &json!({"config_path": "c.yaml", "task": ""})).await;
    for row in rows() {
        let path = row.path.replace("{s}", &s).replace("{bare}", &bare);
        let mut request = match row.method {
            "POST" => http.post(format!("{url}{path}")),
            _ => http.get(format!("{url}{path}")),
        };
        if let Some(body) = &row.body {
            request = request.json(body);
        }
        let response = tokio::time::timeout(BOUND, request.send()).await.unwrap().unwrap();
        let status = response.status().as_u16();
        let kind = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let text = tokio::time::timeout(BOUND, response.text()).await.unwrap().unwrap();
        let what = format!("{} {}", row.method, row.path);
        assert_eq!(status, row.status, "{what}: {text}");
        assert!(kind.starts_with(row.kind), "{what}: content type {kind}");
        match row.expect {
            Some(Value::String(whole)) => assert_eq!(text, whole, "{what}"),
            Some(json) => {
                assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), json, "{what}");
            }
            None => {}
        }
    }
}

#[tokio::test]
async fn an_empty_from_id_is_ignored_and_a_refused_model_leaves_the_session() {
    let engine = start(EngineConfig::default()).await;
    let url = engine.url();
    let http = reqwest::Client::new();
    let s = super::support::create(&http, url).await;
    let stream = http
        .get(format!("{url}/v1/sessions/{s}/events?from_id="))
        .header("last-event-id", "1")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let (events, _) = read_events(stream, |e| !e.is_empty()).await;
    assert_eq!(events[0].id, "2", "resumed after 1");

    let refused = http
        .post(format!("{url}/v1/sessions"))
        .json(&json!({"config_path": "c.yaml", "task": "", "model": ""}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    let listed: Vec<Value> =
        http.get(format!("{url}/v1/sessions")).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed.len(), 2, "the session was created before the model was refused");
}
