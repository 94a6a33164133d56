//! Reducer rules (transcript, tasks, run, debug) and the determinism laws as properties.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::strategies::{stream, wild_event};
use crate::class::{Classified, EventClass};
use crate::event::{Engine, RawEvent};
use crate::reduce::{
    ApprovalState, Block, NoticeLevel, SessionView, StreamStatus, TaskStatus, ToolStatus,
};

fn bb(kind: &str, payload: Value) -> RawEvent {
    RawEvent::new(Engine::BreadBoard, kind.to_owned(), payload)
}

fn kilo(kind: &str, payload: Value) -> RawEvent {
    RawEvent::new(Engine::Kilo, kind.to_owned(), payload)
}

fn view(events: impl IntoIterator<Item = RawEvent>) -> SessionView {
    let mut v = SessionView::new();
    for e in events {
        v.apply_event(e);
    }
    v
}

fn blocks(v: &SessionView) -> Value {
    serde_json::to_value(v.transcript.blocks_json()).unwrap()
}

#[test]
fn user_blocks_are_immutable() {
    let v = view([
        kilo("message.updated", json!({"info": {"id": "u1", "role": "user"}})),
        kilo(
            "message.part.updated",
            json!({"part": {"id": "p1", "messageID": "u1", "type": "text", "text": "hello"}}),
        ),
        kilo(
            "message.part.updated",
            json!({"part": {"id": "p1", "messageID": "u1", "type": "text", "text": "rewritten"}}),
        ),
        kilo(
            "message.part.delta",
            json!({"messageID": "u1", "partID": "p1", "field": "text", "delta": "!"}),
        ),
        kilo("message.updated", json!({"info": {"id": "u1", "role": "user"}})),
    ]);
    assert_eq!(v.transcript.blocks.len(), 1);
    assert_eq!(blocks(&v)[0]["text"]["text"], "hello");
}

#[test]
fn assistant_stream_by_message_id_and_turn() {
    let v = view([
        bb("assistant.message.start", json!({"item_id": "m1"})).with_turn(1),
        bb("assistant.message.delta", json!({"item_id": "m1", "delta": "Hel"})).with_turn(1),
        bb("assistant.message.delta", json!({"item_id": "m1", "delta": "lo"})).with_turn(1),
        bb("assistant.message.delta", json!({"item_id": "m1", "delta": "other turn"})).with_turn(2),
        bb("assistant.message.end", json!({"item_id": "m1"})).with_turn(1),
    ]);
    let b = blocks(&v);
    assert_eq!((b[0]["text"].as_str(), b[0]["status"].as_str()), (Some("Hello"), Some("complete")));
    assert_eq!(
        (b[1]["text"].as_str(), b[1]["status"].as_str()),
        (Some("other turn"), Some("streaming"))
    );
}

#[test]
fn legacy_deltas_then_whole_message() {
    let v = view([
        bb("assistant_delta", json!({"message_id": "m-1", "text": "# Stream"})),
        bb("assistant_delta", json!({"message_id": "m-1", "text": "ing"})),
        bb("assistant_message", json!({"message_id": "m-1", "text": "# Streaming\n"})),
        bb("assistant_message", json!({"text": ""})),
        bb("assistant_delta", json!({"text": "anon"})),
        bb("assistant_message", json!({"text": "anon whole"})),
    ]);
    let b = blocks(&v);
    assert_eq!(b.as_array().unwrap().len(), 2);
    assert_eq!(b[0]["text"], "# Streaming\n");
    assert_eq!(b[1]["text"], "anon whole");
    assert_eq!(b[1]["status"], "complete");
}

#[test]
fn kilo_parts_deltas_and_reasoning() {
    let v = view([
        kilo(
            "message.updated",
            json!({"info": {"id": "a1", "role": "assistant", "time": {"created": 1}}}),
        ),
        kilo(
            "message.part.updated",
            json!({"part": {"id": "r1", "messageID": "a1", "type": "reasoning", "text": "think"}}),
        ),
        kilo(
            "message.part.updated",
            json!({"part": {"id": "t1", "messageID": "a1", "type": "text", "text": ""}}),
        ),
        kilo(
            "message.part.delta",
            json!({"messageID": "a1", "partID": "t1", "field": "text", "delta": "Hel"}),
        ),
        kilo(
            "message.part.delta",
            json!({"messageID": "a1", "partID": "r1", "field": "text", "delta": "ing"}),
        ),
        kilo(
            "message.part.delta",
            json!({"messageID": "a1", "partID": "t1", "field": "text", "delta": "lo"}),
        ),
        kilo(
            "message.part.updated",
            json!({"part": {"id": "t2", "messageID": "a1", "type": "text", "text": " 2"}}),
        ),
        kilo(
            "message.part.delta",
            json!({"messageID": "a1", "partID": "t1", "field": "text", "delta": "!"}),
        ),
        kilo(
            "message.updated",
            json!({"info": {"id": "a1", "role": "assistant", "time": {"created": 1, "completed": 2}}}),
        ),
    ]);
    let b = blocks(&v);
    assert_eq!(b[0]["kind"], "assistant");
    assert_eq!(b[0]["text"], "Hello! 2");
    assert_eq!(b[0]["status"], "complete");
    assert_eq!(b[1]["kind"], "reasoning");
    assert_eq!(b[1]["text"], "thinking");
}

#[test]
fn released_spare_room_leaves_the_view_as_it_was() {
    let turn = |n: usize| {
        [
            kilo("message.updated", json!({"info": {"id": format!("u{n}"), "role": "user"}})),
            kilo(
                "message.part.updated",
                json!({"part": {"id": format!("pu{n}"), "messageID": format!("u{n}"), "type": "text", "text": format!("q{n}")}}),
            ),
            kilo(
                "message.part.updated",
                json!({"part": {"id": format!("pa{n}"), "messageID": format!("a{n}"), "type": "text", "text": format!("a{n}")}}),
            ),
        ]
    };
    let mut v = view((0..40).flat_map(turn));
    let before = blocks(&v);
    v.release_spare();
    assert_eq!(v.transcript.blocks.capacity(), v.transcript.blocks.len());
    assert_eq!(blocks(&v), before);
    for e in turn(40) {
        v.apply_event(e);
    }
    assert_eq!(v.transcript.blocks.len(), 82, "the list grows again");
}

#[test]
fn kilo_message_error_marks_the_block() {
    let v = view([kilo(
        "message.updated",
        json!({"info": {"id": "a1", "role": "assistant", "error": {"name": "APIError", "data": {"message": "bad key sk-AbCdEf0123456789AbCdEf"}}}}),
    )]);
    match &v.transcript.blocks[0] {
        Block::Assistant(b) => {
            assert_eq!(b.status, StreamStatus::Error);
            assert_eq!(b.error.as_deref(), Some("bad key [REDACTED]"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn tool_blocks_open_running_and_close_with_preview() {
    let long: String = (0..500).map(|i| format!("row {i}\n")).collect();
    let v = view([
        bb(
            "tool_call",
            json!({"call": {"id": "c1", "name": "read_file", "arguments": {"path": "a"}}, "call_id": "c1", "tool": "read_file"}),
        ),
        bb("tool_call", json!({"call_id": null, "tool": "list_dir"})),
        bb("tool_result", json!({"call_id": "c1", "status": "ok", "error": false, "result": long})),
    ]);
    let b = blocks(&v);
    assert_eq!(
        (b[0]["status"].as_str(), b[1]["status"].as_str()),
        (Some("completed"), Some("running"))
    );
    let out = &b[0]["output"];
    assert_eq!(out["truncated"], true);
    let r = out["bodyRef"].as_str().unwrap();
    assert_eq!(v.body(r), Some(long.as_str()));
}

#[test]
fn tool_results_without_ids_match_by_tool_then_refresh() {
    let v = view([
        bb("tool_call", json!({"tool": "list_dir", "call_id": null})).with_turn(1),
        bb("tool_call", json!({"tool": "grep", "call_id": null})).with_turn(1),
        bb("tool_result", json!({"tool": "grep", "success": false, "status": "error", "error": true, "result": {"error": "nope"}})).with_turn(1),
        bb("tool_result", json!({"tool": "list_dir", "success": true, "status": "ok", "error": false, "result": {"items": []}})).with_turn(1),
        bb("tool_result", json!({"message": {"role": "tool", "name": "list_dir", "content": "again"}, "call_id": null, "status": "ok", "error": false})).with_turn(1),
        bb("tool_result", json!({"result": {"id": "x9", "name": "bash", "ok": true}})).with_turn(1),
    ]);
    let tools: Vec<_> = v
        .transcript
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Tool(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(tools.len(), 3);
    assert_eq!(
        (tools[0].tool.as_deref(), tools[0].status),
        (Some("list_dir"), ToolStatus::Completed)
    );
    assert_eq!(tools[0].output.as_ref().unwrap().text, "again");
    assert_eq!((tools[1].tool.as_deref(), tools[1].status), (Some("grep"), ToolStatus::Error));
    assert_eq!(tools[1].error.as_deref(), Some("nope"));
    assert_eq!((tools[2].call_id.as_deref(), tools[2].status), (Some("x9"), ToolStatus::Completed));
}

#[test]
fn exec_stream_joins_its_call() {
    let v = view([
        bb(
            "tool.exec.start",
            json!({"call_id": "c1", "exec_id": "x1", "tool": "shell_command", "command": "ls"}),
        ),
        bb("tool.exec.stdout.delta", json!({"exec_id": "x1", "delta": "a\n"})),
        bb("tool.exec.stderr.delta", json!({"exec_id": "x1", "delta": "b\n"})),
        bb("tool.exec.end", json!({"call_id": "c1", "exec_id": "x1", "exit_code": 2})),
    ]);
    let b = blocks(&v);
    assert_eq!(b.as_array().unwrap().len(), 1, "{b}");
    assert_eq!(b[0]["status"], "error");
    assert_eq!(b[0]["output"]["text"], "a\nb\n");
}

#[test]
fn kilo_tool_part_lifecycle() {
    let part = |s: Value| {
        kilo(
            "message.part.updated",
            json!({"part": {"id": "prt", "callID": "call_1", "messageID": "m", "type": "tool", "tool": "bash", "state": s}}),
        )
    };
    let v = view([
        part(json!({"status": "pending", "input": {}})),
        part(
            json!({"status": "running", "input": {"command": "echo hi"}, "metadata": {"output": "h"}}),
        ),
        part(
            json!({"status": "completed", "input": {"command": "echo hi"}, "output": "hi\n", "title": "echo"}),
        ),
    ]);
    let b = blocks(&v);
    assert_eq!(b.as_array().unwrap().len(), 1);
    assert_eq!(b[0]["status"], "completed");
    assert_eq!(b[0]["output"]["text"], "hi\n");
    assert_eq!(b[0]["title"], "echo");
}

#[test]
fn approvals_resolve_by_request_id() {
    let v = view([
        bb(
            "permission_request",
            json!({"request_id": "p1", "tool": "bash", "kind": "run", "summary": "run ls"}),
        ),
        kilo(
            "permission.asked",
            json!({"id": "per_1", "permission": "edit", "patterns": ["a.txt"], "metadata": {"filepath": "a.txt"}, "tool": {"callID": "c"}}),
        ),
        kilo("question.asked", json!({"id": "que_1", "questions": [{"question": "Proceed?"}]})),
        bb("permission_response", json!({"request_id": "p1", "decision": "reject"})),
        kilo("permission.replied", json!({"requestID": "per_1", "reply": "always"})),
        kilo("permission.replied", json!({"requestID": "per_unknown", "reply": "once"})),
    ]);
    let states: Vec<_> = v
        .transcript
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Approval(a) => Some(a.state.clone()),
            _ => None,
        })
        .collect();
    let resolved = |d: &str| ApprovalState::Resolved { decision: d.to_owned() };
    assert_eq!(
        states,
        [resolved("reject"), resolved("always"), ApprovalState::Pending, resolved("once")]
    );
}

#[test]
fn errors_and_gaps_are_cards() {
    let v = view([
        bb("stream.gap", json!({"reason": "network jitter"})),
        bb("warning", json!({"message": "slow"})),
        bb("error", json!({"message": "line1\nline2 password=hunter2"})),
        kilo(
            "session.error",
            json!({"error": {"name": "MessageAbortedError", "data": {"message": "Aborted"}}}),
        ),
    ]);
    let levels: Vec<_> = v
        .transcript
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Notice(n) => Some((n.level, n.message.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        levels,
        [
            (NoticeLevel::Gap, "network jitter".to_owned()),
            (NoticeLevel::Warning, "slow".to_owned()),
            (NoticeLevel::Error, "line1 line2 password=[REDACTED]".to_owned()),
            // Kilo says a stopped turn with an error: it is a stop, not a failure.
            (NoticeLevel::Stopped, "Stopped".to_owned()),
        ]
    );
    assert!(v.run.gap_detected);
    assert_eq!(v.run.errors, 1);
}

#[test]
fn task_tree_orphans_and_precedence() {
    let t = |id: &str, parent: Option<&str>, status: &str| {
        bb("task_event", json!({"task_id": id, "parent_task_id": parent, "status": status}))
    };
    let v = view([
        t("root", None, "running"),
        t("child", Some("root"), "queued"),
        t("lost", Some("ghost"), "running"),
        t("child", None, "failed"),
        t("child", None, "completed"), // failed is final
        t("root", None, "completed"),  // running gives way to completed
        t("root", None, "queued"),     // a stale queued changes nothing
        t("a", Some("b"), "queued"),
        t("b", Some("a"), "queued"), // a parent cycle
        bb("task_event", json!({"kind": "stop_requested"})),
    ]);
    let tasks = serde_json::to_value(&v.tasks).unwrap();
    let tree = tasks["tree"].as_array().unwrap();
    let row = |id: &str| tree.iter().find(|r| r["taskId"] == id).unwrap().clone();
    assert_eq!(row("root")["status"], "completed");
    assert_eq!(row("root")["rollupStatus"], "failed");
    assert_eq!(row("child")["status"], "failed");
    assert_eq!(row("child")["depth"], 1);
    assert_eq!(row("lost")["group"], "orphans");
    assert_eq!(tasks["orphans"], json!(["lost", "a"]));
    assert_eq!(tree.len(), 5);
    assert_eq!(tasks["signals"][0]["kind"], "stop_requested");
}

#[test]
fn status_merge_table() {
    use TaskStatus::{Completed, Failed, Queued, Running};
    let table = [
        (Queued, Running, Running),
        (Running, Completed, Completed),
        (Running, Queued, Running),
        (Completed, Queued, Completed),
        (Completed, Running, Running),
        (Failed, Running, Failed),
        (Failed, Completed, Failed),
        (Running, Failed, Failed),
    ];
    for (cur, new, want) in table {
        assert_eq!(cur.merge(new), want, "{cur:?} + {new:?}");
    }
}

#[test]
fn todos_from_both_engines() {
    let v = view([bb(
        "tool_result",
        json!({"call_id": "todo:1", "todo": {"op": "snapshot", "items": [{"id": "1", "title": "write tests", "status": "in_progress"}]}}),
    )]);
    assert_eq!(v.tasks.todos[0].status, TaskStatus::Running);
    assert!(v.transcript.blocks.is_empty());
    let v = view([kilo(
        "todo.updated",
        json!({"todos": [{"content": "a", "status": "completed", "priority": "high"}, {"content": "b", "status": "cancelled", "priority": "low"}]}),
    )]);
    assert_eq!(
        v.tasks.todos.iter().map(|t| t.status).collect::<Vec<_>>(),
        [TaskStatus::Completed, TaskStatus::Failed]
    );
}

#[test]
fn run_lane_checkpoints_links_summary() {
    let v = view([
        bb("turn_start", json!({"turn": 1})).with_turn(1),
        bb(
            "checkpoint_list",
            json!({"checkpoints": [{"checkpoint_id": "ckpt-1", "preview": "start"}, {"checkpoint_id": "ckpt-2"}]}),
        ),
        bb("checkpoint_restored", json!({"checkpoint_id": "ckpt-1", "mode": "code"})),
        bb("log_link", json!({"url": "file://logging/run"})),
        bb("log_link", json!({"url": "file://logging/run"})),
        bb(
            "completion",
            json!({"summary": {"completed": false, "reason": "max_steps_exhausted", "steps_taken": 4}, "usage": {"latency_ms": 10}}),
        ),
        bb(
            "run_finished",
            json!({"eventCount": 84, "completed": false, "reason": "max_steps_exhausted", "logging_dir": "logging/run"}),
        ),
        kilo(
            "session.diff",
            json!({"diff": [{"path": "a.rs", "status": "modified", "additions": 2, "deletions": 1}]}),
        ),
        kilo("file.edited", json!({"file": "b.rs"})),
    ]);
    let run = &v.run;
    assert_eq!(run.checkpoints.iter().map(|c| c.restored).collect::<Vec<_>>(), [true, false]);
    assert_eq!(run.log_links.len(), 1);
    let s = run.summary.as_ref().unwrap();
    assert_eq!(
        (s.completed, s.reason.as_deref(), s.steps, s.logging_dir.as_deref()),
        (Some(false), Some("max_steps_exhausted"), Some(4), Some("logging/run"))
    );
    assert_eq!(run.changed_files.len(), 2);
    assert!(matches!(&v.transcript.blocks[0], Block::Notice(n) if n.level == NoticeLevel::Info));
}

#[test]
fn unknown_events_are_kept_redacted_and_counted() {
    let v = view([
        bb("mystery", json!({"apiKey": "k-123", "note": "x\ny"})).with_id("e1"),
        kilo("session.next.thing", json!({})),
        kilo("server.heartbeat", json!({})),
    ]);
    assert_eq!(v.debug.unknown_count, 2);
    assert_eq!(v.debug.connection_events, 1);
    let node = &v.debug.unknown[0];
    assert_eq!((node.event_id.as_deref(), node.kind.as_str()), (Some("e1"), "mystery"));
    assert!(!node.payload.contains("k-123") && !node.payload.contains('\n'));
    assert!(v.transcript.blocks.is_empty());
}

/// A view with the debug lane (counters, unknown nodes, resume position) cleared.
fn without_debug(mut v: SessionView) -> SessionView {
    v.debug = Default::default();
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn same_sequence_same_state(events in stream(40)) {
        let a = view(events.clone());
        let b = view(events);
        prop_assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
        prop_assert_eq!(a, b);
    }

    #[test]
    fn unknown_events_touch_only_the_debug_lane(events in stream(30), at in 0usize..30, payload in super::strategies::any_json()) {
        let mut with = events.clone();
        let pos = at.min(with.len());
        let engine = with.first().map_or(Engine::BreadBoard, |e| e.engine);
        let unknown = RawEvent::new(engine, "no.such.type", payload);
        prop_assert_eq!(Classified::new(unknown.clone()).class, EventClass::Unknown);
        with.insert(pos, unknown);
        let a = view(events);
        let b = view(with);
        prop_assert_eq!(b.debug.unknown_count, a.debug.unknown_count + 1);
        prop_assert_eq!(without_debug(a), without_debug(b));
    }

    #[test]
    fn any_payload_never_panics(events in prop::collection::vec(wild_event(), 0..40)) {
        let v = view(events);
        prop_assert!(serde_json::to_string(&v).is_ok());
    }
}

#[test]
fn mixed_part_and_id_less_text_on_one_block_never_panics() {
    // A Kilo part holding a multi-byte char, then a BreadBoard delta for the same message
    // (untracked text after the part), then the part rewritten: the part's byte range must
    // still be found, not sliced mid-char.
    let part = |text: &str| {
        kilo(
            "message.part.updated",
            json!({"part": {"id": "p1", "messageID": "m1", "type": "text", "text": text}}),
        )
    };
    let v = view([
        part("é"),
        bb("assistant_delta", json!({"message_id": "m1", "text": "a"})),
        part("x"),
        kilo(
            "message.part.delta",
            json!({"messageID": "m1", "partID": "p1", "field": "text", "delta": "y"}),
        ),
    ]);
    assert_eq!(v.transcript.blocks.len(), 1);
    assert_eq!(blocks(&v)[0]["text"], "xya");
}

/// The blocks' kinds and texts, in order (`user:…`, `assistant:…`, `notice:…`, …).
fn outline(v: &SessionView) -> Vec<String> {
    v.transcript
        .blocks
        .iter()
        .map(|b| match b {
            Block::User(u) => {
                format!(
                    "user:{}",
                    v.transcript.text_at(u.text.as_ref().map(|t| t.text)).unwrap_or("")
                )
            }
            Block::Assistant(t) => format!("assistant:{}:{:?}", t.text, t.status),
            Block::Reasoning(t) => format!("reasoning:{}", t.text),
            Block::Tool(t) => format!("tool:{}", t.tool.as_deref().unwrap_or("")),
            Block::Approval(a) => format!("approval:{:?}", a.state),
            Block::Notice(n) => format!("notice:{:?}:{}", n.level, n.message),
        })
        .collect()
}

/// One demo-like turn: the same message id and turn numbers every time, as a replayed
/// script sends them.
fn replayed_turn(prompt: &str, reply: &str) -> Vec<RawEvent> {
    vec![
        bb("user_message", json!({"text": prompt})),
        bb("turn_start", json!({"turn": 1})).with_turn(1),
        bb("assistant.message.start", json!({"item_id": "msg_demo_1"})).with_turn(1),
        bb("assistant.message.delta", json!({"item_id": "msg_demo_1", "delta": reply}))
            .with_turn(1),
        bb("assistant.message.end", json!({"item_id": "msg_demo_1"})).with_turn(1),
        bb("completion", json!({"summary": {"completed": true, "reason": "demo"}})),
        bb("run_finished", json!({"completed": true, "reason": "replay"})),
    ]
}

#[test]
fn each_prompt_gets_its_own_reply_even_when_message_ids_repeat() {
    let mut events = replayed_turn("first", "one");
    events.extend(replayed_turn("second", "two"));
    events.extend(replayed_turn("third", "three"));
    let v = view(events);
    assert_eq!(
        outline(&v),
        [
            "user:first",
            "assistant:one:Complete",
            "user:second",
            "assistant:two:Complete",
            "user:third",
            "assistant:three:Complete",
        ]
    );
    assert_eq!(v.run.turns_started, 3);
    assert_eq!(v.run.summary.as_ref().and_then(|s| s.outcome), Some(crate::reduce::Outcome::Done));
    assert_eq!(v.title().as_deref(), Some("first"));
}

#[test]
fn a_stopped_turn_is_marked_stopped_once() {
    let v = view([
        bb("user_message", json!({"text": "go"})),
        bb("assistant.message.start", json!({"item_id": "m"})).with_turn(1),
        bb("assistant.message.delta", json!({"item_id": "m", "delta": "partial"})).with_turn(1),
        bb("permission_request", json!({"request_id": "p1", "tool": "bash"})),
        bb("completion", json!({"summary": {"completed": false, "reason": "stopped_by_user"}})),
        bb("run_finished", json!({"completed": false, "reason": "stopped_by_user"})),
    ]);
    assert_eq!(
        outline(&v),
        [
            "user:go",
            "assistant:partial:Stopped",
            "approval:Resolved { decision: \"withdrawn\" }",
            "notice:Stopped:Stopped",
        ]
    );
    assert_eq!(
        v.run.summary.as_ref().and_then(|s| s.outcome),
        Some(crate::reduce::Outcome::Stopped)
    );
    assert_eq!(v.run.errors, 0);
    // The next turn is not stopped.
    let mut v = v;
    for e in replayed_turn("again", "done") {
        v.apply_event(e);
    }
    assert_eq!(v.run.summary.as_ref().and_then(|s| s.outcome), Some(crate::reduce::Outcome::Done));
}

#[test]
fn a_todo_snapshot_result_fills_the_todos_not_a_tool_block() {
    let v = view([bb(
        "tool_result",
        json!({"call_id": "todo:snapshot:connect:1", "todo": {"op": "snapshot", "items": [
            {"id": "t1", "content": "Write it", "status": "in_progress"}]}}),
    )]);
    assert!(v.transcript.blocks.is_empty());
    assert_eq!(v.tasks.todos.len(), 1);
    assert_eq!(v.tasks.todos[0].content, "Write it");
}

#[test]
fn blocks_carry_the_prompt_they_answer() {
    let mut v = SessionView::new();
    for e in replayed_turn("hi", "hello") {
        v.apply_for(&Classified::new(e), Some("m-1"));
    }
    let ids: Vec<Option<&str>> = v
        .transcript
        .blocks
        .iter()
        .map(|b| match b {
            Block::User(u) => v.transcript.text_at(u.prompt_id),
            Block::Assistant(t) => v.transcript.text_at(t.prompt_id),
            _ => None,
        })
        .collect();
    assert_eq!(ids, [Some("m-1"), Some("m-1")]);
}

#[test]
fn tool_blocks_say_what_the_tool_did() {
    let v = view([
        kilo(
            "message.part.updated",
            json!({"part": {"type": "tool", "callID": "c1", "tool": "bash", "state": {
                "status": "completed", "input": {"command": "echo hi"}, "output": "hi\n",
                "metadata": {"exit": 0}}}}),
        ),
        bb(
            "tool_result",
            json!({"tool": "list_dir", "result": {"path": ".", "items": [{"path": "a", "type": "file"}],
                "entries": [{"path": "a", "type": "file"}, {"path": "src", "type": "dir"}]}}),
        ),
    ]);
    let b = blocks(&v);
    assert_eq!(b[0]["view"], json!({"type": "command", "command": "echo hi", "exitCode": 0}));
    assert_eq!(
        b[1]["view"],
        json!({"type": "files", "path": ".", "entries": [{"path": "a"}, {"path": "src", "dir": true}]})
    );
}

/// The bridge's `bb.prompt.closed` names which window's answer the engine took: the card's
/// update carries it, and the engine's own later report of the same answer keeps it.
#[test]
fn a_card_answered_by_a_window_says_which_and_keeps_it() {
    let mut v = view([kilo(
        "permission.asked",
        json!({"id": "per_1", "permission": "bash", "patterns": ["echo hi"]}),
    )]);
    let closed = kilo(
        "bb.prompt.closed",
        json!({"sessionID": "s", "requestId": "per_1", "decision": "allow_once",
               "answeredBy": {"connection": 2, "tabId": "tab-b"}}),
    );
    v.apply(&Classified::with_class(EventClass::PermissionResponse, closed));
    v.apply_event(kilo("permission.replied", json!({"requestID": "per_1", "reply": "once"})));
    let mut out = Vec::new();
    v.snapshot_updates(&mut out);
    let asks: Vec<Value> = out
        .iter()
        .map(|u| serde_json::from_str::<Value>(u.get()).unwrap())
        .filter(|u| u["kind"] == "permissionRequest")
        .collect();
    assert_eq!(asks.len(), 1, "{asks:#?}");
    assert_eq!(asks[0]["resolved"], true);
    assert_eq!(asks[0]["decision"], "allowed once");
    assert_eq!(asks[0]["answeredBy"], json!({"connection": 2, "tabId": "tab-b"}));
}
