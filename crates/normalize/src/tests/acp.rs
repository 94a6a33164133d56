//! ACP events: every `session/update` kind gets its class, and a turn (captured from the
//! real `kilo acp`: user chunk, agent chunks, a tool call asking permission, its update, a
//! plan) reduces into the same view blocks as any engine's.

use serde_json::{Value, json};

use crate::class::{EventClass, classify};
use crate::event::{Engine, RawEvent};
use crate::reduce::{Block, NoticeLevel, SessionView, TaskStatus};

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
        (json!({"sessionUpdate": "notice", "severity": "info", "title": "x"}), C::RunErrorOrGap),
        (json!({"sessionUpdate": "compaction_update", "compactionId": "c"}), C::SessionInfo),
        (json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": "c"}), C::SessionInfo),
        (json!({"sessionUpdate": "subagent_update", "sessionId": "child"}), C::TaskEvent),
        (json!({"type": "elicitation"}), C::PermissionRequest),
        (json!({"type": "elicitation_settled"}), C::PermissionResponse),
        (json!({"type": "terminal_output"}), C::ToolOutput),
        (json!({"type": "fs_write"}), C::RunDiff),
        (json!({"type": "fs_refused"}), C::RunErrorOrGap),
        (json!({"type": "prompts_withdrawn", "count": 1}), C::RunErrorOrGap),
        (json!({"sessionUpdate": "a_future_kind"}), C::Unknown),
    ];
    for (event, class) in table {
        assert_eq!(classify(&acp(event.clone())), class, "{event}");
    }
    assert!(RawEvent::from_value(Engine::Acp, json!({"no": "kind"}), None).is_err());
}

#[test]
fn a_user_message_sent_in_many_chunks_reads_whole() {
    // Each chunk rewrites the user block's text: the arena compacts its garbage, and every
    // id still reads back.
    let mut v = SessionView::new();
    let mut want = String::new();
    for n in 0..300 {
        let piece = format!("word{n} ");
        want.push_str(&piece);
        v.apply_event(acp(json!({"sessionUpdate": "user_message_chunk", "messageId": "u1",
            "content": {"type": "text", "text": piece}})));
        v.apply_event(acp(json!({"sessionUpdate": "agent_message_chunk",
            "messageId": format!("m{n}"), "content": {"type": "text", "text": "ok"}})));
    }
    let blocks = serde_json::to_value(v.transcript.blocks_json()).unwrap();
    let users: Vec<&Value> =
        blocks.as_array().unwrap().iter().filter(|b| b["kind"] == "user").collect();
    assert_eq!(users.len(), 1);
    assert_eq!(users[0]["messageId"], "u1");
    assert_eq!(users[0]["text"]["text"], want.as_str());
    assert_eq!(v.transcript.first_prompt(), Some(want.as_str()));
    let ids: Vec<&str> =
        blocks.as_array().unwrap().iter().filter_map(|b| b["messageId"].as_str()).collect();
    assert_eq!(ids.len(), 301);
    assert_eq!(ids[300], "m299");
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
    let blocks = serde_json::to_value(v.transcript.blocks_json()).unwrap();
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

/// Every `session/update` an agent sent in the recorded frames of `fixtures/acp/<agent>/`
/// (`kilo` and `opencode`: the real agents; `capable`: `fixtures/acp/capable_agent.py`, for
/// the kinds the real agents never send), per file, in order.
fn recorded(agent: &str) -> Vec<(String, Vec<RawEvent>)> {
    let dir =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/acp").join(agent);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no recorded frames in {}", dir.display());
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let updates = text
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .filter(|f| f["dir"] == "in" && f["msg"]["method"] == "session/update")
                .map(|f| {
                    // As the sidecar's adapter does: the update's own `sessionId` (a child
                    // session's, in `subagent_update`) is kept.
                    let mut update = f["msg"]["params"]["update"].clone();
                    if update.get("sessionId").is_none() {
                        update["sessionId"] = f["msg"]["params"]["sessionId"].clone();
                    }
                    RawEvent::from_value(Engine::Acp, update, None).unwrap()
                })
                .collect();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            (name, updates)
        })
        .collect()
}

/// A file's updates reduced into one view (every session's updates into it, in order).
fn view_of(agent: &str, file: &str) -> SessionView {
    let (_, events) = recorded(agent).into_iter().find(|(n, _)| n == file).unwrap();
    let mut v = SessionView::new();
    for e in events {
        v.apply_event(e);
    }
    v
}

#[test]
fn every_stable_update_kind_is_recorded_and_classified() {
    use EventClass as C;
    // Schema 1.17's stable kinds, and the unstable `subagent_update` the bridge also maps.
    let table = [
        ("user_message_chunk", C::UserMessage),
        ("agent_message_chunk", C::AssistantStream),
        ("agent_thought_chunk", C::ReasoningStream),
        ("tool_call", C::ToolCall),
        ("tool_call_update", C::ToolCall),
        ("plan", C::TaskTodo),
        ("available_commands_update", C::SessionInfo),
        ("current_mode_update", C::SessionInfo),
        ("config_option_update", C::SessionInfo),
        ("session_info_update", C::SessionInfo),
        ("usage_update", C::SessionInfo),
        ("notice", C::RunErrorOrGap),
        ("compaction_update", C::SessionInfo),
        ("compaction_summary_chunk", C::SessionInfo),
        ("subagent_update", C::TaskEvent),
    ];
    let mut seen = std::collections::BTreeMap::new();
    for agent in ["kilo", "opencode", "capable"] {
        for (file, events) in recorded(agent) {
            for ev in events {
                let class = classify(&ev);
                seen.entry(ev.kind.clone()).or_insert_with(|| (agent, file.clone(), class));
            }
        }
    }
    for (kind, class) in table {
        let Some((agent, file, got)) = seen.get(kind) else {
            panic!("no recorded frame has a {kind} update");
        };
        // A finished tool call is a result; the first one recorded of each kind is not.
        assert!(
            *got == class || (kind.starts_with("tool_call") && *got == C::ToolResult),
            "{kind} (first in {agent}/{file}) is {got:?}, not {class:?}"
        );
    }
    // The one kind no schema has is kept in the debug lane, counted.
    assert_eq!(seen["future_kind"].2, C::Unknown);
    let v = view_of("capable", "notices_compaction_subagent");
    assert_eq!(v.debug.unknown_count, 1, "{:?}", v.debug);
}

#[test]
fn kilo_frames_show_text_usage_commands_and_the_model_switch() {
    let v = view_of("kilo", "text_turn");
    let blocks = serde_json::to_value(v.transcript.blocks_json()).unwrap().to_string();
    assert!(blocks.contains("hello from acp"), "{blocks}");
    assert_eq!(v.run.usage.as_ref().unwrap()["size"], 128000);
    assert_eq!(v.run.usage.as_ref().unwrap()["cost"]["currency"], "USD");
    // Kilo announces its commands (the `/` menu) right after `session/new`.
    let v = view_of("kilo", "initialize_new");
    let commands = v.run.commands.as_ref().unwrap().to_string();
    assert!(commands.contains("\"init\""), "the `/` menu: {commands}");
    // After `session/set_config_option model`, the other model's context window is used.
    let v = view_of("kilo", "config_model_switch");
    assert_eq!(v.run.usage.as_ref().unwrap()["size"], 64000);
    // A todo tool's list (Kilo sends no `plan`) fills the tasks lane.
    for agent in ["kilo", "opencode"] {
        let v = view_of(agent, "todo_tool");
        let todos: Vec<(&str, TaskStatus)> =
            v.tasks.todos.iter().map(|t| (t.content.as_str(), t.status)).collect();
        assert_eq!(
            todos,
            [("first", TaskStatus::Running), ("second", TaskStatus::Queued)],
            "{agent}"
        );
    }
    // A command's output reaches its tool block; the load replays the user's words.
    let v = view_of("kilo", "permission_bash");
    assert!(
        serde_json::to_value(v.transcript.blocks_json()).unwrap().to_string().contains("zebra42")
    );
    let v = view_of("kilo", "session_lifecycle");
    let users = v.transcript.blocks.iter().filter(|b| matches!(b, Block::User(_))).count();
    assert!(users >= 5, "the replayed user messages: {users}");
}

#[test]
fn capable_frames_show_plan_title_mode_notices_compaction_and_subagents() {
    let v = view_of("capable", "session_facts");
    let blocks = serde_json::to_value(v.transcript.blocks_json()).unwrap().to_string();
    assert!(blocks.contains("thinking it over"), "{blocks}");
    let todos: Vec<&str> = v.tasks.todos.iter().map(|t| t.content.as_str()).collect();
    assert_eq!(todos, ["read the code", "fix the bug"]);
    assert_eq!(v.run.title.as_deref(), Some("Fixing the bug"));
    assert_eq!(v.run.usage.as_ref().unwrap()["cost"]["amount"], 0.25);
    // `current_mode_update` said plan; the config options that came after still say build.
    assert_eq!(v.run.mode.as_deref(), Some("build"));
    assert!(v.run.config_options.as_ref().unwrap().to_string().contains("fake/b"));

    let v = view_of("capable", "notices_compaction_subagent");
    let notices: Vec<(NoticeLevel, &str)> = v
        .transcript
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Notice(n) => Some((n.level, n.message.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        notices,
        [
            (NoticeLevel::Warning, "Rate limited: from the capable agent"),
            (NoticeLevel::Info, "context compaction completed — kept the plan"),
        ]
    );
    assert_eq!(v.run.errors, 0, "a warning notice is no error");
    let tasks = serde_json::to_value(&v.tasks).unwrap();
    let child = &tasks["tree"][0];
    assert_eq!(child["taskId"], "cap-1-child", "{tasks}");
    assert_eq!(child["description"], "explore");
    assert_eq!(child["status"], "completed");

    let v = view_of("capable", "client_capabilities");
    let blocks = serde_json::to_value(v.transcript.blocks_json()).unwrap().to_string();
    assert!(blocks.contains("term42"), "the terminal's output in its tool block: {blocks}");
}

#[test]
fn bridge_events_of_the_acp_client_reduce() {
    let mut v = SessionView::new();
    let events = [
        json!({"type": "tool_call", "toolCallId": "call_t", "kind": "execute", "status": "in_progress", "content": [{"type": "terminal", "terminalId": "term-1"}]}),
        json!({"type": "terminal_output", "terminalId": "term-1", "toolCallId": "call_t", "output": "line one\n"}),
        json!({"type": "terminal_output", "terminalId": "term-1", "toolCallId": "call_t", "output": "line two\n"}),
        json!({"type": "elicitation", "requestId": "7", "mode": "form", "title": "Who are you?"}),
        json!({"type": "elicitation_settled", "requestId": "7", "decision": "accept"}),
        json!({"type": "fs_write", "path": "/w/out.txt", "file": "/w/out.txt"}),
        json!({"type": "fs_refused", "op": "read", "path": "/etc/passwd", "message": "/etc/passwd is outside the workspace"}),
        json!({"type": "agent_exited", "reason": "the agent exited (killed by signal 9)"}),
        json!({"type": "agent_restarting", "message": "restarting it (attempt 1)"}),
        json!({"type": "session_resumed", "message": "the session was reopened (resume)"}),
    ];
    let classes: Vec<EventClass> = events.into_iter().map(|e| v.apply_event(acp(e))).collect();
    use EventClass as C;
    assert_eq!(
        classes,
        [
            C::ToolCall,
            C::ToolOutput,
            C::ToolOutput,
            C::PermissionRequest,
            C::PermissionResponse,
            C::RunDiff,
            C::RunErrorOrGap,
            C::RunErrorOrGap,
            C::RunErrorOrGap,
            C::RunErrorOrGap
        ]
    );
    let blocks = serde_json::to_value(v.transcript.blocks_json()).unwrap();
    let text = blocks.to_string();
    assert!(text.contains("line one\\nline two"), "{blocks:#}");
    let question = blocks.as_array().unwrap().iter().find(|b| b["kind"] == "approval").unwrap();
    assert_eq!(question["approval"], "question", "{question}");
    assert_eq!(question["state"]["decision"], "accept");
    assert_eq!(v.run.changed_files[0].path, "/w/out.txt");
    let levels: Vec<NoticeLevel> = v
        .transcript
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Notice(n) => Some(n.level),
            _ => None,
        })
        .collect();
    assert_eq!(
        levels,
        [NoticeLevel::Warning, NoticeLevel::Error, NoticeLevel::Warning, NoticeLevel::Info]
    );
    assert_eq!(v.run.errors, 1, "only the exit is an error");
}

/// The view's updates of `v` as JSON, the whole view (a resync's).
fn snapshot(v: &SessionView) -> Vec<Value> {
    let mut out = Vec::new();
    v.snapshot_updates(&mut out);
    out.iter().map(|u| serde_json::from_str(u.get()).unwrap()).collect()
}

#[test]
fn the_run_update_carries_usage_commands_and_config_options_from_recorded_frames() {
    // What the page's pickers, usage line and `/` menu are drawn from.
    for (agent, file) in [("kilo", "initialize_new"), ("capable", "initialize_new")] {
        let mut v = view_of(agent, file);
        // The config options of `session/new`'s answer, reported by the bridge as an update.
        let path =
            format!("{}/../../fixtures/acp/{agent}/{file}.jsonl", env!("CARGO_MANIFEST_DIR"));
        let options = std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find_map(|f| f["msg"]["result"].get("configOptions").cloned())
            .unwrap_or_else(|| panic!("{agent}: session/new answers config options"));
        v.apply_event(acp(
            json!({"sessionUpdate": "config_option_update", "configOptions": options}),
        ));
        let run = snapshot(&v).into_iter().find(|u| u["kind"] == "run").unwrap();
        let model = run["configOptions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["category"] == "model")
            .unwrap_or_else(|| panic!("{agent}: a model picker: {run:#}"));
        assert_eq!(model["kind"], "select", "{model}");
        let value = model["value"].as_str().unwrap();
        assert!(
            model["options"].as_array().unwrap().iter().any(|c| c["value"] == value),
            "{agent}: the current model is one of its choices: {model}"
        );
        assert!(!run["commands"].as_array().unwrap().is_empty(), "{agent}: the `/` menu: {run}");
    }
    let v = view_of("capable", "session_facts");
    let run = snapshot(&v).into_iter().find(|u| u["kind"] == "run").unwrap();
    assert_eq!(
        run["usage"],
        json!({"used": 1200, "size": 64000, "cost": {"amount": 0.25, "currency": "USD"}}),
        "{run}"
    );
    // Grouped choices are flattened, each naming its group; a boolean is a switch; an option
    // of an unknown type is left out.
    let mut v = SessionView::new();
    v.apply_event(acp(json!({"sessionUpdate": "config_option_update", "configOptions": [
        {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "b",
         "options": [{"group": "g1", "name": "Group one", "options": [{"value": "a", "name": "A"}]},
                     {"group": "g2", "name": "Group two", "options": [{"value": "b", "name": "B"}]}]},
        {"id": "fast", "name": "Fast", "type": "boolean", "currentValue": true},
        {"id": "odd", "name": "Odd", "type": "slider", "currentValue": 3}
    ]})));
    v.apply_event(acp(json!({"sessionUpdate": "available_commands_update", "availableCommands": [
        {"name": "review", "description": "Review", "input": {"hint": "what"}}, {"description": "nameless"}
    ]})));
    let run = snapshot(&v).into_iter().find(|u| u["kind"] == "run").unwrap();
    assert_eq!(
        run["configOptions"],
        json!([
            {"id": "model", "name": "Model", "category": "model", "kind": "select", "value": "b",
             "options": [{"value": "a", "name": "A", "group": "Group one"},
                         {"value": "b", "name": "B", "group": "Group two"}]},
            {"id": "fast", "name": "Fast", "kind": "boolean", "on": true}
        ])
    );
    assert_eq!(
        run["commands"],
        json!([{"name": "review", "description": "Review", "hint": "what"}])
    );
}

#[test]
fn an_elicitation_form_is_one_card_with_a_question_per_field() {
    let mut v = SessionView::new();
    v.apply_event(acp(json!({"type": "elicitation", "requestId": "9", "mode": "form",
        "title": "Tell me about the release", "requestedSchema": {"type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name"},
            "color": {"type": "string", "enum": ["red", "blue"], "default": "blue"},
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small", "description": "fits"}]},
            "count": {"type": "integer", "title": "Count", "description": "How many"},
            "ratio": {"type": "number"},
            "ok": {"type": "boolean", "default": true},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}
        },
        "required": ["name", "count"]}})));
    let ask = snapshot(&v).into_iter().find(|u| u["kind"] == "permissionRequest").unwrap();
    assert_eq!(ask["ask"], "question");
    assert_eq!(ask["prompt"], "Tell me about the release");
    assert_eq!(
        ask["questions"],
        json!([
            {"question": "Name", "options": [], "field": "name", "input": "text", "required": true},
            {"question": "color", "options": [{"label": "red", "value": "red"}, {"label": "blue", "value": "blue"}],
             "field": "color", "default": "blue"},
            {"question": "size", "options": [{"label": "Small", "value": "s", "description": "fits"}], "field": "size"},
            {"question": "How many", "header": "Count", "options": [], "field": "count", "input": "integer", "required": true},
            {"question": "ratio", "options": [], "field": "ratio", "input": "number"},
            {"question": "ok", "options": [], "field": "ok", "input": "boolean", "default": "true"},
            {"question": "tags", "options": [{"label": "a", "value": "a"}, {"label": "b", "value": "b"}],
             "multiple": true, "field": "tags"}
        ])
    );
}
