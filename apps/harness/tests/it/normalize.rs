//! `bb-harness normalize` over real captures: the view model and the `--classes` lines.

use serde_json::Value;

use crate::run::{fixtures, harness};

fn lines(out: &str) -> Vec<Value> {
    out.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn classes_of_a_breadboard_capture() {
    let file = fixtures()
        .join("engine/breadboard/replays/thinking_multiturn_lifecycle_smoke_v1/replay_all.sse");
    let (ok, out) =
        harness(&["normalize", "--engine", "breadboard", "--classes", file.to_str().unwrap()], b"");
    assert!(ok);
    let rows = lines(&out);
    assert_eq!(rows.len(), 17); // one line per `data:` event of the capture
    let class_of =
        |ty: &str| rows.iter().find(|r| r["type"] == ty).map(|r| r["class"].clone()).unwrap();
    assert_eq!(class_of("assistant.thought_summary.delta"), "transcript.reasoning_stream");
    assert_eq!(class_of("stream.gap"), "run.error_or_gap");
    assert_eq!(class_of("conversation.compaction.start"), "unknown_event");
    assert_eq!(class_of("run_finished"), "run.finished");
    // Envelope ids are carried untouched (UUIDs, not the SSE seq).
    assert!(rows.iter().all(|r| r["id"].as_str().is_some_and(|id| id.len() == 36)));
}

#[test]
fn classes_of_a_kilo_capture() {
    let file = fixtures().join("engine/kilo/permission_allow.sse");
    let (ok, out) =
        harness(&["normalize", "--engine", "kilo", "--classes", file.to_str().unwrap()], b"");
    assert!(ok);
    let rows = lines(&out);
    let classes: Vec<_> = rows.iter().map(|r| r["class"].as_str().unwrap().to_owned()).collect();
    assert!(classes.contains(&"permission.request".to_owned()));
    assert!(classes.contains(&"tool.result".to_owned()));
    assert!(!classes.contains(&"unknown_event".to_owned()));
    assert_eq!(rows[0]["type"], "server.connected");
    assert_eq!(rows[0]["class"], "connection");
}

#[test]
fn view_model_of_a_kilo_permission_turn() {
    let file = fixtures().join("engine/kilo/permission_allow.sse");
    let (ok, out) = harness(&["normalize", "--engine", "kilo", file.to_str().unwrap()], b"");
    assert!(ok);
    let view: Value = serde_json::from_str(&out).unwrap();
    let blocks = view["transcript"]["blocks"].as_array().unwrap();
    let kinds: Vec<_> = blocks.iter().map(|b| b["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["user", "assistant", "tool", "approval", "assistant"]);
    assert_eq!(blocks[2]["status"], "completed");
    assert_eq!(blocks[3]["state"]["decision"], "once");
    assert_eq!(view["run"]["state"], "idle");
    assert_eq!(view["debug"]["unknownCount"], 0);
}

#[test]
fn bad_input_is_a_clear_error() {
    let (ok, _) = harness(&["normalize", "--engine", "kilo", "/nonexistent/file.sse"], b"");
    assert!(!ok);
    let dir = std::env::temp_dir().join(format!("bb-normalize-it-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("mixed.sse");
    std::fs::write(
        &file,
        "data: not json\n\ndata: {\"type\":\"session.idle\",\"properties\":{}}\n\n",
    )
    .unwrap();
    let (ok, out) = harness(&["normalize", "--engine", "kilo", file.to_str().unwrap()], b"");
    assert!(ok);
    let view: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(view["rejected"].as_array().unwrap().len(), 1);
    assert_eq!(view["debug"]["events"], 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn session_filter_keeps_one_session() {
    let file = fixtures().join("engine/kilo/global_event_text.sse");
    let (ok, all) =
        harness(&["normalize", "--engine", "kilo", "--classes", file.to_str().unwrap()], b"");
    assert!(ok);
    let (ok, none) = harness(
        &[
            "normalize",
            "--engine",
            "kilo",
            "--classes",
            "--session",
            "ses_none",
            file.to_str().unwrap(),
        ],
        b"",
    );
    assert!(ok);
    let (all, none) = (lines(&all), lines(&none));
    assert!(none.len() < all.len());
    assert!(none.iter().all(|r| r["class"] == "connection"));
}
