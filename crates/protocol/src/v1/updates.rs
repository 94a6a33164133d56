//! View-model updates (`WebviewUpdate`): what the host's reducers made of a batch of engine
//! events, in a shape a webview renders without knowing any engine. A `bb/events` message
//! carries them in `updates` when the webview asked for them (`bb.init({receive})`).
//!
//! Every update is keyed (a block `key`, a `taskId`, a file `path`, an unknown event's
//! number `n`, or one per session for `run` and `todos`) and idempotent: applying one twice,
//! or a resync's updates followed by the updates sent after it, gives the same state. Upserts
//! carry the whole state of what they key; text grows by `assistantDelta` updates that name the
//! offset they start at, so a stream is never resent whole and a repeated delta changes
//! nothing. Borrowed ([`Cow`]) fields let the host write updates without copying its view.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::AnsweredBy;

fn is_false(b: &bool) -> bool {
    !*b
}

/// What `bb/events` messages carry for a webview (`bb.init({receive})`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Receive {
    /// The engine events (`events`) only: what a webview that says nothing gets.
    #[default]
    Events,
    /// The view-model updates (`updates`) only; `events` is empty.
    Updates,
    /// Both: the events, then the updates made of them (a message carrying both stays
    /// under the size limit, else the updates follow in a message of their own).
    Both,
}

impl Receive {
    /// Whether engine events are sent.
    pub fn events(self) -> bool {
        matches!(self, Receive::Events | Receive::Both)
    }

    /// Whether updates are sent.
    pub fn updates(self) -> bool {
        matches!(self, Receive::Updates | Receive::Both)
    }
}

/// A text that may have been cut for display: the head and the tail of the whole text around
/// a marker line, with where to fetch the rest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TextPreview<'a> {
    /// The text to show.
    pub text: Cow<'a, str>,
    /// Set when the middle was cut (8 KiB / 200 lines kept).
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncated: bool,
    /// Bytes (UTF-8) of the whole text, when it was cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub total_bytes: Option<u64>,
    /// `bb.command {command: "body.get", args: {ref}}` (with the session's id) returns the
    /// whole text, paged, while the bridge holds it.
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub body_ref: Option<Cow<'a, str>>,
}

/// Streaming state of an assistant or reasoning message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum MessageStatus {
    /// Text may still grow.
    Streaming,
    /// The message is complete.
    Complete,
    /// The message ended with an error (see `error`).
    Error,
    /// The user stopped the turn while the message streamed.
    Stopped,
}

/// A user message (upsert by `key`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage<'a> {
    /// The block's key within the session (`b1`, `b2`, … in the order blocks appeared).
    pub key: Cow<'a, str>,
    /// The `messageId` of the `bb.sendMessage` that sent it, when the webview gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<Cow<'a, str>>,
    /// What the user wrote.
    pub text: TextPreview<'a>,
}

/// An assistant (or reasoning) message's state (upsert by `key`). Its text grows with
/// `assistantDelta` updates; `text`, when present, replaces the whole text (the engine rewrote
/// it, or a resync sends it whole).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage<'a> {
    /// The block's key within the session.
    pub key: Cow<'a, str>,
    /// The `messageId` of the `bb.sendMessage` this message answers, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<Cow<'a, str>>,
    /// Reasoning (thinking) rather than the answer.
    #[serde(default, skip_serializing_if = "is_false")]
    pub reasoning: bool,
    /// Streaming state.
    pub status: MessageStatus,
    /// Why the message failed (one line, redacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Cow<'a, str>>,
    /// The whole text, replacing what the webview holds; absent: the text is unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<Cow<'a, str>>,
}

/// Text appended to a message (`assistantDelta`, the spec's kind). `at` is the length of
/// the text before it, in UTF-16 code units (a JavaScript string's `length`): a webview
/// whose text is longer than `at` already has some or all of it and appends only the rest,
/// so a delta applied twice changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssistantDelta<'a> {
    /// The block's key (an [`AssistantMessage`] with it came before).
    pub key: Cow<'a, str>,
    /// Where the delta starts, in UTF-16 code units.
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub at: u64,
    /// The text to append.
    pub delta: Cow<'a, str>,
}

/// A tool call's state (`toolState`, the spec's kind; upsert by `key`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ToolRunState {
    /// Asked for, not started (waiting for an approval, for instance).
    Pending,
    /// Running.
    Running,
    /// Finished.
    Done,
    /// Failed (see `error`).
    Error,
}

/// One entry of a listing a tool made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolFile<'a> {
    /// The path, as the tool gave it.
    pub path: Cow<'a, str>,
    /// A directory.
    #[serde(default, skip_serializing_if = "is_false")]
    pub dir: bool,
}

/// A file a tool changed, as a unified diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolDiff<'a> {
    /// The file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<Cow<'a, str>>,
    /// The unified diff (`---`/`+++` headers, `@@` hunks, `+`/`-`/` ` lines).
    pub unified: TextPreview<'a>,
}

/// What a tool did, in the form a person reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum ToolView<'a> {
    /// A command line (its output is the tool's `output`).
    Command {
        /// The command.
        command: Cow<'a, str>,
        /// Its exit code, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i64>,
    },
    /// A file the tool read or wrote (its content, if shown, is the tool's `output`).
    File {
        /// The file.
        path: Cow<'a, str>,
    },
    /// A listing (shown instead of the tool's `output`).
    Files {
        /// The directory listed, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<Cow<'a, str>>,
        /// The entries (at most 200).
        entries: Vec<ToolFile<'a>>,
        /// Entries not listed here.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(range(max = crate::count::MAX_COUNT))]
        more: Option<u64>,
    },
    /// Changes as diffs (shown instead of the tool's `output`).
    Diff {
        /// One per file.
        files: Vec<ToolDiff<'a>>,
    },
}

/// A tool call (`toolState`, the spec's kind; upsert by `key`): the whole state each time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolState<'a> {
    /// The block's key within the session.
    pub key: Cow<'a, str>,
    /// The `messageId` of the `bb.sendMessage` whose turn made the call, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<Cow<'a, str>>,
    /// The engine's call id, when given (what a permission request names as `toolId`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_id: Option<Cow<'a, str>>,
    /// The tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<Cow<'a, str>>,
    /// Where the call is.
    pub state: ToolRunState,
    /// A title the engine gave the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<Cow<'a, str>>,
    /// A one-line summary of the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Cow<'a, str>>,
    /// What the tool did, in readable form, when the bridge recognizes the tool.
    // A `Cow`: the host writes the update from its view without copying a diff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<Cow<'a, ToolView<'a>>>,
    /// The call's input (arguments), as text; absent when `view` says what the call does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<TextPreview<'a>>,
    /// The call's output so far, as text; absent when `view` is a listing or diffs (they
    /// are what it shows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<TextPreview<'a>>,
    /// Why it failed (one line, redacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Cow<'a, str>>,
}

/// What an approval card asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AskKind {
    /// Permission for a tool: answer with `bb.approvePermission({decision: option.value})`.
    Permission,
    /// A question: answer with `bb.command {command: "question.reply", args: {requestId,
    /// answers: [[label, …], …]}}` (one list per question; a form whose questions name
    /// fields: `answers: {field: value}`) or dismiss with `question.reject`.
    Question,
}

/// One choice offered on an approval card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AskOption<'a> {
    /// What to show.
    pub label: Cow<'a, str>,
    /// What to answer (a permission's `decision`, a question option's label).
    pub value: Cow<'a, str>,
    /// More words about the choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Cow<'a, str>>,
}

/// One question of a question card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AskQuestion<'a> {
    /// The question.
    pub question: Cow<'a, str>,
    /// A short heading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Cow<'a, str>>,
    /// The answers offered.
    pub options: Vec<AskOption<'a>>,
    /// Several answers may be chosen.
    #[serde(default, skip_serializing_if = "is_false")]
    pub multiple: bool,
    /// The form field this question fills (an agent's form: ACP elicitation). When the
    /// card's questions name fields, `question.reply`'s `answers` is an object of each
    /// field's value (`{field: value}`: a string, a number, a boolean, or a list of option
    /// values when `multiple`), all fields in one reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<Cow<'a, str>>,
    /// What a person types instead of picking an option (a form field without options).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<AskInput>,
    /// The form needs this field.
    #[serde(default, skip_serializing_if = "is_false")]
    pub required: bool,
    /// The field's value before the person changes it, as text (`true`/`false` for a
    /// boolean; an option's value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Cow<'a, str>>,
}

/// The value a form field takes when it offers no options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AskInput {
    /// Text (sent as a string).
    Text,
    /// A number (sent as a JSON number).
    Number,
    /// A whole number (sent as a JSON integer).
    Integer,
    /// Yes or no (sent as `true` / `false`).
    Boolean,
}

/// An approval card (`permissionRequest`, the spec's kind; upsert by `key`): a permission or
/// a question, pending until resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequest<'a> {
    /// The block's key within the session.
    pub key: Cow<'a, str>,
    /// The `messageId` of the `bb.sendMessage` whose turn asks, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<Cow<'a, str>>,
    /// The request id an answer names (`requestId`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_id: Option<Cow<'a, str>>,
    /// The id of the event that showed it, which an answer names (`eventId`) so that it
    /// cannot be taken for a later request reusing the id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<Cow<'a, str>>,
    /// The session that asks, when it is not the message's: a sub-agent's prompt shown on
    /// an ancestor session's tab. An answer names it (`sessionId`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<Cow<'a, str>>,
    /// Permission or question.
    pub ask: AskKind,
    /// What is asked, one line.
    pub prompt: Cow<'a, str>,
    /// The tool or permission category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<Cow<'a, str>>,
    /// The call this permission gates (a `toolState`'s `toolId`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_id: Option<Cow<'a, str>>,
    /// The patterns (commands, paths) an approval would cover.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<Cow<'a, str>>,
    /// The choices (for a permission: its decisions; for a question with one question: its
    /// answers).
    pub options: Vec<AskOption<'a>>,
    /// A question card's questions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<AskQuestion<'a>>,
    /// `true` once answered (by anyone) or withdrawn.
    #[serde(default, skip_serializing_if = "is_false")]
    pub resolved: bool,
    /// How it was resolved, in words (`allowed once`, `denied`, `answered`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Cow<'a, str>>,
    /// Which webview's answer the engine took (the first answer wins), when the bridge
    /// knows: a window that did not answer shows the card answered elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<AnsweredBy>,
}

/// How loud a status card is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum StatusLevel {
    /// Information (a checkpoint restored).
    Info,
    /// A warning.
    Warning,
    /// An error: the turn failed.
    Error,
    /// Events were lost (a continuity gap).
    Gap,
    /// The user stopped the turn.
    Stopped,
}

/// A status card in the chat (`status`, the spec's kind; upsert by `key`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Status<'a> {
    /// The block's key within the session.
    pub key: Cow<'a, str>,
    /// The `messageId` of the `bb.sendMessage` whose turn it is about, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<Cow<'a, str>>,
    /// How loud.
    pub level: StatusLevel,
    /// What happened, one line.
    pub text: Cow<'a, str>,
}

/// A task's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TaskState {
    /// Not started.
    Queued,
    /// Done.
    Completed,
    /// In progress.
    Running,
    /// Failed or cancelled.
    Failed,
}

/// One node of the session's task tree (upsert by `taskId`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Task<'a> {
    /// The task.
    pub task_id: Cow<'a, str>,
    /// Its parent; a parent the webview does not know (yet) makes it an orphan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_task_id: Option<Cow<'a, str>>,
    /// Its position among all tasks (first seen first).
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub order: u64,
    /// Its own state.
    pub state: TaskState,
    /// The state of its subtree (by precedence: failed, running, completed, queued).
    pub rollup: TaskState,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<Cow<'a, str>>,
    /// The lane (agent) running it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<Cow<'a, str>>,
    /// A session of its own, when it runs in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_session_id: Option<Cow<'a, str>>,
}

/// One item of a todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TodoItem<'a> {
    /// What to do.
    pub content: Cow<'a, str>,
    /// Where it is.
    pub state: TaskState,
    /// Priority, in the engine's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Cow<'a, str>>,
}

/// The session's todo list (one per session; the whole list each time).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Todos<'a> {
    /// The items, in order.
    pub items: Vec<TodoItem<'a>>,
}

/// Whether a turn is in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RunPhase {
    /// No turn in progress.
    Idle,
    /// A turn is in progress.
    Running,
    /// The engine is retrying.
    Retrying,
}

/// How the last turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RunOutcome {
    /// It finished.
    Done,
    /// The user stopped it.
    Stopped,
    /// It failed.
    Failed,
}

/// A checkpoint the run can be restored to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint<'a> {
    /// Its id.
    pub id: Cow<'a, str>,
    /// One line about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<Cow<'a, str>>,
    /// It was restored.
    #[serde(default, skip_serializing_if = "is_false")]
    pub restored: bool,
}

/// The session's run (one per session; the whole state each time).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Run<'a> {
    /// Whether a turn is in progress.
    pub phase: RunPhase,
    /// Turns started so far.
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub turns: u64,
    /// How the last finished turn ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<RunOutcome>,
    /// Steps the last finished turn took, when the engine says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub steps: Option<u64>,
    /// The session's title, when the engine gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<Cow<'a, str>>,
    /// Error cards raised so far.
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub errors: u64,
    /// Events were lost at some point (a continuity gap).
    #[serde(default, skip_serializing_if = "is_false")]
    pub gap: bool,
    /// Checkpoints, as last listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<Checkpoint<'a>>,
    /// Links to logs and artifacts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Cow<'a, str>>,
    /// Context window use and cost, as the engine last reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage<'a>>,
    /// The commands the engine offers for this session (the prompt box's `/` menu): run one
    /// with `bb.command {command: "/<name> [input]"}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<SlashCommand<'a>>,
    /// The session's settings the engine lets a person choose (model, mode, …: the pickers);
    /// change one with `bb.command {command: "config.set", args: {configId, value}}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_options: Vec<ConfigOption<'a>>,
    /// The session's current mode, when the engine has modes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Cow<'a, str>>,
}

/// Context window use and cost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage<'a> {
    /// Tokens in the context window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub used: Option<u64>,
    /// The context window's size in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub size: Option<u64>,
    /// What the session cost so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost<'a>>,
}

/// An amount of money.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cost<'a> {
    /// The amount.
    pub amount: serde_json::Number,
    /// Its currency (`USD`).
    pub currency: Cow<'a, str>,
}

/// A command of the prompt box's `/` menu.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SlashCommand<'a> {
    /// Its name (typed after `/`).
    pub name: Cow<'a, str>,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Cow<'a, str>>,
    /// What to type after it, when it takes input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<Cow<'a, str>>,
}

/// How a session setting is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ConfigKind {
    /// One of its `options` (`value` is the current one's).
    Select,
    /// On or off (`on`).
    Boolean,
}

/// A session setting the engine lets a person choose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigOption<'a> {
    /// What `config.set` names (`configId`).
    pub id: Cow<'a, str>,
    /// Its name, to show.
    pub name: Cow<'a, str>,
    /// More words about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Cow<'a, str>>,
    /// `model`, `mode`, `thought_level`, … when the engine says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<Cow<'a, str>>,
    /// How it is chosen.
    pub kind: ConfigKind,
    /// A select's current value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Cow<'a, str>>,
    /// A boolean's current state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<bool>,
    /// A select's choices (groups flattened, each naming its group).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<ConfigChoice<'a>>,
}

/// One choice of a select setting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigChoice<'a> {
    /// What `config.set` sends (`value`).
    pub value: Cow<'a, str>,
    /// What to show.
    pub name: Cow<'a, str>,
    /// More words about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Cow<'a, str>>,
    /// The group it is listed under, when the engine groups them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<Cow<'a, str>>,
}

/// How a run changed a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FileChangeKind {
    /// Created.
    Added,
    /// Changed.
    Modified,
    /// Removed.
    Deleted,
    /// Edited (no detail given).
    Edited,
}

/// A file the run changed (upsert by `path`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileChanged<'a> {
    /// The file.
    pub path: Cow<'a, str>,
    /// How it changed.
    pub change: FileChangeKind,
    /// Lines added, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub additions: Option<u64>,
    /// Lines removed, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub deletions: Option<u64>,
}

/// An engine event the bridge does not know, for a debug view (upsert by `n`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnknownEvent<'a> {
    /// Its number among the session's unknown events (from 1; the last 256 are kept).
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub n: u64,
    /// The engine's event id, untouched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<Cow<'a, str>>,
    /// The engine's event type, verbatim.
    #[serde(rename = "type")]
    pub event_type: Cow<'a, str>,
    /// Bytes of its payload.
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub size: u64,
    /// Its payload as one line of JSON, secrets redacted, cut at 2 KiB.
    pub payload: Cow<'a, str>,
}

/// An update too large for any message on its own: `bb.command {command: "body.get",
/// args: {ref}}` returns its JSON text, which is applied like any other update.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Oversized<'a> {
    /// Where the update's JSON text is held.
    #[serde(rename = "ref")]
    pub body_ref: Cow<'a, str>,
    /// Its size in bytes.
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub total_bytes: u64,
}

/// One view-model update (see the module doc). Keys are stable within a session; an update
/// of a kind a webview does not know can be ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum WebviewUpdate<'a> {
    /// A user message.
    UserMessage(UserMessage<'a>),
    /// An assistant or reasoning message's state.
    AssistantMessage(AssistantMessage<'a>),
    /// Text appended to an assistant or reasoning message.
    AssistantDelta(AssistantDelta<'a>),
    /// A tool call.
    ToolState(ToolState<'a>),
    /// An approval card (permission or question) and its resolution.
    PermissionRequest(PermissionRequest<'a>),
    /// A status card: error, warning, gap, stop, info.
    Status(Status<'a>),
    /// A node of the task tree.
    Task(Task<'a>),
    /// The todo list.
    Todos(Todos<'a>),
    /// The run: phase, turns, outcome, checkpoints, links.
    Run(Run<'a>),
    /// A file the run changed.
    Diff(FileChanged<'a>),
    /// An unknown engine event, for a debug view.
    UnknownEvent(UnknownEvent<'a>),
    /// An update too large to send inline.
    Oversized(Oversized<'a>),
}
