// Generated from the bb-protocol types; do not edit.
// Regenerate: UPDATE_SCHEMAS=1 cargo test -p bb-protocol

/** `acp_connect`: start an ACP agent process. */
export type AcpConnectParams = {
  command: string;
  args?: Array<string> | null;
  env?: Record<string, string> | null;
  cwd?: string | null;
};

/** Result of `acp_connect`. */
export type AcpConnectionInfo = {
  id: string;
  status: AcpConnectionStatus;
  protocolVersion: string;
  agentInfo: AgentInfo;
};

/** Lifecycle of an ACP connection. */
export type AcpConnectionStatus = ("created" | "initialized" | "ready" | "closed");

/** `acp_disconnect`. */
export type AcpDisconnectParams = {
  id: string;
};

/** `acp_elicitation_reply`: answers an agent's `elicitation/create`. */
export type AcpElicitationReplyParams = {
  connectionId: string;
  requestId: AcpRequestId;
  action: ElicitationActionKind;
  content?: Record<string, unknown> | null;
};

/** `acp_permission_reply`: answers an agent's `session/request_permission`. */
export type AcpPermissionReplyParams = {
  connectionId: string;
  sessionId?: string | null;
  requestId: AcpRequestId;
  outcome: PermissionOutcome;
};

/** Result of `acp_session_prompt` (ACP `PromptResponse`). */
export type AcpPromptResult = {
  stopReason: StopReason;
};

/** The id of the agent's `session/request_permission` JSON-RPC request. */
export type AcpRequestId = (string | number);

/** `acp_session_cancel` (ACP `session/cancel`). */
export type AcpSessionCancelParams = {
  connectionId: string;
  sessionId: string;
};

/** Result of `acp_session_list`: the agent's `SessionInfo` objects (`sessionId`, `cwd`,
 * `title?`, `updatedAt?`), as it sent them. */
export type AcpSessionList = {
  sessions: Array<unknown>;
};

/** `acp_session_list` (ACP `session/list`, every page). */
export type AcpSessionListParams = {
  connectionId: string;
  cwd?: string | null;
};

/** `acp_session_load` (ACP `session/load`). */
export type AcpSessionLoadParams = {
  connectionId: string;
  sessionId: string;
  cwd?: string | null;
  mcpServers?: Array<unknown> | null;
};

/** `acp_session_new` (ACP `session/new`). */
export type AcpSessionNewParams = {
  connectionId: string;
  cwd?: string | null;
  mcpServers?: Array<unknown> | null;
};

/** `acp_session_close` / `acp_session_delete` (ACP `session/close`, `session/delete`). */
export type AcpSessionParams = {
  connectionId: string;
  sessionId: string;
};

/** `acp_session_prompt` (ACP `session/prompt`). */
export type AcpSessionPromptParams = {
  connectionId: string;
  sessionId: string;
  prompt: Array<ContentBlock>;
};

/** Result of `acp_session_resume` and `acp_session_set_config_option`: the session's
 * config options (ACP `SessionConfigOption` objects) and, for agents still using them, its
 * modes. */
export type AcpSessionSetup = {
  configOptions?: Array<unknown> | null;
  modes?: unknown;
};

/** `acp_session_set_config_option` (ACP `session/set_config_option`). */
export type AcpSetConfigOptionParams = {
  connectionId: string;
  sessionId: string;
  configId: string;
  value: unknown;
};

/** The agent's self-description. */
export type AgentInfo = {
  name: string;
  title?: string | null;
  version: string;
};

/** The webview connection (and its tab) whose answer the engine took. */
export type AnsweredBy = {
  connection: number;
  tabId?: string | null;
};

/** `bb.approvePermission`. */
export type ApprovePermissionParams = {
  sessionId: string;
  requestId: string;
  decision: PermissionDecision;
  ruleUpdate?: Record<string, unknown> | null;
  eventId?: string | null;
};

/** The value a form field takes when it offers no options. */
export type AskInput = ("text" | "number" | "integer" | "boolean");

/** What an approval card asks. */
export type AskKind = ("permission" | "question");

/** One choice offered on an approval card. */
export type AskOption = {
  label: string;
  value: string;
  description?: string | null;
};

/** One question of a question card. */
export type AskQuestion = {
  question: string;
  header?: string | null;
  options: Array<AskOption>;
  multiple?: boolean;
  field?: string | null;
  input?: (AskInput | null);
  required?: boolean;
  default?: string | null;
};

/** Text appended to a message (`assistantDelta`, the spec's kind). `at` is the length of
 * the text before it, in UTF-16 code units (a JavaScript string's `length`): a webview
 * whose text is longer than `at` already has some or all of it and appends only the rest,
 * so a delta applied twice changes nothing. */
export type AssistantDelta = {
  key: string;
  at: number;
  delta: string;
};

/** An assistant (or reasoning) message's state (upsert by `key`). Its text grows with
 * `assistantDelta` updates; `text`, when present, replaces the whole text (the engine rewrote
 * it, or a resync sends it whole). */
export type AssistantMessage = {
  key: string;
  messageId?: string | null;
  reasoning?: boolean;
  status: MessageStatus;
  error?: string | null;
  text?: string | null;
};

/** What the bridge and engine support, so the webview can hide what does not work. */
export type Capabilities = {
  sessions: boolean;
  permissions: boolean;
  commands: boolean;
  files: boolean;
  diffs: boolean;
  artifacts: boolean;
  resume: boolean;
};

/** A checkpoint the run can be restored to. */
export type Checkpoint = {
  id: string;
  preview?: string | null;
  restored?: boolean;
};

/** `bb.command`. */
export type CommandParams = {
  sessionId: string;
  command: string;
  args?: Record<string, unknown> | null;
};

/** Result of `bb.command`. */
export type CommandResult = {
  sessionId: string;
  output?: unknown;
};

/** One choice of a select setting. */
export type ConfigChoice = {
  value: string;
  name: string;
  description?: string | null;
  group?: string | null;
};

/** How a session setting is chosen. */
export type ConfigKind = ("select" | "boolean");

/** A session setting the engine lets a person choose. */
export type ConfigOption = {
  id: string;
  name: string;
  description?: string | null;
  category?: string | null;
  kind: ConfigKind;
  value?: string | null;
  on?: boolean | null;
  options?: Array<ConfigChoice>;
};

/** Diagnostics carried by `bb/connection` (every field optional; never a secret). */
export type ConnectionDiagnostics = {
  enginePid?: number | null;
  enginePort?: number | null;
  reconnects?: number | null;
  lastGap?: string | null;
  queueDepth?: number | null;
  lastFlushLatencyMs?: number | null;
  warnings?: Array<string>;
};

/** Payload of `bb/connection`. */
export type ConnectionPayload = {
  status: ConnectionStatus;
  sessionId?: string | null;
  retryCount?: number | null;
  lastError?: string | null;
  gapDetected?: boolean | null;
  attempt?: number | null;
  restarting?: boolean | null;
  diagnostics?: (ConnectionDiagnostics | null);
  heartbeat?: number | null;
};

/** Connection state. */
export type ConnectionStatus = ("connecting" | "connected" | "error");

/** One block of a prompt (ACP `ContentBlock`). */
export type ContentBlock = ({
  type: "text";
  text: string;
  annotations?: unknown;
} | {
  type: "image";
  data: string;
  mimeType: string;
  uri?: string | null;
  annotations?: unknown;
} | {
  type: "audio";
  data: string;
  mimeType: string;
  annotations?: unknown;
} | {
  type: "resource_link";
  uri: string;
  name: string;
  mimeType?: string | null;
  title?: string | null;
  description?: string | null;
  size?: number | null;
  annotations?: unknown;
} | {
  type: "resource";
  resource: EmbeddedResource;
  annotations?: unknown;
});

/** An amount of money. */
export type Cost = {
  amount: number;
  currency: string;
};

/** `bb.createSession`: every field optional. */
export type CreateSessionParams = {
  configPath?: string | null;
  task?: string | null;
  model?: string | null;
  permissionMode?: string | null;
  tabId?: string | null;
  folder?: string | null;
};

/** A file-type filter of a file dialog. */
export type DialogFilter = {
  name: string;
  extensions: Array<string>;
};

/** `dialog.open`: a desktop open-file dialog. */
export type DialogOpenParams = {
  directory?: boolean | null;
  multiple?: boolean | null;
  title?: string | null;
  defaultPath?: string | null;
  filters?: Array<DialogFilter> | null;
};

/** What `dialog.open` returns: `null` when cancelled, a path, or several paths. */
export type DialogSelection = (string | Array<string>);

/** `bb.downloadArtifact`. */
export type DownloadArtifactParams = {
  sessionId: string;
  artifactPath: string;
};

/** Result of `bb.downloadArtifact`. */
export type DownloadArtifactResult = {
  artifactPath: string;
  savedPath?: string | null;
};

/** The part of a session's transcript a paged resync or `bb.history` page left out: ask
 * `bb.history({sessionId, before})` for it. */
export type Earlier = {
  before: number;
  turns: number;
};

/** The user's answer to an elicitation. */
export type ElicitationActionKind = ("accept" | "decline" | "cancel");

/** A text or binary resource embedded in a prompt (ACP `EmbeddedResourceResource`). */
export type EmbeddedResource = ({
  uri: string;
  text: string;
  mimeType?: string | null;
} | {
  uri: string;
  blob: string;
  mimeType?: string | null;
});

/** The engine part of `bb.init`'s result. */
export type EngineInfo = {
  kind: EngineKind;
  status: EngineStatus;
  version?: string | null;
};

/** Which engine the bridge drives. */
export type EngineKind = ("kilo" | "breadboard" | "acp");

/** The engine's lifecycle state as the bridge sees it. */
export type EngineStatus = ("starting" | "ready" | "reconnecting" | "failed" | "stopped");

/** One item of a `bb/events` batch: the engine event plus what the bridge knows about it.
 * Dereferences to the [`EngineEvent`]. */
export type EventItem = {
  id: string;
  type: string;
  turn?: number | null;
  ts?: number | null;
  payload: Record<string, unknown>;
  class?: string;
  messageId?: string | null;
  truncated?: (Truncation | null);
  sessionId?: string | null;
};

/** Payload of `bb/events`: an ordered batch for one session.
 * 
 * A bridge that tracks tabs sets `tabId` and `seq` (per tab: 1, 2, 3, … never reused) on
 * every message; a webview keeps the last `seq` per tab and hands it back in
 * `bb.init({lastSeen})` to get exactly what it missed. A message with `resync: true`
 * replaces what the tab shows by `view` (the session's reduced view model) or, for a
 * webview that receives updates, by what its `updates` rebuild, instead of adding to it;
 * its `events` may be empty. */
export type EventsPayload = {
  sessionId: string;
  events: Array<EventItem>;
  tabId?: string | null;
  seq?: number | null;
  resync?: boolean | null;
  view?: Record<string, unknown> | null;
  updates?: Array<WebviewUpdate> | null;
  earlier?: (Earlier | null);
};

/** How a run changed a file. */
export type FileChangeKind = ("added" | "modified" | "deleted" | "edited");

/** A file the run changed (upsert by `path`). */
export type FileChanged = {
  path: string;
  change: FileChangeKind;
  additions?: number | null;
  deletions?: number | null;
};

/** One entry of `bb.listFiles`. */
export type FileEntry = {
  name: string;
  path: string;
  kind: FileKind;
  size?: number | null;
};

/** What a directory entry is. */
export type FileKind = ("file" | "dir" | "symlink" | "other");

/** Result of `bb.readFileSnippet`. */
export type FileSnippetResult = {
  path: string;
  content: string;
  truncated: boolean;
  totalBytes?: number | null;
};

/** `bb.history`: the turns of a session's transcript before a cursor, for a webview that
 * was sent its recent turns only (a resync with `earlier`). */
export type HistoryParams = {
  sessionId: string;
  before: number;
  limit?: number | null;
};

/** Result of `bb.history`: older turns, oldest first, as the updates that rebuild them
 * (applied before the ones the webview holds: `UpdatedView::prepend`). */
export type HistoryResult = {
  sessionId: string;
  updates: Array<WebviewUpdate>;
  earlier?: (Earlier | null);
};

/** `bb.init`: every field optional (`null`, absent and `{}` are all accepted). */
export type InitParams = {
  lastSeen?: Record<string, number> | null;
  workspaceTrusted?: boolean | null;
  receive?: (Receive | null);
};

/** Result of `bb.init`. */
export type InitResult = {
  protocolVersion: number;
  engine: EngineInfo;
  capabilities: Capabilities;
  folders?: Array<string> | null;
};

/** `bb.listFiles`. */
export type ListFilesParams = {
  sessionId: string;
  path: string;
};

/** Result of `bb.listFiles`. */
export type ListFilesResult = {
  path: string;
  entries: Array<FileEntry>;
};

/** Result of `bb.listSessions`. */
export type ListSessionsResult = {
  sessions: Array<SessionSummary>;
};

/** Streaming state of an assistant or reasoning message. */
export type MessageStatus = ("streaming" | "complete" | "error" | "stopped");

/** Params of `bb.listSessions`: none. `null`, absent and `{}` are all accepted; fields are
 * ignored. */
export type NoParams = Record<string, unknown>;

/** `bb.openDiff`. */
export type OpenDiffParams = {
  sessionId: string;
  filePath: string;
  beforeRef?: string | null;
  afterRef?: string | null;
};

/** `shell.openPath`. */
export type OpenPathParams = {
  path: string;
};

/** An update too large for any message on its own: `bb.command {command: "body.get",
 * args: {ref}}` returns its JSON text, which is applied like any other update. */
export type Oversized = {
  ref: string;
  totalBytes: number;
};

/** A permission decision. */
export type PermissionDecision = ("allow_once" | "deny" | "allow_rule");

/** The user's answer to a permission request (ACP `RequestPermissionOutcome`). */
export type PermissionOutcome = ({
  outcome: "cancelled";
} | {
  outcome: "selected";
  optionId: string;
});

/** An approval card (`permissionRequest`, the spec's kind; upsert by `key`): a permission or
 * a question, pending until resolved. */
export type PermissionRequest = {
  key: string;
  messageId?: string | null;
  permissionId?: string | null;
  eventId?: string | null;
  sessionId?: string | null;
  ask: AskKind;
  prompt: string;
  tool?: string | null;
  toolId?: string | null;
  patterns?: Array<string>;
  options: Array<AskOption>;
  questions?: Array<AskQuestion>;
  resolved?: boolean;
  decision?: string | null;
  answeredBy?: (AnsweredBy | null);
};

/** `bb.readFileSnippet`. Counts are non-negative integers. */
export type ReadFileSnippetParams = {
  sessionId: string;
  path: string;
  maxBytes?: number | null;
  headLines?: number | null;
  tailLines?: number | null;
};

/** What `bb/events` messages carry for a webview (`bb.init({receive})`). */
export type Receive = ("events" | "updates" | "both");

/** The session's run (one per session; the whole state each time). */
export type Run = {
  phase: RunPhase;
  turns: number;
  outcome?: (RunOutcome | null);
  steps?: number | null;
  title?: string | null;
  errors: number;
  gap?: boolean;
  checkpoints?: Array<Checkpoint>;
  links?: Array<string>;
  usage?: (Usage | null);
  commands?: Array<SlashCommand>;
  configOptions?: Array<ConfigOption>;
  mode?: string | null;
};

/** How the last turn ended. */
export type RunOutcome = ("done" | "stopped" | "failed");

/** Whether a turn is in progress. */
export type RunPhase = ("idle" | "running" | "retrying");

/** `bb.sendMessage`. */
export type SendMessageParams = {
  sessionId: string;
  text: string;
  attachmentIds?: Array<string> | null;
  messageId?: string | null;
};

/** Result of `bb.sendMessage`. */
export type SendMessageResult = {
  sessionId: string;
  messageId?: string | null;
};

/** Result of the methods that act on one session and return nothing else
 * (`bb.selectSession`, `bb.deleteSession`, `bb.stop`, `bb.approvePermission`,
 * `bb.openDiff`). */
export type SessionAck = {
  sessionId: string;
};

/** `bb.selectSession`, `bb.deleteSession`, `bb.stop`: a session id. */
export type SessionParams = {
  sessionId: string;
  tabId?: string | null;
};

/** One session, as listed (`bb.listSessions`, `bb/state`) or created (`bb.createSession`). */
export type SessionSummary = {
  sessionId: string;
  title?: string | null;
  status?: string | null;
  updatedAt?: number | null;
  queuedPrompts?: number | null;
  parentId?: string | null;
  pendingPermissionCount?: number | null;
  folder?: string | null;
};

/** A command of the prompt box's `/` menu. */
export type SlashCommand = {
  name: string;
  description?: string | null;
  hint?: string | null;
};

/** Payload of `bb/state`. */
export type StatePayload = {
  sessions: Array<SessionSummary>;
  activeSessionId?: string | null;
  running?: boolean | null;
  pendingPermissionCount?: number | null;
};

/** A status card in the chat (`status`, the spec's kind; upsert by `key`). */
export type Status = {
  key: string;
  messageId?: string | null;
  level: StatusLevel;
  text: string;
};

/** How loud a status card is. */
export type StatusLevel = ("info" | "warning" | "error" | "gap" | "stopped");

/** Why a prompt turn ended (ACP `StopReason`). */
export type StopReason = ("end_turn" | "max_tokens" | "max_turn_requests" | "refusal" | "cancelled");

/** One node of the session's task tree (upsert by `taskId`). */
export type Task = {
  taskId: string;
  parentTaskId?: string | null;
  order: number;
  state: TaskState;
  rollup: TaskState;
  title?: string | null;
  lane?: string | null;
  childSessionId?: string | null;
};

/** A task's state. */
export type TaskState = ("queued" | "completed" | "running" | "failed");

/** A text that may have been cut for display: the head and the tail of the whole text around
 * a marker line, with where to fetch the rest. */
export type TextPreview = {
  text: string;
  truncated?: boolean;
  totalBytes?: number | null;
  ref?: string | null;
};

/** One item of a todo list. */
export type TodoItem = {
  content: string;
  state: TaskState;
  priority?: string | null;
};

/** The session's todo list (one per session; the whole list each time). */
export type Todos = {
  items: Array<TodoItem>;
};

/** A file a tool changed, as a unified diff. */
export type ToolDiff = {
  path?: string | null;
  unified: TextPreview;
};

/** One entry of a listing a tool made. */
export type ToolFile = {
  path: string;
  dir?: boolean;
};

/** A tool call's state (`toolState`, the spec's kind; upsert by `key`). */
export type ToolRunState = ("pending" | "running" | "done" | "error");

/** A tool call (`toolState`, the spec's kind; upsert by `key`): the whole state each time. */
export type ToolState = {
  key: string;
  messageId?: string | null;
  toolId?: string | null;
  tool?: string | null;
  state: ToolRunState;
  title?: string | null;
  summary?: string | null;
  view?: (ToolView | null);
  input?: (TextPreview | null);
  output?: (TextPreview | null);
  error?: string | null;
};

/** What a tool did, in the form a person reads it. */
export type ToolView = ({
  type: "command";
  command: string;
  exitCode?: number | null;
} | {
  type: "file";
  path: string;
} | {
  type: "files";
  path?: string | null;
  entries: Array<ToolFile>;
  more?: number | null;
} | {
  type: "diff";
  files: Array<ToolDiff>;
});

/** Where the full body of a truncated event item can be fetched. */
export type Truncation = {
  ref: string;
  fields: Array<string>;
  totalBytes: number;
};

/** An engine event the bridge does not know, for a debug view (upsert by `n`). */
export type UnknownEvent = {
  n: number;
  eventId?: string | null;
  type: string;
  size: number;
  payload: string;
};

/** Context window use and cost. */
export type Usage = {
  used?: number | null;
  size?: number | null;
  cost?: (Cost | null);
};

/** A user message (upsert by `key`). */
export type UserMessage = {
  key: string;
  messageId?: string | null;
  text: TextPreview;
};

/** A typed v1 request body: the method name and its params. */
export type V1Call = ({
  method: "bb.init";
  params?: InitParams;
} | {
  method: "bb.createSession";
  params?: CreateSessionParams;
} | {
  method: "bb.listSessions";
  params?: NoParams;
} | {
  method: "bb.selectSession";
  params: SessionParams;
} | {
  method: "bb.deleteSession";
  params: SessionParams;
} | {
  method: "bb.sendMessage";
  params: SendMessageParams;
} | {
  method: "bb.stop";
  params: SessionParams;
} | {
  method: "bb.command";
  params: CommandParams;
} | {
  method: "bb.approvePermission";
  params: ApprovePermissionParams;
} | {
  method: "bb.listFiles";
  params: ListFilesParams;
} | {
  method: "bb.readFileSnippet";
  params: ReadFileSnippetParams;
} | {
  method: "bb.openDiff";
  params: OpenDiffParams;
} | {
  method: "bb.downloadArtifact";
  params: DownloadArtifactParams;
} | {
  method: "bb.visibility";
  params: VisibilityParams;
} | {
  method: "bb.history";
  params: HistoryParams;
});

/** The error of a failed v1 response: `{code, message, details?}`. */
export type V1Error = {
  code: string;
  message: string;
  details?: unknown;
};

/** A v1 event: `{v: 1, kind: "evt", topic, payload}`. */
export type V1Event = {
  v: 1;
  kind: "evt";
} & ({
  topic: "bb/connection";
  payload: ConnectionPayload;
} | {
  topic: "bb/state";
  payload: StatePayload;
} | {
  topic: "bb/events";
  payload: EventsPayload;
});

/** Any v1 message. */
export type V1Message = (V1Request | V1Response | V1Event);

/** A v1 request: `{v: 1, kind: "req", id, method, params}`. */
export type V1Request = {
  v: 1;
  kind: "req";
  id: string;
} & ({
  method: "bb.init";
  params?: InitParams;
} | {
  method: "bb.createSession";
  params?: CreateSessionParams;
} | {
  method: "bb.listSessions";
  params?: NoParams;
} | {
  method: "bb.selectSession";
  params: SessionParams;
} | {
  method: "bb.deleteSession";
  params: SessionParams;
} | {
  method: "bb.sendMessage";
  params: SendMessageParams;
} | {
  method: "bb.stop";
  params: SessionParams;
} | {
  method: "bb.command";
  params: CommandParams;
} | {
  method: "bb.approvePermission";
  params: ApprovePermissionParams;
} | {
  method: "bb.listFiles";
  params: ListFilesParams;
} | {
  method: "bb.readFileSnippet";
  params: ReadFileSnippetParams;
} | {
  method: "bb.openDiff";
  params: OpenDiffParams;
} | {
  method: "bb.downloadArtifact";
  params: DownloadArtifactParams;
} | {
  method: "bb.visibility";
  params: VisibilityParams;
} | {
  method: "bb.history";
  params: HistoryParams;
});

/** A v1 response: `{v: 1, kind: "res", id, ok, result?, error?}`. Built through
 * [`V1Response::success`] / [`V1Response::failure`], `ok` always agrees with which of
 * `result`/`error` is set; the decoder rejects messages where it does not. */
export type V1Response = {
  v: 1;
  kind: "res";
  id: string;
  ok: boolean;
  result?: unknown;
  error?: (V1Error | null);
};

/** `bb.visibility`: the webview was shown or hidden. */
export type VisibilityParams = {
  visible: boolean;
};

/** Result of `bb.visibility`. */
export type VisibilityResult = {
  visible: boolean;
};

/** One view-model update (see the module doc). Keys are stable within a session; an update
 * of a kind a webview does not know can be ignored. */
export type WebviewUpdate = (({
  kind: "userMessage";
} & UserMessage) | ({
  kind: "assistantMessage";
} & AssistantMessage) | ({
  kind: "assistantDelta";
} & AssistantDelta) | ({
  kind: "toolState";
} & ToolState) | ({
  kind: "permissionRequest";
} & PermissionRequest) | ({
  kind: "status";
} & Status) | ({
  kind: "task";
} & Task) | ({
  kind: "todos";
} & Todos) | ({
  kind: "run";
} & Run) | ({
  kind: "diff";
} & FileChanged) | ({
  kind: "unknownEvent";
} & UnknownEvent) | ({
  kind: "oversized";
} & Oversized));

/** A typed WebSocket request body: the method name and its params. */
export type WsCall = ({
  method: "dialog.open";
  params?: DialogOpenParams;
} | {
  method: "shell.openPath";
  params: OpenPathParams;
} | {
  method: "acp_connect";
  params: AcpConnectParams;
} | {
  method: "acp_disconnect";
  params: AcpDisconnectParams;
} | {
  method: "acp_session_new";
  params: AcpSessionNewParams;
} | {
  method: "acp_session_load";
  params: AcpSessionLoadParams;
} | {
  method: "acp_session_prompt";
  params: AcpSessionPromptParams;
} | {
  method: "acp_session_cancel";
  params: AcpSessionCancelParams;
} | {
  method: "acp_permission_reply";
  params: AcpPermissionReplyParams;
} | {
  method: "acp_session_list";
  params: AcpSessionListParams;
} | {
  method: "acp_session_resume";
  params: AcpSessionLoadParams;
} | {
  method: "acp_session_close";
  params: AcpSessionParams;
} | {
  method: "acp_session_delete";
  params: AcpSessionParams;
} | {
  method: "acp_session_set_config_option";
  params: AcpSetConfigOptionParams;
} | {
  method: "acp_elicitation_reply";
  params: AcpElicitationReplyParams;
});

/** The error of a failed WebSocket response: `{message, code?, data?}`. */
export type WsError = {
  message: string;
  code?: string | null;
  data?: unknown;
};

/** A WebSocket event: `{type: "event", event, payload}`. */
export type WsEvent = {
  type: "event";
} & ({
  event: "session-data";
  payload: Record<string, unknown>;
} | {
  event: "scan-progress";
  payload: Record<string, unknown>;
} | {
  event: "acp-session-update";
  payload: Record<string, unknown>;
} | {
  event: "acp-session-state";
  payload: Record<string, unknown>;
} | {
  event: "acp-permission-request";
  payload: Record<string, unknown>;
} | {
  event: "acp-terminal-output";
  payload: Record<string, unknown>;
} | {
  event: "acp-elicitation-request";
  payload: Record<string, unknown>;
} | {
  event: "bb/connection";
  payload: ConnectionPayload;
} | {
  event: "bb/state";
  payload: StatePayload;
} | {
  event: "bb/events";
  payload: EventsPayload;
});

/** Any WebSocket message. */
export type WsMessage = (WsRequest | WsResponse | WsEvent);

/** A WebSocket request: `{type: "request", id, method, params}`. */
export type WsRequest = {
  type: "request";
  id: string;
} & (WsCall | V1Call);

/** A WebSocket response: `{type: "response", id, ok, result?, error?}`. Built through
 * [`WsResponse::success`] / [`WsResponse::failure`], `ok` always agrees with which of
 * `result`/`error` is set; the decoder rejects messages where it does not. */
export type WsResponse = {
  type: "response";
  id: string;
  ok: boolean;
  result?: unknown;
  error?: (WsError | null);
};
