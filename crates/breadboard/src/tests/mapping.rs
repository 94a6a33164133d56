//! BreadBoard mapping: stream updates → host inputs (events with their seq ids and classes,
//! run flag, prompts raised and settled, sub-agents, gap warnings), summaries, ISO times and
//! diffs found in tool events.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::client::{BbEvent, GapReason, StreamUpdate};
use serde_json::json;

use crate::mapping::{DiffSource, SessionState, iso_to_ms, record_diffs, split_unified};
use bb_host::{Input, Prompt, PromptKind};

fn event(seq: u64, kind: &str, payload: serde_json::Value) -> StreamUpdate {
    let data = json!({"id": format!("u{seq}"), "seq": seq, "type": kind, "session_id": "s", "turn": 2,
        "timestamp": 7, "timestamp_ms": 7, "protocol_version": "1.0", "payload": payload});
    StreamUpdate::Event(BbEvent::parse(&seq.to_string(), &data.to_string()).unwrap())
}

#[test]
fn events_carry_their_seq_id_and_drive_run_and_permission_state() {
    let mut state = SessionState::default();
    let out = state.apply("s", event(3, "turn_start", json!({})));
    let Input::Events { events, .. } = &out[0] else { panic!("{out:?}") };
    let (first, class) = &events[0];
    assert_eq!((first.id.as_str(), first.turn, first.ts), ("3", Some(2), Some(7.0)));
    assert_eq!(class.as_str(), "turn.start");
    assert_eq!(out[1], Input::SessionRunning { session_id: "s".into(), running: true });

    let payload = json!({"request_id": "p1", "category": "edit", "tool": "apply_unified_patch",
        "items": [{"metadata": {"path": "Makefile"}}]});
    let out = state.apply("s", event(4, "permission_request", payload));
    let Input::PromptRaised { prompt, event: Some(shown) } = &out[0] else { panic!("{out:?}") };
    let (shown, class) = &**shown;
    let mut want = Prompt::new("s", "p1", PromptKind::Write);
    want.paths = vec!["Makefile".into()];
    assert_eq!(**prompt, want);
    assert_eq!((shown.id.as_str(), class.as_str()), ("4", "permission.request"));
    assert_eq!(state.pending().collect::<Vec<_>>(), ["p1"]);
    let out = state.apply("s", event(5, "permission_response", json!({"request_id": "p1"})));
    let Input::PromptSettled { request_id, event: Some(_), .. } = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(request_id, "p1");
    assert_eq!(state.pending().count(), 0);

    let out = state.apply("s", event(6, "run_finished", json!({})));
    assert_eq!(out[1], Input::SessionRunning { session_id: "s".into(), running: false });
    assert_eq!(state.apply("s", event(7, "completion", json!({}))).len(), 1, "already idle");
}

/// A session's events carry one shared id: made at its first event, not copied per event.
#[test]
fn a_sessions_inputs_share_one_session_id() {
    let mut state = SessionState::default();
    let ids: Vec<Arc<str>> = (1..=3)
        .flat_map(|seq| state.apply("s", event(seq, "assistant_delta", json!({"text": "x"}))))
        .filter_map(|input| match input {
            Input::Events { session_id, .. } => Some(session_id),
            _ => None,
        })
        .collect();
    assert_eq!(ids.len(), 3);
    assert_eq!(&*ids[0], "s");
    assert!(ids.iter().all(|id| Arc::ptr_eq(id, &ids[0])), "one id, shared");
}

#[test]
fn a_real_gap_is_a_connection_flag_and_one_transcript_warning() {
    let mut state = SessionState::default();
    let gap =
        StreamUpdate::Gap { reason: GapReason::WindowExceeded { last_seq: 4 }, lost: Some((5, 9)) };
    let out = state.apply("s", gap);
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0], Input::Gap { session_id: Some("s".into()) });
    let Input::Events { events, .. } = &out[1] else { panic!("{out:?}") };
    assert_eq!(events[0].0.event_type, "warning");
    assert_eq!(events[0].1.as_str(), "run.error_or_gap");
    let message = events[0].0.payload["message"].as_str().unwrap();
    assert!(message.contains("after seq 4") && message.contains("5..9"), "{message}");

    let out = state.apply("s", StreamUpdate::Rebuilt { summary: None });
    assert!(out.is_empty(), "no second warning: {out:?}");
    let out = state.apply(
        "s",
        StreamUpdate::Gap { reason: GapReason::EngineGap { reason: "x".into() }, lost: None },
    );
    let Input::Events { events, .. } = &out[1] else { panic!("{out:?}") };
    assert_ne!(events[0].0.id, "bridge-warning-1", "warning ids are unique");
}

#[test]
fn a_session_the_engine_lost_is_marked_ended_with_a_reason() {
    let mut state = SessionState::default();
    state.apply("s", event(1, "turn_start", json!({})));
    state.apply("s", event(2, "permission_request", json!({"request_id": "p1"})));
    let out = state.apply("s", StreamUpdate::Ended { summary: None });
    assert!(out.contains(&Input::SessionRunning { session_id: "s".into(), running: false }));
    let nothing_listed = Input::PromptsListed { session_id: "s".into(), prompts: Vec::new() };
    assert!(out.contains(&nothing_listed), "the engine holds none of its requests: {out:?}");
    let ended = out.iter().find_map(|u| match u {
        Input::SessionUpserted(s) => s.status.clone(),
        _ => None,
    });
    assert_eq!(ended.as_deref(), Some("ended"));
    let warning = out.iter().find_map(|u| match u {
        Input::Events { events, .. } => events[0].0.payload["message"].as_str(),
        _ => None,
    });
    assert!(warning.unwrap().contains("no longer holds"), "{out:?}");
    assert!(
        matches!(out.last(), Some(Input::Connection(c)) if c.status == bb_protocol::v1::ConnectionStatus::Connected),
        "the engine answered: the connection is up: {out:?}"
    );
}

#[test]
fn replayed_events_rebuild_state_without_reaching_the_view() {
    let mut state = SessionState::default();
    let replayed = |seq: u64, kind: &str, payload: serde_json::Value| {
        let data = json!({"seq": seq, "type": kind, "payload": payload});
        StreamUpdate::Replayed(BbEvent::parse(&seq.to_string(), &data.to_string()).unwrap())
    };
    let out = state.apply(
        "s",
        replayed(
            3,
            "permission_request",
            json!({"request_id": "p9", "pattern": "src/**", "default_scope": "project"}),
        ),
    );
    // Raised without its event (the webview saw it before), naming it: the host tells a
    // replayed earlier request from a restored one of the same id.
    let raised = Input::PromptReplayed {
        prompt: Box::new(Prompt::new("s", "p9", PromptKind::Unknown)),
        event_id: "3".into(),
    };
    assert_eq!(out, [raised], "raised without its event: the webview saw it before");
    let pending = state.pending_request("p9").unwrap();
    assert_eq!(
        (pending.pattern.as_deref(), pending.scope.as_deref()),
        (Some("src/**"), Some("project"))
    );
    state.forget("p9");
    assert!(state.pending_request("p9").is_none());
}

#[test]
fn the_user_message_of_a_sent_input_shows_what_the_user_typed() {
    let mut state = SessionState::default();
    state.sent("fix the build");
    let long = format!("fix the build{}", "\nSYSTEM PROMPT".repeat(200));
    let out = state.apply("s", event(1, "user_message", json!({"text": long})));
    let Input::Events { events, .. } = &out[0] else { panic!("{out:?}") };
    assert_eq!(events[0].0.payload["text"], "fix the build");
    assert_eq!(events[0].0.payload["engineTextBytes"], long.len());
    // Another client's message is shown as the engine sent it.
    let out = state.apply("s", event(2, "user_message", json!({"text": "hello"})));
    let Input::Events { events, .. } = &out[0] else { panic!("{out:?}") };
    assert_eq!(events[0].0.payload["text"], "hello");
}

/// A replayed `user_message` (state only, not shown) leaves the sent text for the event that
/// shows it.
#[test]
fn a_replayed_user_message_keeps_the_sent_text_for_the_shown_one() {
    let mut state = SessionState::default();
    state.sent("fix the build");
    let long = format!("fix the build{}", "\nSYSTEM PROMPT".repeat(20));
    let StreamUpdate::Event(replayed) = event(1, "user_message", json!({"text": long})) else {
        unreachable!()
    };
    let out = state.apply("s", StreamUpdate::Replayed(replayed));
    assert!(!out.iter().any(|i| matches!(i, Input::Events { .. })), "not shown: {out:?}");
    let out = state.apply("s", event(2, "user_message", json!({"text": long})));
    let Input::Events { events, .. } = &out[0] else { panic!("{out:?}") };
    assert_eq!(events[0].0.payload["text"], "fix the build");
}

#[test]
fn a_sub_agent_the_engine_names_is_listed_with_its_parent() {
    let mut state = SessionState::default();
    let payload =
        json!({"kind": "subagent_started", "child_session_id": "c1", "parent_session_id": "s"});
    let out = state.apply("s", event(1, "task_event", payload));
    let child = out.iter().find_map(|i| match i {
        Input::SessionUpserted(s) => Some(s.clone()),
        _ => None,
    });
    let child = child.expect("the child session listed");
    assert_eq!((child.session_id.as_str(), child.parent_id.as_deref()), ("c1", Some("s")));
    // A task event naming no child lists nothing.
    let out = state.apply("s", event(2, "task_event", json!({"kind": "stop_requested"})));
    assert!(!out.iter().any(|i| matches!(i, Input::SessionUpserted(_))), "{out:?}");
}

#[test]
fn permission_kinds_come_from_the_engines_words() {
    for (payload, kind) in [
        (json!({"category": "edit"}), PromptKind::Write),
        (json!({"kind": "Edit"}), PromptKind::Write),
        (json!({"tool": "bash", "kind": "run"}), PromptKind::Exec),
        (json!({"category": "read"}), PromptKind::Read),
        (json!({"category": "web_fetch"}), PromptKind::Network),
        (json!({"category": "mystery"}), PromptKind::Unknown),
        (json!({}), PromptKind::Unknown),
    ] {
        assert_eq!(crate::mapping::prompt_kind(payload.as_object().unwrap()), kind, "{payload}");
    }
}

#[test]
fn iso_times_convert_to_epoch_milliseconds() {
    assert_eq!(iso_to_ms("1970-01-01T00:00:00Z"), Some(0.0));
    assert_eq!(iso_to_ms("2026-11-22T00:14:15Z"), Some(1_795_306_455_000.0));
    let frac = iso_to_ms("2026-11-22T00:14:34.362453Z").unwrap();
    assert!((frac - 1_795_306_474_362.453).abs() < 0.01);
    assert_eq!(iso_to_ms("yesterday"), None);
}

#[test]
fn diffs_are_found_in_previews_blocks_and_artifacts() {
    let patch = "diff --git a/a.c b/a.c\n--- a/a.c\n+++ b/a.c\n@@ -1 +1 @@\n-x\n+y\ndiff --git a/b.c b/b.c\n--- a/b.c\n+++ b/b.c\n@@ -1 +1 @@\n-p\n+q\n";
    let split = split_unified(patch);
    assert_eq!(split.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(), ["a.c", "b.c"]);
    assert!(split[1].1.starts_with("diff --git a/b.c") && split[1].1.ends_with("+q\n"));

    let mut diffs = BTreeMap::new();
    record_diffs(json!({"diff_preview": patch}).as_object().unwrap(), &mut diffs);
    record_diffs(
        json!({"display": {"diff_blocks": [{"kind": "diff", "filePath": "hello.c", "unified": "+hi\n"}]}})
            .as_object()
            .unwrap(),
        &mut diffs,
    );
    let showcase = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/engine/breadboard/replays/large_diff_artifact_smoke_v1/source.jsonl"
    ))
    .unwrap();
    for line in showcase.lines().filter(|l| l.starts_with('{')) {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        record_diffs(value["payload"].as_object().unwrap(), &mut diffs);
    }
    let agent = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/engine/breadboard/agent/agent_permission_allow/live.sse"
    ))
    .unwrap();
    for data in agent.lines().filter_map(|l| l.strip_prefix("data: ")) {
        let value: serde_json::Value = serde_json::from_str(data).unwrap();
        if value["type"] == "tool_call" {
            record_diffs(value["payload"].as_object().unwrap(), &mut diffs);
        }
    }
    assert!(
        matches!(&diffs["Makefile"], DiffSource::Text(t) if t.contains("+CC=gcc")),
        "{diffs:?}"
    );
    assert!(matches!(&diffs["a.c"], DiffSource::Text(t) if t.contains("+y")));
    assert_eq!(diffs["hello.c"], DiffSource::Text("+hi\n".into()));
    assert_eq!(
        diffs["src/main.c"],
        DiffSource::Artifact(
            "docs_tmp/tui_tool_artifacts/tool_diff/artifact-sample-diff.diff".into()
        )
    );
}
