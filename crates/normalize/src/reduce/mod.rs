//! The session view model and its pure, deterministic reducer: one [`Classified`] event (or
//! a coalesced batch) at a time into the transcript, tasks, run and debug lanes.

pub(crate) mod acp;
mod arena;
mod blocks;
mod debug;
mod run;
mod tasks;
mod transcript;
mod updates;

use std::borrow::Cow;

pub use arena::TextRef;
pub use blocks::{
    ApprovalBlock, ApprovalKind, ApprovalState, Block, BlockId, NoticeBlock, NoticeLevel,
    StreamStatus, TextBlock, ToolBlock, ToolStatus, UserBlock, UserText,
};
pub use debug::{DebugLane, UNKNOWN_KEPT, UNKNOWN_PAYLOAD_CAP, UnknownNode};
pub use run::{Checkpoint, FileChange, LogLink, Outcome, RunLane, RunState, RunSummary};
pub use tasks::{TaskSignal, TaskStatus, TasksLane, Todo};
pub use transcript::{BlocksJson, Transcript};
pub use updates::{Earlier, UPDATE_TEXT_CHUNK, UpdateList};

use serde::Serialize;

use crate::batch::Batch;
use crate::class::{Classified, EventClass};
use crate::event::{Engine, RawEvent};
use crate::truncate::BodyStore;

/// What a stopped turn's card says.
const STOPPED: &str = "Stopped";

/// Whether a BreadBoard `tool_result` is a todo snapshot (it carries a `todo` object).
fn todo_snapshot(ev: &RawEvent) -> bool {
    ev.engine == Engine::BreadBoard
        && ev.payload.get("todo").is_some_and(serde_json::Value::is_object)
}

/// Whether an error event says the user aborted the turn (Kilo `MessageAbortedError`).
fn aborted(ev: &RawEvent) -> bool {
    if ev.engine != Engine::Kilo {
        return false;
    }
    let f: ErrorEvent<'_> = ev.payload.read();
    f.error.get().is_some_and(crate::kilo::ErrorFields::aborted)
}

/// An error event's `error` object.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct ErrorEvent<'a> {
    #[serde(borrow)]
    error: bb_payload::LooseObj<crate::kilo::ErrorFields<'a>>,
}

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
    /// The run lane as it is was sent (by the last updates taken).
    #[serde(skip)]
    run_sent: bool,
    /// Unknown events the updates taken so far carried.
    #[serde(skip)]
    unknown_sent: u64,
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

    /// Reduces one classified event of the reply to the webview prompt `prompt` (its
    /// `messageId`, when the webview gave one): the blocks it makes carry it.
    pub fn apply_for(&mut self, item: &Classified, prompt: Option<&str>) {
        self.transcript.set_prompt(prompt);
        self.apply(item);
    }

    /// Reduces a prompt event of another session, `owner` (a sub-agent's permission request,
    /// question or what settled it, shown on this session's tab), in the reply to `prompt`:
    /// only its card changes, and the card names `owner`, the session an answer goes to.
    pub fn apply_foreign(&mut self, item: &Classified, prompt: Option<&str>, owner: &str) {
        let t = &mut self.transcript;
        t.set_prompt(prompt);
        t.set_owner(Some(owner));
        match item.class {
            EventClass::PermissionRequest => t.permission_request(&item.event),
            EventClass::PermissionResponse => t.permission_response(&item.event),
            _ => {}
        }
        t.set_owner(None);
    }

    /// Gives back the room the transcript's lists grew beyond their blocks (called when the
    /// engine went quiet after a burst; the next block grows them again).
    pub fn release_spare(&mut self) {
        self.transcript.release_spare();
    }

    /// A title for the session: the engine's, else the first line of its first prompt (cut
    /// at 60 characters, the one case that builds a string: `bb/state` asks at every poll).
    pub fn title(&self) -> Option<Cow<'_, str>> {
        if let Some(t) = &self.run.title {
            return Some(Cow::Borrowed(t));
        }
        let first = self.transcript.first_prompt()?.lines().find(|l| !l.trim().is_empty())?;
        let first = first.trim();
        Some(match first.char_indices().nth(60) {
            Some((cut, _)) => Cow::Owned(format!("{}…", first[..cut].trim_end())),
            None => Cow::Borrowed(first),
        })
    }

    /// Reduces one classified event. Never panics, whatever the payload.
    pub fn apply(&mut self, item: &Classified) {
        use EventClass as C;
        let ev = &item.event;
        if !matches!(
            item.class,
            C::UserMessage
                | C::AssistantStream
                | C::ReasoningStream
                | C::ToolCall
                | C::ToolOutput
                | C::ToolResult
                | C::PermissionRequest
                | C::PermissionResponse
                | C::TaskEvent
                | C::TaskTodo
                | C::CtreeNode
                | C::Connection
                | C::Unknown
        ) {
            self.run_sent = false;
        }
        self.debug.seen(ev, item.event_count());
        if ev.id.is_none()
            && let Some(id) = &item.absorbed_last_id
        {
            self.debug.last_event_id = Some(id.clone());
        }
        let t = &mut self.transcript;
        let bodies = &mut self.bodies;
        match item.class {
            C::UserMessage if ev.kind == "user_message_chunk" => {
                if t.acp_user_chunk(ev, bodies) {
                    self.run.next_turn();
                }
            }
            C::UserMessage => {
                t.turn_boundary(None);
                if t.user_message(ev, bodies) {
                    self.run.next_turn();
                }
            }
            C::AssistantStream => match &*ev.kind {
                "agent_message_chunk" => t.acp_chunk(ev, false),
                "message.updated" => t.kilo_message(ev),
                "message.part.updated" => t.kilo_text_part(ev, false, bodies),
                "message.part.delta" => t.kilo_delta(ev),
                "message.removed" | "message.part.removed" => {}
                _ => t.breadboard_assistant(ev),
            },
            C::ReasoningStream => match &*ev.kind {
                "agent_thought_chunk" => t.acp_chunk(ev, true),
                "message.part.updated" => t.kilo_text_part(ev, true, bodies),
                _ => t.breadboard_reasoning(ev),
            },
            C::ToolCall | C::ToolResult if ev.engine == Engine::Acp => {
                if item.class == C::ToolCall {
                    t.tool_call(ev, bodies);
                } else if let Some(b) = t.tool_result(ev, bodies) {
                    self.run.changed_by(b);
                }
                self.acp_tool_todos(ev);
            }
            C::ToolCall => t.tool_call(ev, bodies),
            C::ToolOutput => t.tool_output(ev),
            // BreadBoard's todo snapshots travel as `tool_result`s carrying a `todo` object:
            // the class stays the spec's, the todo list is what they change.
            C::ToolResult if todo_snapshot(ev) => self.tasks.todos(ev),
            C::ToolResult => {
                if let Some(b) = t.tool_result(ev, bodies) {
                    self.run.changed_by(b);
                }
            }
            C::PermissionRequest => t.permission_request(ev),
            C::PermissionResponse => t.permission_response(ev),
            C::RunErrorOrGap if aborted(ev) => {
                // Kilo says a stopped turn with `MessageAbortedError`: a stop, not a failure.
                if self.run.stopped() {
                    t.notice(ev, NoticeLevel::Stopped, STOPPED);
                }
            }
            C::RunErrorOrGap if ev.engine == Engine::Acp => self.acp_notice(ev),
            C::RunErrorOrGap => {
                let (level, fallback) = match &*ev.kind {
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
                if RunLane::finish_says_stopped(ev) && self.run.stopped() {
                    t.notice(ev, NoticeLevel::Stopped, STOPPED);
                }
                let stopped = self.run.stopped_now();
                t.turn_boundary(Some(if stopped {
                    StreamStatus::Stopped
                } else {
                    StreamStatus::Complete
                }));
                t.withdraw_pending();
                self.run.finished(ev);
            }
            C::TurnStart => {
                t.turn_boundary(None);
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
