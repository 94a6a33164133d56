//! Agent Client Protocol updates outside the transcript's text and tools: the session's
//! title, usage and cost, available commands (the prompt box's `/` menu), config options
//! and mode in the run lane; the plan (and a todo tool's list) and sub-agents in the tasks
//! lane; notices and compactions as notice cards.

use serde_json::{Map, Value, json};

use super::SessionView;
use super::blocks::NoticeLevel;
use crate::event::RawEvent;
use crate::json::{at, str_at, string_at};
use crate::redact::redacted;

/// A copy of `ev` with another payload (to feed a lane's generic reduction).
fn with_payload(ev: &RawEvent, payload: Value) -> RawEvent {
    RawEvent {
        id: ev.id.clone(),
        engine: ev.engine,
        kind: ev.kind.clone(),
        session_id: ev.session_id.clone(),
        seq: ev.seq,
        turn: ev.turn,
        ts: ev.ts,
        payload: payload.into(),
    }
}

impl SessionView {
    /// `session.info` of an ACP agent: the run lane's session facts, compaction notices.
    pub(crate) fn acp_info(&mut self, ev: &RawEvent) {
        let p = &ev.payload;
        let run = &mut self.run;
        match &*ev.kind {
            "session_info_update" => match p.get("title") {
                Some(Value::String(t)) if !t.is_empty() => run.title = Some(t.clone()),
                Some(Value::Null) => run.title = None,
                _ => {}
            },
            "usage_update" => {
                let mut usage = Map::new();
                for field in ["used", "size", "cost"] {
                    if let Some(v) = p.get(field) {
                        usage.insert(field.to_owned(), redacted(v));
                    }
                }
                run.usage = Some(Value::Object(usage));
            }
            "available_commands_update" => {
                run.commands = p.get("availableCommands").map(redacted);
            }
            "config_option_update" => {
                run.config_options = p.get("configOptions").map(redacted);
                // A mode that is a config option is the session's mode too.
                let mode = p
                    .get("configOptions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .find(|o| str_at(o, &[&["category"]]) == Some("mode"))
                    .and_then(|o| string_at(o, &[&["currentValue"]]));
                if mode.is_some() {
                    run.mode = mode;
                }
            }
            "current_mode_update" => run.mode = string_at(p, &[&["currentModeId"]]),
            "compaction_update" | "compaction_summary_chunk" => self.transcript.acp_compaction(ev),
            _ => {}
        }
    }

    /// `run.error_or_gap` of an ACP agent: its notices and the bridge's own (refused file
    /// accesses, exits, restarts) as cards of their level.
    pub(crate) fn acp_notice(&mut self, ev: &RawEvent) {
        let level = self.transcript.acp_notice(ev);
        self.run.error_or_gap(ev, level);
    }

    /// `task.event` of an ACP agent: `subagent_update` announces (or updates) a child session
    /// as a task of this one; `subagent_activity` is the bridge's report of what it does.
    pub(crate) fn acp_task(&mut self, ev: &RawEvent) {
        if ev.kind != "subagent_update" {
            self.tasks.task_event(ev);
            return;
        }
        let p = &ev.payload;
        let Some(child) = string_at(p, &[&["sessionId"]]) else { return };
        let status = match (
            str_at(p, &[&["state", "state"]]),
            str_at(p, &[&["state", "stopReason", "type"]]),
        ) {
            (Some("running" | "requires_action"), _) => Some("running"),
            (Some("idle"), Some("error")) => Some("failed"),
            (Some("idle"), _) => Some("completed"),
            _ => None,
        };
        let mut task = json!({"taskId": child, "child_session_id": child});
        if let Some(s) = status {
            task["status"] = s.into();
        }
        if let Some(d) = string_at(p, &[&["title"], &["description"]]) {
            task["description"] = d.into();
        }
        self.tasks.task_event(&with_payload(ev, task));
    }

    /// An ACP tool call whose input is a todo list (`rawInput.todos`, the todo tool of Kilo
    /// and opencode, which send no `plan`): the tasks lane's todos.
    pub(crate) fn acp_tool_todos(&mut self, ev: &RawEvent) {
        if let Some(todos) = at(&ev.payload, &["rawInput", "todos"]).filter(|t| t.is_array()) {
            let payload = json!({"todos": todos});
            self.tasks.todos(&with_payload(ev, payload));
        }
    }
}

/// The level of an ACP notice-class event.
pub(crate) fn notice_level(ev: &RawEvent) -> NoticeLevel {
    match &*ev.kind {
        "notice" => match str_at(&ev.payload, &[&["severity"]]) {
            Some("error") => NoticeLevel::Error,
            Some("warning") => NoticeLevel::Warning,
            _ => NoticeLevel::Info,
        },
        "session_resumed" => NoticeLevel::Info,
        "fs_refused" | "agent_restarting" | "session_resume_failed" | "prompts_withdrawn" => {
            NoticeLevel::Warning
        }
        _ => NoticeLevel::Error,
    }
}
