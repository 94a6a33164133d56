//! ACP events: every `session/update` kind gets its class, and a turn (captured from the
//! real `kilo acp`: user chunk, agent chunks, a tool call asking permission, its update, a
//! plan) reduces into the same view blocks as any engine's.

use serde_json::{Value, json};

use crate::class::{EventClass, classify};
use crate::event::{Engine, RawEvent};
use crate::reduce::SessionView;

fn acp(update: Value) -> RawEvent {
    RawEvent::from_value(Engine::Acp, update, None).unwrap()
}

#[test]
fn every_update_kind_has_its_class() {
    use EventClass as C;
    let table = [
        (json!({"sessionUpdate": "user_message_chunk"}), C::UserMessage),
        (json!({"sessionUpdate": "agent_message_chunk"}), C::AssistantStream),
        (json!({"sessionUpdate": "agent_thought_chunk"}), C::ReasoningStream),
        (json!({"sessionUpdate": "tool_call", "status": "pending"}), C::ToolCall),
        (json!({"sessionUpdate": "tool_call_update", "status": "in_progress"}), C::ToolCall),
        (json!({"sessionUpdate": "tool_call_update", "status": "completed"}), C::ToolResult),
        (json!({"sessionUpdate": "tool_call_update", "status": "failed"}), C::ToolResult),
        (json!({"sessionUpdate": "plan", "entries": []}), C::TaskTodo),
        (json!({"sessionUpdate": "available_commands_update"}), C::SessionInfo),
        (json!({"sessionUpdate": "current_mode_update"}), C::SessionInfo),
        (json!({"sessionUpdate": "config_option_update"}), C::SessionInfo),
        (json!({"sessionUpdate": "session_info_update"}), C::SessionInfo),
        (json!({"sessionUpdate": "usage_update"}), C::SessionInfo),
        (json!({"type": "request_permission"}), C::PermissionRequest),
        (json!({"type": "permission_settled"}), C::PermissionResponse),
        (json!({"type": "turn_started"}), C::TurnStart),
        (json!({"type": "turn_ended", "stopReason": "end_turn"}), C::RunFinished),
        (json!({"type": "turn_error", "message": "x"}), C::RunErrorOrGap),
        (json!({"type": "agent_exited", "reason": "x"}), C::RunErrorOrGap),
        (json!({"sessionUpdate": "a_future_kind"}), C::Unknown),
    ];
    for (event, class) in table {
        assert_eq!(classify(&acp(event.clone())), class, "{event}");
    }
    assert!(RawEvent::from_value(Engine::Acp, json!({"no": "kind"}), None).is_err());
}

#[test]
fn a_turn_reduces_into_blocks() {
    let mut v = SessionView::new();
    let events = [
        json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Run it"}}),
        json!({"sessionUpdate": "agent_thought_chunk", "messageId": "m1", "content": {"type": "text", "text": "thinking"}}),
        json!({"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "text", "text": "hello "}}),
        json!({"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "text", "text": "world"}}),
        json!({"sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "bash", "kind": "execute", "status": "pending", "rawInput": {}}),
        json!({"type": "request_permission", "requestId": "0", "toolCall": {"toolCallId": "call_1", "title": "echo zebra42", "kind": "execute"}, "options": []}),
        json!({"type": "permission_settled", "requestId": "0", "outcome": {"outcome": "selected", "optionId": "once"}}),
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "completed", "rawOutput": {"output": "zebra42\n"}}),
        json!({"sessionUpdate": "plan", "entries": [{"content": "check", "priority": "high", "status": "in_progress"}]}),
    ];
    for e in events {
        v.apply_event(acp(e));
    }
    let blocks = serde_json::to_value(&v.transcript.blocks).unwrap();
    let kinds: Vec<&str> =
        blocks.as_array().unwrap().iter().map(|b| b["kind"].as_str().unwrap_or("?")).collect();
    let text = blocks.to_string();
    assert!(text.contains("\"Run it\""), "{blocks:#}");
    assert!(text.contains("hello world"), "{blocks:#}");
    assert!(text.contains("thinking"), "{blocks:#}");
    assert!(text.contains("zebra42"), "{blocks:#}");
    assert!(text.contains("echo zebra42"), "{blocks:#}");
    assert!(text.contains("once"), "the approval is resolved: {blocks:#}");
    assert_eq!(kinds.len(), 5, "user, reasoning, assistant, tool, approval: {kinds:?} {blocks:#}");
    let tasks = serde_json::to_value(&v.tasks).unwrap().to_string();
    assert!(tasks.contains("check"), "{tasks}");
}
