//! The documented routes, status codes and error envelope, the connect-time snapshot, the
//! resume answers, and the session lifecycle (stop, failure, oneshot, delete).

use bb_fake_engine::EngineConfig;
use secrecy::SecretString;
use serde_json::{Value, json};

use super::support::{create, create_with, input, read_events, start, summary};

const WINDOW: &str = r#"{"error":"resume_window_exceeded","detail":"resume window exceeded or event id not found","path":null}"#;

async fn text(response: reqwest::Response) -> (u16, String, String) {
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, kind, response.text().await.unwrap())
}

fn script(dir: &tempfile::TempDir, name: &str, lines: &[&str]) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, lines.join("\n")).unwrap();
    format!("replay:{}", path.display())
}

#[tokio::test]
async fn auth_guards_every_route_with_the_engine_body() {
    let engine =
        start(EngineConfig { token: Some(SecretString::from("t0k")), ..EngineConfig::default() })
            .await;
    let url = engine.url();
    let http = reqwest::Client::new();
    let denied = text(http.get(format!("{url}/health")).send().await.unwrap()).await;
    assert_eq!(
        denied,
        (
            401,
            "application/json".into(),
            r#"{"error":"unauthorized","detail":"unauthorized","path":null}"#.into()
        )
    );
    let wrong = http.get(format!("{url}/v1/sessions")).bearer_auth("nope").send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    let health: Value = http
        .get(format!("{url}/health"))
        .bearer_auth("t0k")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (health["status"].as_str(), health["protocol_version"].as_str()),
        (Some("ok"), Some("1.0"))
    );
    // An unknown session's stream, with a valid token: without `Last-Event-ID` a 200 with an
    // empty, terminated body (README §11.1); with one, the 404 envelope.
    let unknown = text(
        http.get(format!("{url}/v1/sessions/nope/events")).bearer_auth("t0k").send().await.unwrap(),
    )
    .await;
    assert_eq!((unknown.0, unknown.2.as_str()), (200, ""));
    let unknown = text(
        http.get(format!("{url}/v1/sessions/nope/events"))
            .bearer_auth("t0k")
            .header("last-event-id", "3")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(unknown.0, 404);
    assert_eq!(unknown.2, r#"{"error":"not_found","detail":"session not found","path":null}"#);
}

#[tokio::test]
async fn streams_resume_and_the_snapshot_follow_the_engine() {
    let engine = start(EngineConfig::default()).await;
    let url = engine.url();
    let http = reqwest::Client::new();
    // Without a token, an unknown session gets 200 and an empty stream.
    let unknown =
        text(http.get(format!("{url}/v1/sessions/nope/events")).send().await.unwrap()).await;
    assert_eq!(unknown, (200, "text/event-stream; charset=utf-8".into(), String::new()));

    let session = create(&http, url).await;
    let events = format!("{url}/v1/sessions/{session}/events");
    let (all, _) =
        read_events(http.get(format!("{events}?replay=true")).send().await.unwrap(), |s| {
            s.len() == 2
        })
        .await;
    assert_eq!(
        all.iter().map(|e| e.data["type"].as_str().unwrap()).collect::<Vec<_>>(),
        ["skills_catalog", "skills_selection"]
    );

    let (plain, _) = read_events(http.get(&events).send().await.unwrap(), |s| !s.is_empty()).await;
    let snapshot = &plain[0];
    assert_eq!(
        (snapshot.data["seq"].clone(), snapshot.data["type"].as_str()),
        (Value::Null, Some("tool_result"))
    );
    assert_eq!(snapshot.id, snapshot.data["id"].as_str().unwrap());
    assert_eq!(snapshot.data["payload"]["todo"]["op"], "snapshot");

    for token in [snapshot.id.as_str(), "0", "99999", "not-an-id"] {
        let refused =
            text(http.get(&events).header("last-event-id", token).send().await.unwrap()).await;
        assert_eq!(refused, (409, "application/json".into(), WINDOW.into()), "token {token}");
    }
    // The query token wins over the header; a UUID works like its seq.
    let uuid = all[0].data["id"].as_str().unwrap();
    let (after, _) = read_events(
        http.get(format!("{events}?from_id={uuid}"))
            .header("last-event-id", "0")
            .send()
            .await
            .unwrap(),
        |s| !s.is_empty(),
    )
    .await;
    assert_eq!(after[0].id, "2");
    let (limited, _) =
        read_events(http.get(format!("{events}?replay=true&limit=1")).send().await.unwrap(), |s| {
            !s.is_empty()
        })
        .await;
    assert_eq!(limited[0].id, "2");
}

#[tokio::test]
async fn routes_answer_with_the_documented_codes() {
    let engine = start(EngineConfig::default()).await;
    let url = engine.url();
    let http = reqwest::Client::new();
    let missing =
        http.post(format!("{url}/v1/sessions")).json(&json!({"task": "x"})).send().await.unwrap();
    assert_eq!(missing.status(), 422);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["detail"]["errors"][0]["loc"], json!(["body", "config_path"]));
    let route = text(http.get(format!("{url}/v1/nothing")).send().await.unwrap()).await;
    assert_eq!((route.0, route.2.as_str()), (404, r#"{"detail":"Not Found"}"#));

    let session = create(&http, url).await;
    let command =
        |body: Value| http.post(format!("{url}/v1/sessions/{session}/command")).json(&body).send();
    let table = [
        (
            json!({"command": "set_mode", "payload": {"mode": "plan"}}),
            202,
            r#"{"detail":{"mode":"plan","status":"ok"},"status":"accepted"}"#,
        ),
        (
            json!({"command": "apply_diff", "payload": {}}),
            501,
            r#"{"error":"internal","detail":"apply_diff not yet implemented","path":null}"#,
        ),
        (
            json!({"command": "no_such_command"}),
            400,
            r#"{"error":"invalid_request","detail":"Unsupported command: no_such_command","path":null}"#,
        ),
        (
            json!({"command": "permission_decision", "payload": {"decision": "allow-once"}}),
            400,
            r#"{"error":"invalid_request","detail":"permission_decision requires non-empty 'request_id'","path":null}"#,
        ),
        (json!({"command": ""}), 500, "Internal Server Error"),
    ];
    for (body, status, answer) in table {
        let (got_status, _, got) = text(command(body.clone()).await.unwrap()).await;
        assert_eq!(got_status, status, "{body}");
        let same = got == answer
            || serde_json::from_str::<Value>(&got).ok()
                == serde_json::from_str::<Value>(answer).ok();
        assert!(same, "{body}: {got}");
    }
    assert_eq!(input(&http, url, &session, "   ").await, 500);
    let deleted = http.delete(format!("{url}/v1/sessions/{session}")).send().await.unwrap();
    assert_eq!(deleted.status(), 204);
    assert_eq!(
        http.get(format!("{url}/v1/sessions/{session}")).send().await.unwrap().status(),
        404
    );
    assert_eq!(input(&http, url, &session, "hi").await, 404);
    assert_eq!(
        http.delete(format!("{url}/v1/sessions/{session}")).send().await.unwrap().status(),
        404
    );
}

#[tokio::test]
async fn stop_does_not_interrupt_a_replay_fed_turn() {
    let engine = start(EngineConfig::default()).await;
    let url = engine.url();
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let session = create(&http, url).await;
    let slow = script(
        &dir,
        "slow.jsonl",
        &[
            r#"{"type":"warning","payload":{"message":"one"}}"#,
            r#"{"type":"warning","payload":{"message":"two"},"delay_ms":400}"#,
        ],
    );
    let stream =
        http.get(format!("{url}/v1/sessions/{session}/events?replay=true")).send().await.unwrap();
    assert_eq!(input(&http, url, &session, &slow).await, 202);
    let (first, _) = read_events(stream, |s| s.len() == 3).await;
    assert_eq!(first[2].data["payload"]["message"], "one");
    let stop = http
        .post(format!("{url}/v1/sessions/{session}/command"))
        .json(&json!({"command": "stop"}))
        .send()
        .await
        .unwrap();
    assert_eq!(stop.status(), 202);
    let stream = http
        .get(format!("{url}/v1/sessions/{session}/events"))
        .header("last-event-id", "3")
        .send()
        .await
        .unwrap();
    let (rest, _) =
        read_events(stream, |s| s.iter().any(|e| e.data["type"] == "run_finished")).await;
    let kinds: Vec<_> = rest.iter().map(|e| e.data["type"].as_str().unwrap()).collect();
    // README §11.3: stop_requested, then every remaining replay event, then the replay's end.
    assert_eq!(kinds, ["task_event", "warning", "completion", "run_finished"]);
    assert_eq!(rest[2].data["payload"]["summary"]["reason"], "replay");
    let summary = summary(&http, url, &session).await;
    assert_eq!(summary["status"], "running");
}

/// An engine whose agent turns play `script`, a session of it, its stream from the start,
/// and the input `text` sent.
async fn agent_turn(
    script: String,
    text: &str,
) -> (bb_fake_engine::RunningEngine, reqwest::Client, String, reqwest::Response) {
    let scripts = vec![bb_fake_engine::ScriptSource::Inline(script)];
    let engine = start(EngineConfig { scripts, ..EngineConfig::default() }).await;
    let url = engine.url().to_owned();
    let http = reqwest::Client::new();
    let session = create(&http, &url).await;
    let stream =
        http.get(format!("{url}/v1/sessions/{session}/events?replay=true")).send().await.unwrap();
    assert_eq!(input(&http, &url, &session, text).await, 202);
    (engine, http, session, stream)
}

#[tokio::test]
async fn stop_ends_an_agent_turn_at_the_next_event_and_keeps_the_session() {
    let turn = [
        r#"{"type":"warning","payload":{"message":"one"}}"#,
        r#"{"type":"warning","payload":{"message":"two"},"delay_ms":60000}"#,
    ]
    .join("\n");
    let (engine, http, session, stream) = agent_turn(turn, "hello").await;
    let url = engine.url();
    let (first, _) = read_events(stream, |s| s.len() == 4).await;
    assert_eq!(first[3].data["payload"]["message"], "one");
    let stop = http
        .post(format!("{url}/v1/sessions/{session}/command"))
        .json(&json!({"command": "stop"}))
        .send()
        .await
        .unwrap();
    assert_eq!(stop.status(), 202);
    let stream = http
        .get(format!("{url}/v1/sessions/{session}/events"))
        .header("last-event-id", "4")
        .send()
        .await
        .unwrap();
    let (rest, _) =
        read_events(stream, |s| s.iter().any(|e| e.data["type"] == "run_finished")).await;
    let kinds: Vec<_> = rest.iter().map(|e| e.data["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["task_event", "completion", "run_finished"]);
    assert_eq!(rest[1].data["payload"]["summary"]["reason"], "stopped_by_user");
    let summary = summary(&http, url, &session).await;
    assert_eq!(summary["status"], "running");
}

#[tokio::test]
async fn an_unknown_event_type_fails_the_run_and_closes_the_session() {
    let engine = start(EngineConfig::default()).await;
    let url = engine.url();
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let session = create(&http, url).await;
    let stream =
        http.get(format!("{url}/v1/sessions/{session}/events?replay=true")).send().await.unwrap();
    let bad = script(&dir, "bad.jsonl", &[r#"{"type":"no_such_event_type","payload":{}}"#]);
    assert_eq!(input(&http, url, &session, &bad).await, 202);
    let (events, ended) = read_events(stream, |_| false).await;
    assert!(ended, "the stream ends after the error");
    let last = events.last().unwrap();
    assert_eq!(last.data["type"], "error");
    assert_eq!(last.data["payload"]["message"], "'no_such_event_type' is not a valid EventType");
    let summary = summary(&http, url, &session).await;
    assert_eq!(summary["status"], "failed");
    let closed = text(
        http.post(format!("{url}/v1/sessions/{session}/input"))
            .json(&json!({"content": "x"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (closed.0, closed.2.as_str()),
        (409, r#"{"error":"conflict","detail":"session is closed","path":null}"#)
    );
}

#[tokio::test]
async fn a_oneshot_session_completes_and_ends_its_stream() {
    let engine = start(EngineConfig::default()).await;
    let url = engine.url();
    let http = reqwest::Client::new();
    let body =
        json!({"config_path": "c.yaml", "task": "", "metadata": {"cli_session_kind": "oneshot"}});
    let session = create_with(&http, url, &body).await;
    let stream =
        http.get(format!("{url}/v1/sessions/{session}/events?replay=true")).send().await.unwrap();
    assert_eq!(input(&http, url, &session, "do it").await, 202);
    let (events, ended) = read_events(stream, |_| false).await;
    assert!(ended);
    assert_eq!(events.last().unwrap().data["type"], "run_finished");
    let summary = summary(&http, url, &session).await;
    assert_eq!(summary["status"], "completed");
}

/// The demo turn played to its permission request, answered with `decision`, then to the
/// end: the types and the assistant text after the answer.
async fn demo_answered(decision: &str) -> (Vec<Value>, String) {
    let path = super::support::fixtures().join("../../demo/breadboard_demo.jsonl");
    let demo = std::fs::read_to_string(path).unwrap();
    let (engine, http, session, stream) = agent_turn(demo, "Add a Makefile").await;
    let url = engine.url();
    let (asked, _) =
        read_events(stream, |s| s.iter().any(|e| e.data["type"] == "permission_request")).await;
    let last = asked.last().unwrap().id.clone();
    let answer = http
        .post(format!("{url}/v1/sessions/{session}/command"))
        .json(&json!({"command": "permission_decision",
            "payload": {"request_id": "permission_1", "decision": decision}}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 202);
    let stream = http
        .get(format!("{url}/v1/sessions/{session}/events"))
        .header("last-event-id", last)
        .send()
        .await
        .unwrap();
    let (rest, _) =
        read_events(stream, |s| s.iter().any(|e| e.data["type"] == "run_finished")).await;
    let text = rest
        .iter()
        .filter_map(|e| e.data["payload"]["delta"].as_str())
        .collect::<Vec<_>>()
        .concat();
    (rest.into_iter().map(|e| e.data).collect(), text)
}

#[tokio::test]
async fn the_demo_does_what_the_user_chose() {
    let (allowed, text) = demo_answered("allow-once").await;
    let result = allowed.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(result["payload"]["success"], true);
    assert_eq!(result["payload"]["display"]["summary"], "Created Makefile (+7)");
    assert!(text.starts_with("Done: the Makefile"), "{text}");

    let (denied, text) = demo_answered("deny").await;
    let results: Vec<_> = denied.iter().filter(|e| e["type"] == "tool_result").collect();
    assert_eq!(results.len(), 1, "only the denied result: {results:?}");
    assert_eq!(results[0]["payload"]["success"], false);
    assert_eq!(results[0]["payload"]["display"]["summary"], "Not applied: you denied it");
    assert!(text.starts_with("Understood: I left the workspace unchanged."), "{text}");
    assert!(!text.contains("Done"), "{text}");
    let response = denied.iter().find(|e| e["type"] == "permission_response").unwrap();
    assert_eq!(response["payload"]["decision"], "reject");
}
