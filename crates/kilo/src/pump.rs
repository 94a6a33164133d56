//! Router updates → host inputs: the consumer of the Kilo event router (one `GET /event`
//! stream, refresh-on-reconnect), run in the router's own task, that reports in engine order.
//!
//! Recovery: the stream reconnects without giving up while the engine is meant to run
//! (capped back-off; each attempt is a `bb/connection` `connecting` with its count); after a
//! reconnect — and after a restarted engine is bound — every tracked session is flagged with
//! a gap; a session whose rebuild fails gets a hard-error event ([`REBUILD_FAILED_EVENT`])
//! whose Retry is `bb.command retry`.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::client::{
    Consumer, Gone, KiloClient, KiloEvent, KiloUpdate, MessageWithParts, PermissionRequest,
    QuestionRequest,
};
use crate::events::{Action, KiloEventState, classed, prompt_of};
use crate::shared::{Shared, kind_of};
use bb_host::{EngineEvents, Input, Prompt, PromptKind, push_merged};
use bb_normalize::EventClass;
use bb_protocol::v1::{ConnectionStatus, EngineEvent};
use bb_service::engine::InputSender;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc::error::TrySendError;

/// The type of the bridge-made event that carries a session's state rebuilt from REST after
/// a reconnect (the stream has no replay).
pub const REHYDRATED_EVENT: &str = "bb.session.rehydrated";

/// The bridge-made event of a session whose rebuild failed (`payload: {sessionID, message,
/// retry: {command: "retry"}}`): the session's view is incomplete until a Retry succeeds.
pub const REBUILD_FAILED_EVENT: &str = "bb.session.rebuild_failed";

/// What the pump needs besides the router's updates.
pub(crate) struct PumpContext {
    pub(crate) shared: Arc<Shared>,
    pub(crate) client: KiloClient,
    /// The engine was restarted under the adapter: every tracked session has a gap.
    pub(crate) restarted: bool,
}

/// The router's consumer: each update mapped as it is taken, what a wake-up of the router
/// had ready sent on at its flush. Adjacent events of one session among them go on as one
/// input (`push_merged`), and the engine calls the mapping asks for follow them.
pub(crate) struct Pump {
    updates: InputSender,
    shared: Arc<Shared>,
    client: KiloClient,
    restarted: bool,
    state: KiloEventState,
    rehydrations: u64,
    /// Mapped, not yet sent.
    mapped: Vec<Input>,
    /// One update's inputs (a buffer kept across updates).
    inputs: Vec<Input>,
    actions: Vec<Action>,
}

impl Pump {
    pub(crate) fn new(updates: InputSender, context: PumpContext) -> Self {
        let PumpContext { shared, client, restarted } = context;
        Self {
            updates,
            state: KiloEventState::new(shared.clone()),
            shared,
            client,
            restarted,
            rehydrations: 0,
            mapped: Vec::new(),
            inputs: Vec::new(),
            actions: Vec::new(),
        }
    }
}

impl Consumer for Pump {
    fn started(&mut self) {
        let _ = self.updates.try_send(connection(ConnectionStatus::Connecting, None, None));
    }

    async fn take(&mut self, update: KiloUpdate) -> Result<(), Gone> {
        // What was mapped before a reconnection goes out first: mapping that one waits on
        // the engine.
        if matches!(update, KiloUpdate::Connected { .. }) {
            send_all(&self.updates, &mut self.mapped).await?;
        }
        map(
            update,
            &mut self.state,
            &self.shared,
            &self.client,
            &mut self.restarted,
            &mut self.rehydrations,
            &mut self.inputs,
        )
        .await;
        self.mapped_now();
        Ok(())
    }

    /// Nearly every update: mapped as the router routes it, without a future.
    fn take_event(&mut self, event: KiloEvent) -> Result<(), KiloEvent> {
        self.state.apply_into(event, &mut self.inputs);
        self.mapped_now();
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), Gone> {
        send_all(&self.updates, &mut self.mapped).await?;
        for action in self.actions.drain(..) {
            act(&self.client, action).await;
        }
        Ok(())
    }
}

impl Pump {
    /// One update's inputs, mapped, joined to what goes on at the flush; the engine calls
    /// the mapping asked for, kept for it too.
    fn mapped_now(&mut self) {
        for input in self.inputs.drain(..) {
            push_merged(&mut self.mapped, input);
        }
        self.actions.extend(self.state.take_actions());
    }
}

/// Sends `mapped` in order; `Gone` once the service is gone. An input the channel has room
/// for goes without a future: `send`'s future holds the input and the channel's wait, and
/// making it is a copy of more than 250 bytes per input.
pub(crate) async fn send_all(updates: &InputSender, mapped: &mut Vec<Input>) -> Result<(), Gone> {
    for update in mapped.drain(..) {
        let update = match updates.try_send(update) {
            Ok(()) => continue,
            Err(TrySendError::Closed(_)) => return Err(Gone),
            Err(TrySendError::Full(update)) => update,
        };
        updates.send(update).await.map_err(|_| Gone)?;
    }
    Ok(())
}

/// One router update as host inputs, in the order they apply, appended to `out`.
async fn map(
    update: KiloUpdate,
    state: &mut KiloEventState,
    shared: &Shared,
    client: &KiloClient,
    restarted: &mut bool,
    rehydrations: &mut u64,
    out: &mut Vec<Input>,
) {
    let inputs = match update {
        KiloUpdate::Connected { reconnects } => {
            state.reset_stream();
            let mut out = vec![connection(ConnectionStatus::Connected, None, None)];
            out.extend(relist_untracked(shared, client).await);
            if reconnects > 0 || std::mem::take(restarted) {
                out.push(Input::Gap { session_id: None });
                out.extend(
                    shared.tracked().into_iter().map(|id| Input::Gap { session_id: Some(id) }),
                );
            }
            out
        }
        KiloUpdate::Reconnecting { attempt, delay, last_error } => {
            tracing::info!(attempt, ?delay, %last_error, "engine event stream dropped; reconnecting");
            vec![connection(
                ConnectionStatus::Connecting,
                Some(u64::from(attempt)),
                Some(last_error),
            )]
        }
        KiloUpdate::Rehydrated { session_id, messages, status, permissions, questions } => {
            *rehydrations += 1;
            shared.rehydrated.fetch_add(1, Ordering::Relaxed);
            shared.with(&session_id, |f| f.rebuild_failed = false);
            let running = status.kind != "idle";
            let mut payload = Map::new();
            payload.insert("sessionID".into(), json!(session_id));
            payload.insert("status".into(), json!(status.kind));
            payload.insert(
                "messages".into(),
                Value::Array(messages.iter().map(message_json).collect()),
            );
            let ids: Vec<&str> = permissions.iter().map(|p| p.id.as_str()).collect();
            payload.insert("permissions".into(), json!(ids));
            let qids: Vec<&str> = questions.iter().map(|q| q.id.as_str()).collect();
            payload.insert("questions".into(), json!(qids));
            let event = EngineEvent {
                id: format!("bb-rehydrate-{rehydrations}").into(),
                event_type: REHYDRATED_EVENT.into(),
                turn: None,
                ts: None,
                payload: payload.into(),
            };
            // Requests raised while the stream was down are shown now, once (the host shows
            // only those it has not seen), as the engine's own `*.asked` events would have.
            let listed = listed(shared, &session_id, &permissions, &questions);
            vec![
                Input::Events {
                    session_id: Arc::from(session_id.as_str()),
                    events: EngineEvents::one(classed(event)),
                },
                listed,
                Input::SessionRunning { session_id, running },
            ]
        }
        KiloUpdate::RehydrateFailed { session_id, error } => {
            tracing::warn!(%session_id, %error, "rebuilding a session after reconnect failed");
            shared.with(&session_id, |f| f.rebuild_failed = true);
            *rehydrations += 1;
            let mut payload = Map::new();
            payload.insert("sessionID".into(), json!(session_id));
            payload.insert(
                "message".into(),
                json!(
                    "the session could not be rebuilt from the engine after a reconnect; \
                         what is shown may be incomplete. Retry with bb.command retry."
                ),
            );
            payload.insert("retry".into(), json!({"command": "retry"}));
            let event = EngineEvent {
                id: format!("bb-rebuild-failed-{rehydrations}").into(),
                event_type: REBUILD_FAILED_EVENT.into(),
                turn: None,
                ts: None,
                payload: payload.into(),
            };
            vec![
                Input::Gap { session_id: Some(session_id.clone()) },
                Input::Events {
                    session_id: Arc::from(session_id.as_str()),
                    events: EngineEvents::one(classed(event)),
                },
            ]
        }
        // `Pump::take_event` maps the stream's events, without this future; one given
        // here is mapped the same way (no vector of its own).
        KiloUpdate::Event { event, .. } => {
            state.apply_into(event, out);
            return;
        }
        KiloUpdate::Sync(sync) => state.sync_echo(&sync),
        KiloUpdate::Unrouted(event) => {
            shared.unrouted.fetch_add(1, Ordering::Relaxed);
            tracing::trace!(event_type = %event.event_type, "engine event of no session");
            Vec::new()
        }
        KiloUpdate::Malformed { error, .. } => {
            shared.malformed.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(%error, "engine sent an event that is not a Kilo event");
            Vec::new()
        }
        KiloUpdate::Failed(err) => {
            tracing::error!(%err, "engine event stream failed for good");
            let mut out = vec![connection(ConnectionStatus::Error, None, Some(err.to_string()))];
            out.extend(stream_lost(shared, &err.to_string()));
            out
        }
    };
    out.extend(inputs);
}

/// The type of the bridge-made transcript warning of a session whose turn was running when
/// the engine's event stream failed for good (`payload: {sessionID, message, source:
/// "bridge"}`, class `run.error_or_gap`).
const STREAM_LOST_EVENT: &str = "warning";

/// The stream failed for good (credentials refused, the engine gone past the retry budget):
/// every session shown running is marked not running, with a warning in its transcript that
/// says why and what to do, so no window shows a turn running that nothing reports on.
fn stream_lost(shared: &Shared, why: &str) -> Vec<Input> {
    let mut out = Vec::new();
    for (n, session) in shared.take_running().into_iter().enumerate() {
        let mut payload = Map::new();
        payload.insert("sessionID".into(), json!(session));
        payload.insert(
            "message".into(),
            json!(format!(
                "The engine's event stream failed for good ({why}): this turn's progress can no \
                 longer be shown and the session is marked not running. Check the engine (its \
                 URL and credentials), then restart the bridge to follow the session again."
            )),
        );
        payload.insert("source".into(), json!("bridge"));
        let event = EngineEvent {
            id: format!("bb-stream-lost-{}", n + 1).into(),
            event_type: STREAM_LOST_EVENT.into(),
            turn: None,
            ts: None,
            payload: payload.into(),
        };
        out.push(Input::SessionRunning { session_id: session.clone(), running: false });
        out.push(Input::Events {
            session_id: Arc::from(session.as_str()),
            events: EngineEvents::one((event, EventClass::RunErrorOrGap)),
        });
    }
    out
}

/// Re-lists the requests of sessions the router does not rebuild (not tracked: the webview
/// never opened them, but their requests count): new ones are shown once, vanished ones are
/// closed. A failed listing leaves things as they are (logged; the next reconnect retries).
async fn relist_untracked(shared: &Shared, client: &KiloClient) -> Vec<Input> {
    let (permissions, questions) = match (client.permissions().await, client.questions().await) {
        (Ok(p), Ok(q)) => (p, q),
        (Ok(p), Err(_)) => (p, Vec::new()),
        (Err(err), _) => {
            tracing::warn!(%err, "re-listing permission requests after a reconnect failed");
            return Vec::new();
        }
    };
    let tracked = shared.tracked();
    let mut sessions = shared.sessions_asking();
    sessions.extend(permissions.iter().map(|p| p.session_id.clone()));
    sessions.extend(questions.iter().map(|q| q.session_id.clone()));
    sessions.sort();
    sessions.dedup();
    sessions
        .into_iter()
        .filter(|s| !tracked.contains(s))
        .map(|session| {
            let mine: Vec<PermissionRequest> =
                permissions.iter().filter(|p| p.session_id == session).cloned().collect();
            let asks: Vec<QuestionRequest> =
                questions.iter().filter(|q| q.session_id == session).cloned().collect();
            listed(shared, &session, &mine, &asks)
        })
        .collect()
}

/// The engine's list of a session's requests as the host's input, each with the event that
/// shows it (`permission.asked` / `question.asked` with id `bb-relisted-<id>`) should it be
/// new; the adapter's own note of what is open follows the list.
fn listed(
    shared: &Shared,
    session: &str,
    permissions: &[PermissionRequest],
    questions: &[QuestionRequest],
) -> Input {
    let mut prompts = Vec::new();
    for p in permissions {
        let body = serde_json::to_value(PermissionView::from(p)).unwrap_or_default();
        let event = asked("permission.asked", &format!("bb-relisted-{}", p.id), body);
        let prompt = prompt_of("permission.asked", session, &event.payload)
            .unwrap_or_else(|| Prompt::new(session, &p.id, kind_of(&p.permission)));
        prompts.push((prompt, Some((event, EventClass::PermissionRequest))));
    }
    for q in questions {
        let body = json!({"id": q.id, "sessionID": q.session_id, "questions": q.questions});
        let event = asked("question.asked", &format!("bb-relisted-{}", q.id), body);
        let prompt = Prompt::new(session, &q.id, PromptKind::Question);
        prompts.push((prompt, Some((event, EventClass::PermissionRequest))));
    }
    shared.with(session, |f| {
        f.asked = prompts.iter().map(|(p, _)| p.request_id.clone()).collect();
    });
    Input::PromptsListed { session_id: session.to_owned(), prompts }
}

/// Makes one engine call the event mapping asked for; failures are logged (the turn is
/// already marked failed for the webview).
async fn act(client: &KiloClient, action: Action) {
    let result = match &action {
        Action::Abort(session) => client.abort(session).await.map(drop),
    };
    if let Err(err) = result {
        tracing::warn!(?action, %err, "failing a turn closed: the engine call failed");
    }
}

/// The fields of a permission request the webview reads, in `permission.asked` shape.
#[derive(serde::Serialize)]
struct PermissionView<'a> {
    id: &'a str,
    #[serde(rename = "sessionID")]
    session_id: &'a str,
    permission: &'a str,
    patterns: &'a [String],
    metadata: &'a Value,
    always: &'a [String],
}

impl<'a> From<&'a PermissionRequest> for PermissionView<'a> {
    fn from(p: &'a PermissionRequest) -> Self {
        Self {
            id: &p.id,
            session_id: &p.session_id,
            permission: &p.permission,
            patterns: &p.patterns,
            metadata: &p.metadata,
            always: &p.always,
        }
    }
}

fn asked(event_type: &'static str, id: &str, body: Value) -> EngineEvent {
    let payload = match body {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    EngineEvent {
        id: id.into(),
        event_type: event_type.into(),
        turn: None,
        ts: None,
        payload: payload.into(),
    }
}

pub(crate) fn connection(
    status: ConnectionStatus,
    retry_count: Option<u64>,
    last_error: Option<String>,
) -> Input {
    Input::connection(status, retry_count, last_error)
}

/// A rehydrated message back in Kilo's wire shape (`{info, parts}`).
fn message_json(message: &MessageWithParts) -> Value {
    let mut info = message.info.extra.clone();
    info.insert("id".into(), json!(message.info.id));
    info.insert("sessionID".into(), json!(message.info.session_id));
    info.insert("role".into(), json!(message.info.role));
    json!({ "info": info, "parts": message.parts })
}
