//! BreadBoard stream updates → host inputs (each event with its class from the BreadBoard
//! table), and the per-session state they imply (run flag, the permission requests the
//! engine raised — the host owns them as prompts; the adapter keeps what an `allow_rule`
//! needs —, diffs seen, sub-agent sessions). Pure: no IO, no clock.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use crate::client::{BbEvent, BySession, SessionSummary as BbSummary, StreamUpdate};
use bb_protocol::v1::{ConnectionStatus, EngineEvent, SessionSummary};
use serde_json::{Map, Value, json};

use bb_host::{EngineEvents, Input, Prompt, PromptKind};
use bb_normalize::EventClass;

/// `2026-11-22T00:14:34.362453Z` → milliseconds since the epoch.
pub(crate) fn iso_to_ms(text: &str) -> Option<f64> {
    let text = text.trim().trim_end_matches('Z');
    let (date, time) = text.split_once('T')?;
    let mut d = date.split('-').map(str::parse::<i64>);
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let mut t = time.split(':');
    let (hh, mm) = (t.next()?.parse::<i64>().ok()?, t.next()?.parse::<i64>().ok()?);
    let secs: f64 = t.next()?.parse().ok()?;
    // Days from civil (H. Hinnant).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let whole = (days * 86_400 + hh * 3600 + mm * 60) as f64;
    Some((whole + secs) * 1000.0)
}

/// The v1 summary of an engine session.
pub(crate) fn summary(s: &BbSummary) -> SessionSummary {
    let title =
        s.metadata.as_ref().and_then(|m| m.get("title")).and_then(Value::as_str).map(str::to_owned);
    let updated = s.last_activity_at.as_deref().or(s.created_at.as_deref()).and_then(iso_to_ms);
    SessionSummary {
        session_id: s.session_id.clone(),
        title,
        status: Some(s.status.clone()),
        updated_at: updated,
        queued_prompts: None,
        parent_id: None,
        pending_permission_count: None,
        folder: None,
    }
}

/// The webview event for an engine event: the SSE id (the `seq`, the resume token) as id.
pub(crate) fn engine_event(e: BbEvent) -> EngineEvent {
    EngineEvent {
        id: e.sse_id,
        event_type: e.kind,
        turn: e.turn.and_then(|t| u64::try_from(t).ok()),
        ts: e.timestamp_ms.map(|t| t as f64),
        payload: e.payload,
    }
}

/// An event with its class from the BreadBoard table.
pub(crate) fn classed(event: EngineEvent) -> (EngineEvent, EventClass) {
    let class = bb_normalize::class::classify_breadboard(&event.event_type);
    (event, class)
}

/// What approving a permission request lets the engine do, from its `category`, `kind` or
/// `tool` (the engine's words); anything else is [`PromptKind::Unknown`] (needs trust).
pub(crate) fn prompt_kind(payload: &Map<String, Value>) -> PromptKind {
    let word = |key: &str| payload.get(key).and_then(Value::as_str).map(str::to_ascii_lowercase);
    for said in [word("category"), word("kind"), word("tool")].into_iter().flatten() {
        let kind = match said.as_str() {
            "edit"
            | "write"
            | "patch"
            | "create"
            | "delete"
            | "move"
            | "apply_unified_patch"
            | "write_file"
            | "create_file" => PromptKind::Write,
            "bash" | "shell" | "run" | "exec" | "execute" | "command" | "shell_command"
            | "run_shell" => PromptKind::Exec,
            "read" | "list" | "list_dir" | "search" | "glob" | "grep" | "read_file" => {
                PromptKind::Read
            }
            "web" | "fetch" | "network" | "web_fetch" | "web_search" => PromptKind::Network,
            _ => continue,
        };
        return kind;
    }
    PromptKind::Unknown
}

/// The files a permission request names: its items' and its own `metadata.path`.
fn prompt_paths(payload: &Map<String, Value>) -> Vec<String> {
    let path = |v: &Value| v.pointer("/metadata/path").and_then(Value::as_str).map(str::to_owned);
    let mut paths: Vec<String> = payload
        .get("items")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(path)
        .collect();
    if let Some(own) = path(&Value::Object(payload.clone()))
        && !paths.contains(&own)
    {
        paths.push(own);
    }
    paths
}

/// A diff the engine showed for a file, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DiffSource {
    /// Inline unified diff text.
    Text(String),
    /// An artifact to download (`artifact_ref` / `display.detail_artifact`).
    Artifact(String),
}

/// A permission request waiting for an answer, with what an `allow_rule` needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PendingRequest {
    /// The request's `pattern` or `rule_suggestion` (a string rule the engine persists).
    pub(crate) pattern: Option<String>,
    /// Its `default_scope`.
    pub(crate) scope: Option<String>,
}

/// What one session's events have told the adapter.
#[derive(Debug, Default)]
pub(crate) struct SessionState {
    pending: HashMap<String, PendingRequest>,
    running: bool,
    /// Latest diff per file path.
    pub(crate) diffs: BTreeMap<String, DiffSource>,
    /// Texts the bridge sent as input, oldest first, to show in their `user_message`.
    sent: VecDeque<String>,
    warnings: u64,
    /// The session's id as its events' inputs carry it: made once, shared by every input.
    id: Option<Arc<str>>,
}

/// Most texts remembered per session for their `user_message` (inputs queue on the engine).
const SENT_REMEMBERED: usize = 32;

impl SessionState {
    /// Permission requests still waiting for an answer.
    pub(crate) fn pending(&self) -> impl Iterator<Item = &String> {
        self.pending.keys()
    }

    /// A pending request.
    pub(crate) fn pending_request(&self, request_id: &str) -> Option<&PendingRequest> {
        self.pending.get(request_id)
    }

    /// The bridge sent `text` as input.
    pub(crate) fn sent(&mut self, text: &str) {
        if self.sent.len() == SENT_REMEMBERED {
            self.sent.pop_front();
        }
        self.sent.push_back(text.to_owned());
    }

    /// The engine says no such request is waiting (it was fed by a replay and never blocked,
    /// or was answered elsewhere): forgotten here (the host makes it stale).
    pub(crate) fn forget(&mut self, request_id: &str) {
        self.pending.remove(request_id);
    }

    /// `session` as an input's shared id, made at the first input that needs it: a state is
    /// one session's (the pump and the ingest keep one per session), so the id is not
    /// compared again.
    fn id(&mut self, session: &str) -> Arc<str> {
        Arc::clone(self.id.get_or_insert_with(|| Arc::from(session)))
    }

    fn warning(&mut self, session: &str, message: String) -> Input {
        self.warnings += 1;
        let mut payload = Map::new();
        payload.insert("message".into(), Value::String(message));
        payload.insert("source".into(), Value::String("bridge".into()));
        let event = EngineEvent {
            id: format!("bridge-warning-{}", self.warnings).into(),
            event_type: "warning".into(),
            turn: None,
            ts: None,
            payload: payload.into(),
        };
        Input::Events { session_id: self.id(session), events: EngineEvents::one(classed(event)) }
    }

    /// Maps one stream update to host inputs, in the order they apply.
    pub(crate) fn apply(&mut self, session: &str, update: StreamUpdate) -> Vec<Input> {
        let connection = Input::connection;
        match update {
            StreamUpdate::Event(_) | StreamUpdate::Replayed(_) => {
                let mut out = Vec::new();
                self.apply_into(session, update, &mut out);
                out
            }
            StreamUpdate::Connected { .. } => {
                vec![connection(ConnectionStatus::Connected, None, None)]
            }
            StreamUpdate::Reconnecting { attempt, error, .. } => {
                vec![connection(
                    ConnectionStatus::Connecting,
                    Some(u64::from(attempt)),
                    Some(error),
                )]
            }
            StreamUpdate::Gap { reason, lost } => {
                let lost = match lost {
                    Some((from, to)) => format!(
                        " Events {from}..{to} are no longer held by the engine and cannot be shown."
                    ),
                    None => String::new(),
                };
                vec![
                    Input::Gap { session_id: Some(session.to_owned()) },
                    self.warning(
                        session,
                        format!(
                            "Continuity gap: {reason}.{lost} Continuing from what the engine still holds."
                        ),
                    ),
                ]
            }
            StreamUpdate::Rebuilt { summary: s } => {
                s.map(|s| Input::SessionUpserted(Box::new(summary(&s)))).into_iter().collect()
            }
            StreamUpdate::Malformed { sse_id, error } => {
                vec![self.warning(session, format!("Unreadable engine event {sse_id}: {error}"))]
            }
            // Either end is an answer of the engine: it is reachable, whatever a reconnect of
            // this stream said before.
            StreamUpdate::Ended { summary: Some(s) } => {
                let mut out = self.set_running(session, false);
                out.push(Input::SessionUpserted(Box::new(summary(&s))));
                out.push(connection(ConnectionStatus::Connected, None, None));
                out
            }
            StreamUpdate::Ended { summary: None } => {
                let mut out = self.gone(
                    session,
                    "The engine no longer holds this session (it was deleted elsewhere, or the engine restarted: its sessions live in memory). Its stream ended; start a new session to go on.",
                );
                out.push(connection(ConnectionStatus::Connected, None, None));
                out
            }
        }
    }

    /// [`SessionState::apply`], onto `out` (a stream task's list, kept from one update to the
    /// next: an event's inputs cost no list of their own).
    pub(crate) fn apply_into(&mut self, session: &str, update: StreamUpdate, out: &mut Vec<Input>) {
        // Each event is moved once, into `on_event`: bound `mut` here and changed in place,
        // it was copied out of the update and again into the call (216 bytes each).
        match update {
            StreamUpdate::Event(event) => self.on_event(session, event, true, out),
            StreamUpdate::Replayed(event) => self.on_event(session, event, false, out),
            other => out.extend(self.apply(session, other)),
        }
    }

    /// The session's stream failed for good: not shown running on it (a resumed stream's
    /// events start the turn again), with `reason` as a transcript warning.
    pub(crate) fn stream_lost(&mut self, session: &str, reason: String) -> Vec<Input> {
        let mut out = self.set_running(session, false);
        out.push(self.warning(session, reason));
        out
    }

    /// The session is gone from the engine: marked ended with `reason` (a transcript
    /// warning), not running, nothing pending (the engine lists none of its requests).
    pub(crate) fn gone(&mut self, session: &str, reason: &str) -> Vec<Input> {
        let mut out = self.set_running(session, false);
        self.pending.clear();
        out.push(Input::PromptsListed { session_id: session.to_owned(), prompts: Vec::new() });
        out.push(Input::SessionUpserted(Box::new(SessionSummary {
            session_id: session.to_owned(),
            title: None,
            status: Some("ended".to_owned()),
            updated_at: None,
            queued_prompts: None,
            parent_id: None,
            pending_permission_count: None,
            folder: None,
        })));
        out.push(self.warning(session, reason.to_owned()));
        out
    }

    /// On the agent path the engine's `user_message` carries the input followed by the whole
    /// system prompt: for an input the bridge sent, the text shown is what the user typed
    /// (`engineTextBytes` keeps the size of what the engine sent).
    fn show_typed_text(&mut self, event: &mut BbEvent) {
        if event.kind != "user_message" {
            return;
        }
        // A rare event: read as a tree.
        let Some(text) = event.payload.get("text").and_then(Value::as_str) else {
            return;
        };
        let Some(index) = self.sent.iter().position(|sent| text.starts_with(sent.as_str())) else {
            return;
        };
        let typed = self.sent.remove(index).unwrap_or_default();
        if typed.len() < text.len() {
            let bytes = text.len();
            if let Some(payload) = event.payload.as_object_mut() {
                payload.insert("engineTextBytes".into(), json!(bytes));
                payload.insert("text".into(), Value::String(typed));
            }
        }
    }

    fn set_running(&mut self, session: &str, running: bool) -> Vec<Input> {
        if self.running == running {
            return Vec::new();
        }
        self.running = running;
        vec![Input::SessionRunning { session_id: session.to_owned(), running }]
    }

    /// The inputs one event implies, onto `out`; `show`: the event itself goes to the view,
    /// a `user_message` with the text the user typed (not when it is only replayed to rebuild
    /// state: a replayed request is raised without its event, the webview saw it before).
    /// What the event does is read from it first; it then moves into its webview form, its
    /// payload not copied.
    fn on_event(&mut self, session: &str, mut event: BbEvent, show: bool, out: &mut Vec<Input>) {
        if show {
            self.show_typed_text(&mut event);
        }
        if matches!(&*event.kind, "tool_call" | "tool_result" | "tool.result")
            && let Some(payload) = event.payload.as_object()
        {
            record_diffs(payload, &mut self.diffs);
        }
        let effect = self.effect(session, &event);
        match effect {
            Effect::Shown => self.show(session, event, show, out),
            Effect::Running(running) => {
                self.show(session, event, show, out);
                out.extend(self.set_running(session, running));
            }
            Effect::Raised(prompt) => out.push(if show {
                let event = Some(Box::new(classed(engine_event(event))));
                Input::PromptRaised { prompt: Box::new(prompt), event }
            } else {
                // Replayed: the host tells this request from a restored one of its id.
                let event_id = String::from(event.sse_id);
                Input::PromptReplayed { prompt: Box::new(prompt), event_id }
            }),
            Effect::Settled(request_id) => out.push(Input::PromptSettled {
                session_id: session.to_owned(),
                request_id,
                event: show.then(|| Box::new(classed(engine_event(event)))),
            }),
            Effect::SubAgent(upserted) => {
                self.show(session, event, show, out);
                out.extend(upserted);
            }
        }
    }

    /// `event` for the view, onto `out` when `show`: made into its webview form where it is
    /// put in its list, not first into an `Option` and out of it (a 200-byte copy each).
    #[inline(always)]
    fn show(&mut self, session: &str, event: BbEvent, show: bool, out: &mut Vec<Input>) {
        if show {
            let events = EngineEvents::one(classed(engine_event(event)));
            out.push(Input::Events { session_id: self.id(session), events });
        }
    }

    /// What `event` does besides being shown, with the request table updated.
    fn effect(&mut self, session: &str, event: &BbEvent) -> Effect {
        let text = |key: &str| event.payload.get(key).and_then(Value::as_str).map(str::to_owned);
        match &*event.kind {
            "turn_start"
            | "user_message"
            | "assistant.message.start"
            | "assistant.message.delta"
            | "assistant_delta"
            | "assistant_message"
            | "tool_call" => Effect::Running(true),
            "completion" | "run_finished" | "error" => Effect::Running(false),
            "permission_request" => match text("request_id").or_else(|| text("id")) {
                Some(id) => {
                    let pattern = text("pattern").or_else(|| {
                        event.payload.get("rule_suggestion").and_then(|r| match r {
                            Value::String(s) => Some(s.clone()),
                            other => {
                                other.get("pattern").and_then(Value::as_str).map(str::to_owned)
                            }
                        })
                    });
                    let scope = text("default_scope");
                    let empty = Map::new();
                    let payload = event.payload.as_object().unwrap_or(&empty);
                    let mut prompt = Prompt::new(session, &id, prompt_kind(payload));
                    prompt.paths = prompt_paths(payload);
                    self.pending.insert(id, PendingRequest { pattern, scope });
                    Effect::Raised(prompt)
                }
                None => Effect::Shown,
            },
            "permission_response" => match text("request_id").or_else(|| text("id")) {
                Some(id) => {
                    self.pending.remove(&id);
                    Effect::Settled(id)
                }
                None => Effect::Shown,
            },
            "task_event" => Effect::SubAgent(
                event.payload.as_object().and_then(|payload| sub_agent(session, payload)),
            ),
            _ => Effect::Shown,
        }
    }
}

/// What an engine event does besides going to the view ([`SessionState::effect`]).
enum Effect {
    /// Nothing else.
    Shown,
    /// The session runs (or stops) from this event on.
    Running(bool),
    /// A permission request, raised (or, replayed, restored).
    Raised(Prompt),
    /// A permission request's answer, by its id.
    Settled(String),
    /// A sub-agent's session, listed under its parent, when the event names one.
    SubAgent(Option<Input>),
}

/// A sub-agent the engine says `session` started (a `task_event` naming a
/// `child_session_id` under `parent_session_id`): listed with its parent, so the host shows
/// its prompts on the parent's tab.
fn sub_agent(session: &str, payload: &Map<String, Value>) -> Option<Input> {
    let text = |key: &str| payload.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
    let child = text("child_session_id")?;
    let parent = text("parent_session_id").unwrap_or(session);
    (child != parent).then(|| {
        Input::SessionUpserted(Box::new(SessionSummary {
            session_id: child.to_owned(),
            parent_id: Some(parent.to_owned()),
            ..SessionSummary::default()
        }))
    })
}

/// Finds diffs in a tool payload: `diff_preview`, `display.diff_blocks`, `artifact_ref`,
/// `display.detail_artifact`.
pub(crate) fn record_diffs(payload: &Map<String, Value>, diffs: &mut BTreeMap<String, DiffSource>) {
    let path_of = |v: &Value| {
        ["filePath", "file_path", "path", "file", "filename"]
            .iter()
            .find_map(|k| v.get(*k).and_then(Value::as_str))
            .map(str::to_owned)
    };
    if let Some(preview) = payload.get("diff_preview") {
        match preview {
            Value::String(text) => {
                for (path, diff) in split_unified(text) {
                    diffs.insert(path, DiffSource::Text(diff));
                }
            }
            Value::Object(_) => {
                if let (Some(path), Some(text)) = (
                    path_of(preview),
                    preview.get("diff").or_else(|| preview.get("text")).and_then(Value::as_str),
                ) {
                    diffs.insert(path, DiffSource::Text(text.to_owned()));
                }
            }
            _ => {}
        }
    }
    // Agent tool calls carry the patch in their JSON arguments (`apply_unified_patch`).
    let arguments =
        payload.get("call").and_then(|c| c.pointer("/function/arguments")).and_then(Value::as_str);
    if let Some(args) = arguments.and_then(|a| serde_json::from_str::<Value>(a).ok()) {
        let patch = ["patch", "diff"].iter().find_map(|k| args.get(*k).and_then(Value::as_str));
        for (path, diff) in patch.map(split_unified).unwrap_or_default() {
            diffs.insert(path, DiffSource::Text(diff));
        }
    }
    let display = payload.get("display");
    if let Some(blocks) = display.and_then(|d| d.get("diff_blocks")).and_then(Value::as_array) {
        for block in blocks {
            let text = block
                .get("unified")
                .or_else(|| block.get("diff"))
                .or_else(|| block.get("text"))
                .and_then(Value::as_str);
            match (path_of(block), text) {
                (Some(path), Some(text)) => {
                    diffs.insert(path, DiffSource::Text(text.to_owned()));
                }
                (None, Some(text)) => {
                    for (path, diff) in split_unified(text) {
                        diffs.insert(path, DiffSource::Text(diff));
                    }
                }
                _ => {}
            }
        }
    }
    let artifacts = [payload.get("artifact_ref"), display.and_then(|d| d.get("detail_artifact"))];
    for artifact in artifacts.into_iter().flatten() {
        let location = artifact.get("path").or_else(|| artifact.get("uri")).and_then(Value::as_str);
        let target = artifact.get("metadata").and_then(path_of).or_else(|| {
            let first = artifact.pointer("/preview/lines/0").and_then(Value::as_str)?;
            let rest = first.strip_prefix("diff --git a/")?;
            rest.split_once(" b/").map(|(a, _)| a.to_owned())
        });
        if let Some(location) = location {
            diffs.insert(
                target.unwrap_or_else(|| location.to_owned()),
                DiffSource::Artifact(location.to_owned()),
            );
        }
    }
}

/// Splits a multi-file unified diff into `(path, diff)` by its `+++ b/<path>` headers.
pub(crate) fn split_unified(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut current: Option<(String, String)> = None;
    let mut header = String::new();
    for line in text.split_inclusive('\n') {
        if line.starts_with("diff --git ") || line.starts_with("--- ") {
            if let Some(done) = current.take() {
                out.push(done);
            }
            header.push_str(line);
            continue;
        }
        if let Some(path) = line.strip_prefix("+++ ") {
            let path = path.trim().trim_start_matches("b/").to_owned();
            let mut body = std::mem::take(&mut header);
            body.push_str(line);
            current = Some((path, body));
            continue;
        }
        match current.as_mut() {
            Some((_, body)) => body.push_str(line),
            None => header.push_str(line),
        }
    }
    out.extend(current);
    out
}

/// The synthetic event carrying a diff to the webview (`bb.openDiff`).
pub(crate) fn diff_event(path: &str, diff: &str, source: &str) -> EngineEvent {
    let payload = json!({"filePath": path, "diff": diff, "source": source});
    EngineEvent {
        id: format!("bridge-diff-{path}").into(),
        event_type: "bridge.diff".into(),
        turn: None,
        ts: None,
        payload: payload.as_object().cloned().unwrap_or_default().into(),
    }
}

/// Per-session states.
pub(crate) type States = BySession<SessionState>;

/// Per-session states, each shared by the session's stream task and the adapter's REST paths.
pub(crate) type SharedStates = BySession<Arc<Mutex<SessionState>>>;
