//! The session view model and its pure, deterministic reducer: one [`Classified`] event (or
//! a coalesced batch) at a time into the transcript, tasks, run and debug lanes.

pub(crate) mod acp;
mod blocks;
mod debug;
mod run;
mod tasks;
mod transcript;

pub use blocks::{
    ApprovalBlock, ApprovalKind, ApprovalState, Block, BlockId, NoticeBlock, NoticeLevel,
    StreamStatus, TextBlock, ToolBlock, ToolStatus, UserBlock,
};
pub use debug::{DebugLane, UNKNOWN_KEPT, UNKNOWN_PAYLOAD_CAP, UnknownNode};
pub use run::{Checkpoint, FileChange, LogLink, RunLane, RunState, RunSummary};
pub use tasks::{TaskSignal, TaskStatus, TasksLane, Todo};
pub use transcript::Transcript;
pub(crate) use transcript::bb_message_id;

use serde::Serialize;

use crate::batch::Batch;
use crate::class::{Classified, EventClass};
use crate::event::{Engine, RawEvent};
use crate::truncate::BodyStore;

/// The view model of one session.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SessionView {
    /// Chat: user, assistant, reasoning, tool, approval and notice blocks.
    pub transcript: Transcript,
    /// Task tree and todos.
    pub tasks: TasksLane,
    /// Run state, checkpoints, links, summary.
    pub run: RunLane,
    /// Unknown events and counters.
    pub debug: DebugLane,
    /// Full bodies of truncated previews, by reference (not part of the serialized view).
    #[serde(skip)]
    pub bodies: BodyStore,
}

impl SessionView {
    /// An empty view.
    pub fn new() -> Self {
        Self::default()
    }

    /// Classifies and reduces one raw event; returns its class.
    pub fn apply_event(&mut self, event: RawEvent) -> EventClass {
        let item = Classified::new(event);
        self.apply(&item);
        item.class
    }

    /// Reduces every item of a batch, in order.
    pub fn apply_batch(&mut self, batch: &Batch) {
        for item in &batch.items {
            self.apply(item);
        }
    }

    /// The full body behind a preview's `bodyRef`.
    pub fn body(&self, body_ref: &str) -> Option<&str> {
        self.bodies.get(body_ref)
    }

    /// Reduces one classified event. Never panics, whatever the payload.
    pub fn apply(&mut self, item: &Classified) {
        use EventClass as C;
        let ev = &item.event;
        self.debug.seen(ev, item.event_count());
        if ev.id.is_none()
            && let Some(Some(id)) = item.absorbed_ids.iter().rev().find(|i| i.is_some())
        {
            self.debug.last_event_id = Some(id.clone());
        }
        let t = &mut self.transcript;
        let bodies = &mut self.bodies;
        match item.class {
            C::UserMessage if ev.kind == "user_message_chunk" => t.acp_user_chunk(ev, bodies),
            C::UserMessage => {
                t.turn_boundary(false);
                t.user_message(ev, bodies);
            }
            C::AssistantStream => match ev.kind.as_str() {
                "agent_message_chunk" => t.acp_chunk(ev, false),
                "message.updated" => t.kilo_message(ev),
                "message.part.updated" => t.kilo_text_part(ev, false, bodies),
                "message.part.delta" => t.kilo_delta(ev),
                "message.removed" | "message.part.removed" => {}
                _ => t.breadboard_assistant(ev),
            },
            C::ReasoningStream => match ev.kind.as_str() {
                "agent_thought_chunk" => t.acp_chunk(ev, true),
                "message.part.updated" => t.kilo_text_part(ev, true, bodies),
                _ => t.breadboard_reasoning(ev),
            },
            C::ToolCall | C::ToolResult if ev.engine == Engine::Acp => {
                if item.class == C::ToolCall {
                    t.tool_call(ev, bodies);
                } else {
                    t.tool_result(ev, bodies);
                }
                self.acp_tool_todos(ev);
            }
            C::ToolCall => t.tool_call(ev, bodies),
            C::ToolOutput => t.tool_output(ev),
            C::ToolResult => t.tool_result(ev, bodies),
            C::PermissionRequest => t.permission_request(ev),
            C::PermissionResponse => t.permission_response(ev),
            C::RunErrorOrGap if ev.engine == Engine::Acp => self.acp_notice(ev),
            C::RunErrorOrGap => {
                let (level, fallback) = match ev.kind.as_str() {
                    "stream.gap" => (NoticeLevel::Gap, "stream gap"),
                    "warning" => (NoticeLevel::Warning, "warning"),
                    _ => (NoticeLevel::Error, "error"),
                };
                t.error_notice(ev, level, fallback);
                self.run.error_or_gap(ev, level);
            }
            C::CheckpointList => self.run.checkpoints(ev),
            C::CheckpointRestored => {
                if let Some(id) = self.run.restored(ev) {
                    t.notice(ev, NoticeLevel::Info, &format!("checkpoint {id} restored"));
                }
            }
            C::TaskEvent if ev.engine == Engine::Acp => self.acp_task(ev),
            C::TaskEvent => self.tasks.task_event(ev),
            C::TaskTodo => self.tasks.todos(ev),
            C::RunLogLink => self.run.log_link(ev),
            C::RunStatus => self.run.status(ev),
            C::RunDiff => self.run.diff(ev),
            C::RunFinished => {
                t.turn_boundary(true);
                self.run.finished(ev);
            }
            C::TurnStart => {
                t.turn_boundary(false);
                self.run.turn_start(ev);
            }
            C::SessionInfo if ev.engine == Engine::Acp => self.acp_info(ev),
            C::SkillsCatalog
            | C::SkillsSelection
            | C::CtreeSnapshot
            | C::RewardUpdate
            | C::RunLimits
            | C::SessionInfo => self.run.info(item.class, ev),
            C::CtreeNode => self.debug.ctree_nodes += 1,
            C::Connection => self.debug.connection_events += 1,
            C::Unknown => {
                let node = self.debug.unknown(ev);
                tracing::debug!(
                    target: "bb_normalize::unknown_event",
                    event_type = %node.kind,
                    event_id = ?node.event_id,
                    payload_size = node.payload_size,
                    payload = %node.payload,
                    "unknown engine event kept in the debug lane"
                );
            }
        }
    }
}
