//! Event classes: every raw engine type, of either engine, classified once into the stable
//! classes of the event-normalization spec (plus a few the spec's table does not need).

use bb_protocol::v1::EventId;
use serde::Serialize;
use serde_json::Value;

use crate::event::{Engine, Payload, RawEvent};
use crate::json::str_at;
use crate::kilo;

/// The stable class of an event; decides which lane of the view it touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[non_exhaustive]
pub enum EventClass {
    /// `transcript.user_message`: appends an immutable user block.
    #[serde(rename = "transcript.user_message")]
    UserMessage,
    /// `transcript.assistant_stream`: appends or updates the assistant block of a message.
    #[serde(rename = "transcript.assistant_stream")]
    AssistantStream,
    /// `transcript.reasoning_stream`: reasoning / thought-summary text of a message.
    #[serde(rename = "transcript.reasoning_stream")]
    ReasoningStream,
    /// `tool.call`: opens (or updates) a tool block, `running`.
    #[serde(rename = "tool.call")]
    ToolCall,
    /// `tool.output`: streamed stdout/stderr of a running tool.
    #[serde(rename = "tool.output")]
    ToolOutput,
    /// `tool.result`: closes the matching tool block with a compact preview.
    #[serde(rename = "tool.result")]
    ToolResult,
    /// `permission.request`: an actionable approval (or question) card.
    #[serde(rename = "permission.request")]
    PermissionRequest,
    /// `permission.response`: resolves the matching approval card.
    #[serde(rename = "permission.response")]
    PermissionResponse,
    /// `checkpoint.list`: replaces the run lane's checkpoint list.
    #[serde(rename = "checkpoint.list")]
    CheckpointList,
    /// `checkpoint.restored`: marks a checkpoint restored (run lane + chat notice).
    #[serde(rename = "checkpoint.restored")]
    CheckpointRestored,
    /// `task.event`: updates the task tree.
    #[serde(rename = "task.event")]
    TaskEvent,
    /// `task.todo`: replaces the todo list of the tasks lane.
    #[serde(rename = "task.todo")]
    TaskTodo,
    /// `skills.catalog`: the skills catalog (run/debug).
    #[serde(rename = "skills.catalog")]
    SkillsCatalog,
    /// `skills.selection`: the skills selection (run/debug).
    #[serde(rename = "skills.selection")]
    SkillsSelection,
    /// `ctree.node`: one context-tree node (counted in the debug lane).
    #[serde(rename = "ctree.node")]
    CtreeNode,
    /// `ctree.snapshot`: context-tree snapshot summary (run/debug).
    #[serde(rename = "ctree.snapshot")]
    CtreeSnapshot,
    /// `reward.update`: reward summary (run lane).
    #[serde(rename = "reward.update")]
    RewardUpdate,
    /// `run.log_link`: an artifact link (run lane).
    #[serde(rename = "run.log_link")]
    RunLogLink,
    /// `run.status`: busy/idle state of the run.
    #[serde(rename = "run.status")]
    RunStatus,
    /// `run.limits`: provider rate-limit buckets (run lane).
    #[serde(rename = "run.limits")]
    RunLimits,
    /// `run.diff`: files changed by the run (run lane).
    #[serde(rename = "run.diff")]
    RunDiff,
    /// `run.finished`: finalizes the run summary.
    #[serde(rename = "run.finished")]
    RunFinished,
    /// `run.error_or_gap`: a high-visibility error, warning or gap card.
    #[serde(rename = "run.error_or_gap")]
    RunErrorOrGap,
    /// `turn.start`: a turn begins.
    #[serde(rename = "turn.start")]
    TurnStart,
    /// `session.info`: session metadata (title) and other known events without a view
    /// change of their own (step markers, queue changes).
    #[serde(rename = "session.info")]
    SessionInfo,
    /// `connection`: connection- and instance-level events (connected, heartbeat, sync,
    /// instance noise); kept out of the view and not counted as unknown.
    #[serde(rename = "connection")]
    Connection,
    /// `unknown_event`: anything else; kept in the debug lane only, and counted.
    #[serde(rename = "unknown_event")]
    Unknown,
}

impl EventClass {
    /// Every class.
    pub const ALL: [EventClass; 27] = [
        Self::UserMessage,
        Self::AssistantStream,
        Self::ReasoningStream,
        Self::ToolCall,
        Self::ToolOutput,
        Self::ToolResult,
        Self::PermissionRequest,
        Self::PermissionResponse,
        Self::CheckpointList,
        Self::CheckpointRestored,
        Self::TaskEvent,
        Self::TaskTodo,
        Self::SkillsCatalog,
        Self::SkillsSelection,
        Self::CtreeNode,
        Self::CtreeSnapshot,
        Self::RewardUpdate,
        Self::RunLogLink,
        Self::RunStatus,
        Self::RunLimits,
        Self::RunDiff,
        Self::RunFinished,
        Self::RunErrorOrGap,
        Self::TurnStart,
        Self::SessionInfo,
        Self::Connection,
        Self::Unknown,
    ];

    /// The class named `name` on the wire ([`EventClass::as_str`]), if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// The class name as it appears on the wire and in the spec's table.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UserMessage => "transcript.user_message",
            Self::AssistantStream => "transcript.assistant_stream",
            Self::ReasoningStream => "transcript.reasoning_stream",
            Self::ToolCall => "tool.call",
            Self::ToolOutput => "tool.output",
            Self::ToolResult => "tool.result",
            Self::PermissionRequest => "permission.request",
            Self::PermissionResponse => "permission.response",
            Self::CheckpointList => "checkpoint.list",
            Self::CheckpointRestored => "checkpoint.restored",
            Self::TaskEvent => "task.event",
            Self::TaskTodo => "task.todo",
            Self::SkillsCatalog => "skills.catalog",
            Self::SkillsSelection => "skills.selection",
            Self::CtreeNode => "ctree.node",
            Self::CtreeSnapshot => "ctree.snapshot",
            Self::RewardUpdate => "reward.update",
            Self::RunLogLink => "run.log_link",
            Self::RunStatus => "run.status",
            Self::RunLimits => "run.limits",
            Self::RunDiff => "run.diff",
            Self::RunFinished => "run.finished",
            Self::RunErrorOrGap => "run.error_or_gap",
            Self::TurnStart => "turn.start",
            Self::SessionInfo => "session.info",
            Self::Connection => "connection",
            Self::Unknown => "unknown_event",
        }
    }

    /// Events of these classes are published at once, whatever the cadence: an approval is
    /// waiting, something failed, or the run is over.
    pub fn flushes_immediately(self) -> bool {
        matches!(self, Self::PermissionRequest | Self::RunErrorOrGap | Self::RunFinished)
    }
}

impl std::fmt::Display for EventClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Classifies one event. Pure: the same event always gets the same class.
pub fn classify(ev: &RawEvent) -> EventClass {
    match ev.engine {
        Engine::BreadBoard => classify_breadboard(&ev.kind),
        Engine::Kilo => classify_kilo(&ev.kind, &ev.payload),
        Engine::Acp => classify_acp(&ev.kind, &ev.payload),
    }
}

/// Agent Client Protocol: every stable `session/update` kind of schema 1.17 (the
/// `sessionUpdate` field), the unstable `subagent_update`, and the events the bridge makes
/// for what ACP says outside updates (permission requests and elicitations and their
/// answers, turns, terminal output, file accesses, the agent's exits and restarts, session
/// close and resume). Any other kind is `unknown_event`.
pub fn classify_acp(kind: &str, payload: &Value) -> EventClass {
    use EventClass as C;
    match kind {
        "user_message_chunk" => C::UserMessage,
        "agent_message_chunk" => C::AssistantStream,
        "agent_thought_chunk" => C::ReasoningStream,
        "tool_call" | "tool_call_update" => match str_at(payload, &[&["status"]]) {
            Some("completed" | "failed") => C::ToolResult,
            _ => C::ToolCall,
        },
        "plan" => C::TaskTodo,
        "available_commands_update"
        | "current_mode_update"
        | "config_option_update"
        | "session_info_update"
        | "usage_update"
        | "compaction_update"
        | "compaction_summary_chunk"
        | "terminal_exited"
        | "fs_read"
        | "session_closed"
        | "elicitation_completed" => C::SessionInfo,
        "notice" => C::RunErrorOrGap,
        "subagent_update" | "subagent_activity" => C::TaskEvent,
        "request_permission" | "elicitation" => C::PermissionRequest,
        "permission_settled" | "elicitation_settled" => C::PermissionResponse,
        "turn_started" => C::TurnStart,
        "turn_ended" => C::RunFinished,
        "turn_error"
        | "agent_exited"
        | "agent_restarting"
        | "session_resumed"
        | "session_resume_failed"
        | "fs_refused"
        | "prompts_withdrawn" => C::RunErrorOrGap,
        "terminal_output" => C::ToolOutput,
        "fs_write" => C::RunDiff,
        _ => C::Unknown,
    }
}

/// BreadBoard types: the spec's table with every alias, plus the meaning-clear extras of the
/// engine's full type list (`tool.exec.*`, `warning`, `limits_update`).
pub fn classify_breadboard(kind: &str) -> EventClass {
    use EventClass as C;
    match kind {
        "user_message" => C::UserMessage,
        "assistant_message"
        | "assistant.message.start"
        | "assistant.message.delta"
        | "assistant.message.end"
        | "assistant_delta" => C::AssistantStream,
        "assistant.reasoning.delta" | "assistant.thought_summary.delta" => C::ReasoningStream,
        "tool_call" | "tool.exec.start" => C::ToolCall,
        "tool.exec.stdout.delta" | "tool.exec.stderr.delta" => C::ToolOutput,
        // The engine's todo snapshots travel as `tool_result`s with a `todo` object: still
        // `tool.result` (the spec's table); the reducer sends their todos to the tasks lane.
        "tool_result" | "tool.result" | "tool.exec.end" => C::ToolResult,
        "todo_update" => C::TaskTodo,
        "permission_request" => C::PermissionRequest,
        "permission_response" => C::PermissionResponse,
        "checkpoint_list" => C::CheckpointList,
        "checkpoint_restored" => C::CheckpointRestored,
        "task_event" => C::TaskEvent,
        "skills_catalog" => C::SkillsCatalog,
        "skills_selection" => C::SkillsSelection,
        "ctree_node" => C::CtreeNode,
        "ctree_snapshot" => C::CtreeSnapshot,
        "reward_update" => C::RewardUpdate,
        "log_link" => C::RunLogLink,
        "limits_update" => C::RunLimits,
        "completion" | "run_finished" => C::RunFinished,
        "error" | "stream.gap" | "warning" => C::RunErrorOrGap,
        "turn_start" => C::TurnStart,
        _ => C::Unknown,
    }
}

/// Kilo / opencode types (`event_shapes.json` and the OpenAPI `Event` union). Reads the
/// payload's [`KiloFields`] for the two types they decide.
pub fn classify_kilo(kind: &str, payload: &Payload) -> EventClass {
    match kind {
        "message.updated" => {
            let read: kilo::InfoFields<'_> = payload.read();
            let role = read.info.get().and_then(|i| kilo::non_empty(&i.role));
            classify_kilo_fields(kind, KiloFields { role, ..KiloFields::default() })
        }
        "message.part.updated" => {
            let read: kilo::PartKind<'_> = payload.read();
            let part = read.part.get();
            let fields = KiloFields {
                part: part.and_then(|p| kilo::non_empty(&p.kind)),
                tool_status: part
                    .and_then(|p| p.state.get())
                    .and_then(|s| kilo::non_empty(&s.status)),
                role: None,
            };
            classify_kilo_fields(kind, fields)
        }
        _ => classify_kilo_fields(kind, KiloFields::default()),
    }
}

/// What decides the class of a Kilo event besides its type, read from its payload: the
/// message's `info.role` (`message.updated`), the part's `type` and its `state.status`
/// (`message.part.updated`); each `None` when absent, empty or not a string. A caller
/// that reads these fields in its own pass classifies with [`classify_kilo_fields`] and
/// skips [`classify_kilo`]'s read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct KiloFields<'a> {
    /// `info.role`.
    pub role: Option<&'a str>,
    /// `part.type`.
    pub part: Option<&'a str>,
    /// `part.state.status`.
    pub tool_status: Option<&'a str>,
}

/// The class of a Kilo event of type `kind` whose payload holds `fields`.
pub fn classify_kilo_fields(kind: &str, fields: KiloFields<'_>) -> EventClass {
    use EventClass as C;
    match kind {
        "message.updated" => match fields.role {
            Some("user") => C::UserMessage,
            _ => C::AssistantStream,
        },
        "message.part.updated" => match fields.part {
            Some("text") => C::AssistantStream,
            Some("reasoning") => C::ReasoningStream,
            Some("tool") => match fields.tool_status {
                Some("completed" | "error") => C::ToolResult,
                _ => C::ToolCall,
            },
            Some("step-start" | "step-finish" | "patch" | "snapshot" | "agent" | "compaction") => {
                C::SessionInfo
            }
            _ => C::Unknown,
        },
        // A delta names only its part; the reducer routes it to the part's block.
        "message.part.delta" => C::AssistantStream,
        "message.removed" | "message.part.removed" => C::AssistantStream,
        "permission.asked" | "question.asked" => C::PermissionRequest,
        "permission.replied" | "question.replied" | "question.rejected" => C::PermissionResponse,
        "todo.updated" => C::TaskTodo,
        "session.status" | "session.idle" => {
            // `session.idle` ends a turn on opencode, which has no `session.turn.close`.
            if kind == "session.idle" { C::RunFinished } else { C::RunStatus }
        }
        "session.turn.open" => C::TurnStart,
        "session.turn.close" => C::RunFinished,
        "session.error" => C::RunErrorOrGap,
        "session.diff" | "file.edited" => C::RunDiff,
        "session.created"
        | "session.updated"
        | "session.deleted"
        | "session.compacted"
        | "session.queue.changed"
        | "session.drain.interrupted" => C::SessionInfo,
        "server.connected"
        | "server.heartbeat"
        | "server.instance.disposed"
        | "sync"
        | "plugin.added"
        | "project.updated"
        | "catalog.updated"
        | "integration.updated"
        | "reference.updated"
        | "file.watcher.updated"
        | "installation.updated"
        | "lsp.updated" => C::Connection,
        _ => C::Unknown,
    }
}

/// An event with its class, as the batcher queues it and the reducers consume it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Classified {
    /// The class, decided once.
    pub class: EventClass,
    /// The event. For a coalesced delta: the last delta with the text of all of them.
    pub event: RawEvent,
    /// How many earlier deltas were coalesced into this one.
    #[serde(skip_serializing_if = "is_zero")]
    pub absorbed: u64,
    /// The id of the latest of those that had one (untouched): the position a reader
    /// records when the item's own event has no id. Only that one is kept, not a list of
    /// them all: a list grew by a reallocation every few merged deltas, on every busy
    /// stream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub absorbed_last_id: Option<EventId>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Classified {
    /// Classifies an event.
    pub fn new(event: RawEvent) -> Self {
        Self::with_class(classify(&event), event)
    }

    /// An event whose class its adapter decided ([`classify`]'s, from what it read).
    pub fn with_class(class: EventClass, event: RawEvent) -> Self {
        Self { class, event, absorbed: 0, absorbed_last_id: None }
    }

    /// How many engine events this item stands for.
    pub fn event_count(&self) -> u64 {
        1 + self.absorbed
    }
}
