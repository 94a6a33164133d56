//! Classification tables: every alias of the spec's table, the extras, Kilo shapes, unknown.

use serde_json::{Value, json};

use crate::class::{EventClass as C, classify};
use crate::event::{Engine, RawEvent};

fn bb(kind: &str, payload: Value) -> C {
    classify(&RawEvent::new(Engine::BreadBoard, kind.to_owned(), payload))
}

fn kilo(kind: &str, payload: Value) -> C {
    classify(&RawEvent::new(Engine::Kilo, kind.to_owned(), payload))
}

#[test]
fn breadboard_table_and_aliases() {
    let table: &[(&str, C)] = &[
        ("user_message", C::UserMessage),
        ("assistant_message", C::AssistantStream),
        ("assistant.message.start", C::AssistantStream),
        ("assistant.message.delta", C::AssistantStream),
        ("assistant.message.end", C::AssistantStream),
        ("assistant_delta", C::AssistantStream),
        ("assistant.reasoning.delta", C::ReasoningStream),
        ("assistant.thought_summary.delta", C::ReasoningStream),
        ("tool_call", C::ToolCall),
        ("tool_result", C::ToolResult),
        ("tool.result", C::ToolResult),
        ("permission_request", C::PermissionRequest),
        ("permission_response", C::PermissionResponse),
        ("checkpoint_list", C::CheckpointList),
        ("checkpoint_restored", C::CheckpointRestored),
        ("task_event", C::TaskEvent),
        ("skills_catalog", C::SkillsCatalog),
        ("skills_selection", C::SkillsSelection),
        ("ctree_node", C::CtreeNode),
        ("ctree_snapshot", C::CtreeSnapshot),
        ("reward_update", C::RewardUpdate),
        ("log_link", C::RunLogLink),
        ("completion", C::RunFinished),
        ("run_finished", C::RunFinished),
        ("error", C::RunErrorOrGap),
        ("stream.gap", C::RunErrorOrGap),
        ("turn_start", C::TurnStart),
        // Beyond the table, where the meaning is clear.
        ("tool.exec.start", C::ToolCall),
        ("tool.exec.stdout.delta", C::ToolOutput),
        ("tool.exec.stderr.delta", C::ToolOutput),
        ("tool.exec.end", C::ToolResult),
        ("warning", C::RunErrorOrGap),
        ("limits_update", C::RunLimits),
        // Unknown.
        ("conversation.compaction.start", C::Unknown),
        ("ctree_delta", C::Unknown),
        ("no_such_event_type", C::Unknown),
        ("", C::Unknown),
        ("Tool_Result", C::Unknown),
    ];
    for (kind, class) in table {
        assert_eq!(bb(kind, json!({})), *class, "{kind}");
    }
}

#[test]
fn breadboard_todo_snapshot_keeps_the_spec_class() {
    // The normalization table: `tool_result` → `tool.result`, whatever it carries; the todo
    // snapshot is the reducer's business (it goes to the tasks lane, not to a tool block).
    let p = json!({"call_id": "todo:snapshot:connect:1", "todo": {"op": "snapshot", "items": []}});
    assert_eq!(bb("tool_result", p), C::ToolResult);
    assert_eq!(bb("tool_result", json!({"todo": "not an object"})), C::ToolResult);
}

#[test]
fn kilo_table() {
    let part = |t: &str, status: Option<&str>| json!({"part": {"type": t, "state": status.map(|s| json!({"status": s}))}});
    let table: Vec<(&str, Value, C)> = vec![
        ("message.updated", json!({"info": {"role": "user"}}), C::UserMessage),
        ("message.updated", json!({"info": {"role": "assistant"}}), C::AssistantStream),
        ("message.part.updated", part("text", None), C::AssistantStream),
        ("message.part.updated", part("reasoning", None), C::ReasoningStream),
        ("message.part.updated", part("tool", Some("pending")), C::ToolCall),
        ("message.part.updated", part("tool", Some("running")), C::ToolCall),
        ("message.part.updated", part("tool", Some("completed")), C::ToolResult),
        ("message.part.updated", part("tool", Some("error")), C::ToolResult),
        ("message.part.updated", part("step-start", None), C::SessionInfo),
        ("message.part.updated", part("step-finish", None), C::SessionInfo),
        ("message.part.updated", part("hologram", None), C::Unknown),
        ("message.part.delta", json!({}), C::AssistantStream),
        ("permission.asked", json!({}), C::PermissionRequest),
        ("permission.replied", json!({}), C::PermissionResponse),
        ("question.asked", json!({}), C::PermissionRequest),
        ("question.replied", json!({}), C::PermissionResponse),
        ("question.rejected", json!({}), C::PermissionResponse),
        ("todo.updated", json!({}), C::TaskTodo),
        ("session.status", json!({}), C::RunStatus),
        ("session.idle", json!({}), C::RunFinished),
        ("session.turn.open", json!({}), C::TurnStart),
        ("session.turn.close", json!({}), C::RunFinished),
        ("session.error", json!({}), C::RunErrorOrGap),
        ("session.diff", json!({}), C::RunDiff),
        ("file.edited", json!({}), C::RunDiff),
        ("session.created", json!({}), C::SessionInfo),
        ("session.updated", json!({}), C::SessionInfo),
        ("server.connected", json!({}), C::Connection),
        ("server.heartbeat", json!({}), C::Connection),
        ("sync", json!({}), C::Connection),
        ("plugin.added", json!({}), C::Connection),
        ("session.next.thing", json!({}), C::Unknown),
        ("permission.v2.asked", json!({}), C::Unknown),
    ];
    for (kind, payload, class) in table {
        assert_eq!(kilo(kind, payload.clone()), class, "{kind} {payload}");
    }
}

#[test]
fn class_names_match_the_spec() {
    assert_eq!(C::AssistantStream.as_str(), "transcript.assistant_stream");
    assert_eq!(C::Unknown.as_str(), "unknown_event");
    assert_eq!(serde_json::to_value(C::RunErrorOrGap).unwrap(), json!("run.error_or_gap"));
    assert_eq!(C::RunLogLink.to_string(), "run.log_link");
}

#[test]
fn parse_breadboard_envelope_keeps_ids() {
    let data = r#"{"id":"9dc0e92a","seq":3,"type":"assistant_delta","session_id":"s1","turn":null,"timestamp":17,"timestamp_ms":17,"payload":{"text":"hi"}}"#;
    let ev = RawEvent::parse(Engine::BreadBoard, data, Some("3")).unwrap();
    assert_eq!(ev.id.as_deref(), Some("9dc0e92a"));
    assert_eq!((ev.seq, ev.turn, ev.ts), (Some(3), None, Some(17)));
    assert_eq!(ev.session_id.as_deref(), Some("s1"));
    assert_eq!(ev.payload, json!({"text": "hi"}));
}

#[test]
fn parse_kilo_shapes() {
    let ev = RawEvent::parse(
        Engine::Kilo,
        r#"{"id":"evt_1","type":"session.idle","properties":{"sessionID":"ses_1"}}"#,
        None,
    )
    .unwrap();
    assert_eq!((ev.id.as_deref(), ev.session_id.as_deref()), (Some("evt_1"), Some("ses_1")));
    let sync = r#"{"type":"sync","syncEvent":{"id":"evt_2","type":"message.updated.1","seq":4,"aggregateID":"ses_9","data":{}},"id":"evt_2"}"#;
    let ev = RawEvent::parse(Engine::Kilo, sync, None).unwrap();
    assert_eq!((&*ev.kind, ev.seq, ev.session_id.as_deref()), ("sync", Some(4), Some("ses_9")));
    let global =
        r#"{"directory":"/p","payload":{"id":"evt_3","type":"server.connected","properties":{}}}"#;
    let ev = RawEvent::parse(Engine::Kilo, global, None).unwrap();
    assert_eq!((&*ev.kind, ev.id.as_deref()), ("server.connected", Some("evt_3")));
}

#[test]
fn parse_errors_are_typed() {
    use crate::event::EventError;
    assert!(matches!(RawEvent::parse(Engine::Kilo, "{", None), Err(EventError::InvalidJson(_))));
    assert_eq!(RawEvent::parse(Engine::Kilo, "[1]", None), Err(EventError::NotAnObject));
    assert_eq!(
        RawEvent::parse(Engine::BreadBoard, r#"{"type":3}"#, None),
        Err(EventError::MissingType)
    );
    assert_eq!(
        RawEvent::parse(Engine::Kilo, r#"{"payload":{}}"#, None),
        Err(EventError::MissingType)
    );
    // The SSE id stands in only when the event has none.
    let ev = RawEvent::parse(Engine::BreadBoard, r#"{"type":"x"}"#, Some("7")).unwrap();
    assert_eq!(ev.id.as_deref(), Some("7"));
}

#[test]
fn every_class_is_read_back_by_its_name() {
    for class in C::ALL {
        assert_eq!(C::from_name(class.as_str()), Some(class), "{}", class.as_str());
    }
    assert_eq!(C::from_name("no.such.class"), None);
}
