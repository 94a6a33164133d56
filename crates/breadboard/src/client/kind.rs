//! BreadBoard's event types as the bridge holds them: the types it knows as static strings,
//! so an event of one costs no allocation for its type on its way to the webview.

use std::borrow::Cow;

/// `kind`, an envelope's `type` as read from the stream: borrowed from the program when it is
/// one of the types the bridge classes (`bb_normalize::class::classify_breadboard`' table) or
/// one the engine sends besides, an owned copy for any other (the open set is forwarded as
/// is).
pub(crate) fn event_type(kind: &str) -> Cow<'static, str> {
    bb_engine_client::known_types!(
        kind,
        [
            "assistant.message.delta",
            "assistant_delta",
            "assistant.message.start",
            "assistant.message.end",
            "assistant_message",
            "assistant.reasoning.delta",
            "assistant.thought_summary.delta",
            "user_message",
            "turn_start",
            "tool_call",
            "tool.exec.start",
            "tool.exec.stdout.delta",
            "tool.exec.stderr.delta",
            "tool_result",
            "tool.result",
            "tool.exec.end",
            "todo_update",
            "permission_request",
            "permission_response",
            "checkpoint_list",
            "checkpoint_restored",
            "task_event",
            "skills_catalog",
            "skills_selection",
            "ctree_node",
            "ctree_snapshot",
            "reward_update",
            "log_link",
            "limits_update",
            "completion",
            "run_finished",
            "error",
            "stream.gap",
            "warning",
            "conversation.compaction.start",
            "conversation.compaction.end",
        ]
    )
}
