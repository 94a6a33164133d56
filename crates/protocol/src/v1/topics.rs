//! The three v1 event topics and their exact payloads.

use std::borrow::Cow;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use bb_payload::{EventId, Payload};

use super::events::Events;
use super::results::SessionSummary;
use super::update_list::Updates;
use super::updates::WebviewUpdate;

/// Connection state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionStatus {
    /// Connecting or reconnecting.
    #[default]
    Connecting,
    /// Connected.
    Connected,
    /// Failed; see `lastError`.
    Error,
}

/// Payload of `bb/connection`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionPayload {
    /// Connection state.
    pub status: ConnectionStatus,
    /// The session whose stream this is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Reconnect attempts so far.
    #[serde(
        default,
        deserialize_with = "crate::count::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub retry_count: Option<u64>,
    /// Last error, redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Events were lost across a reconnect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_detected: Option<bool>,
    /// The current (re)connect or restart attempt, from 1.
    #[serde(
        default,
        deserialize_with = "crate::count::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub attempt: Option<u64>,
    /// Whether the bridge is restarting the engine. `status: "error"` with `restarting: false`
    /// means it gave up (the crash-loop breaker tripped; `lastError` says why) until the user
    /// asks for a restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restarting: Option<bool>,
    /// What the bridge knows about its engine link, for a diagnostics view.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<ConnectionDiagnostics>,
    /// Present on a heartbeat only: the bridge repeats the connection state to every ready
    /// webview every this many milliseconds (nothing changed; `sessionId` and `gapDetected`
    /// are left out). A webview that hears nothing for two intervals may show the bridge as
    /// not responding.
    #[serde(
        default,
        deserialize_with = "crate::count::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub heartbeat: Option<u64>,
}

/// Diagnostics carried by `bb/connection` (every field optional; never a secret).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionDiagnostics {
    /// Process id of the engine the bridge spawned.
    #[serde(
        default,
        deserialize_with = "crate::count::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub engine_pid: Option<u64>,
    /// Loopback port the engine listens on.
    #[serde(
        default,
        deserialize_with = "crate::count::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub engine_port: Option<u64>,
    /// Reconnects of the engine event stream so far.
    #[serde(
        default,
        deserialize_with = "crate::count::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub reconnects: Option<u64>,
    /// The last continuity gap, said in words (which session, what was lost, when).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_gap: Option<String>,
    /// Outbound messages waiting to be written to this webview.
    #[serde(
        default,
        deserialize_with = "crate::count::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub queue_depth: Option<u64>,
    /// Time from an engine event's arrival to the write of the batch carrying it, last batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_flush_latency_ms: Option<f64>,
    /// What is wrong with the engine's setup, said in words (e.g. its credential store is
    /// readable by other users); absent when nothing is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Payload of `bb/state`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatePayload {
    /// Known sessions.
    pub sessions: Vec<SessionSummary>,
    /// The selected session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_session_id: Option<String>,
    /// A run is in progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<bool>,
    /// Permission requests awaiting an answer.
    #[serde(
        default,
        deserialize_with = "crate::count::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub pending_permission_count: Option<u64>,
}

/// One engine event in a `bb/events` batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EngineEvent {
    /// Engine resume token, carried untouched.
    #[schemars(with = "String")]
    pub id: EventId,
    /// Event type (open set; unknown types are forwarded).
    // Borrowed where an adapter knows the type (Kilo's are a small set: no allocation per
    // event), owned otherwise.
    #[serde(rename = "type")]
    pub event_type: Cow<'static, str>,
    /// Turn number.
    #[serde(
        default,
        deserialize_with = "crate::count::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub turn: Option<u64>,
    /// Timestamp, milliseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<f64>,
    /// Event body.
    // Kept as the engine's text while the bridge leaves it unchanged (written out byte for
    // byte); read whole, it builds its tree once.
    #[serde(deserialize_with = "object_payload")]
    #[schemars(with = "Map<String, Value>")]
    pub payload: Payload,
}

/// An event body read from a message: it must be an object.
fn object_payload<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Payload, D::Error> {
    Map::<String, Value>::deserialize(d).map(Payload::from)
}

/// Where the full body of a truncated event item can be fetched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    /// The body reference: `bb.command {command: "body.get", args: {ref}}` returns the item's
    /// full `payload` while the bridge still holds it.
    #[serde(rename = "ref")]
    pub body_ref: String,
    /// JSON pointers (RFC 6901, relative to `payload`) of the fields replaced by previews.
    pub fields: Vec<String>,
    /// Size in bytes of the full `payload` serialized as JSON.
    #[serde(deserialize_with = "crate::count::required")]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub total_bytes: u64,
}

/// One item of a `bb/events` batch: the engine event plus what the bridge knows about it.
/// Dereferences to the [`EngineEvent`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventItem {
    /// The engine event (`id`, `type`, `turn`, `ts`, `payload`).
    #[serde(flatten)]
    pub event: EngineEvent,
    /// The stable event class from the normalization table (`tool.result`,
    /// `transcript.assistant_stream`, …, `unknown_event`). The bridge sets it on every item
    /// it sends; an additive v1 field, so an item without it is valid (read as empty).
    // Borrowed from the class table on the way out (no allocation per item), owned when read.
    #[serde(default, skip_serializing_if = "str::is_empty")]
    pub class: Cow<'static, str>,
    /// The `messageId` of the `bb.sendMessage` whose reply this event belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Set when large fields of `payload` were replaced by previews to fit the message limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncation>,
    /// The session the event belongs to, when it is not the message's: a sub-agent's
    /// permission request or question (and what settles it) shown on the tab of an
    /// ancestor session, because no tab shows the sub-agent's own. Answer it with this
    /// session id (the ancestor's works too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

impl EventItem {
    /// An item of `class` with nothing else set.
    pub fn new(event: EngineEvent, class: impl Into<Cow<'static, str>>) -> Self {
        EventItem {
            event,
            class: class.into(),
            message_id: None,
            truncated: None,
            session_id: None,
        }
    }

    /// Checks the item's count fields (see [`V1Topic::check_counts`]).
    pub(crate) fn check_counts(&self) -> Result<(), String> {
        check("turn", self.event.turn)?;
        check("totalBytes", self.truncated.as_ref().map(|t| t.total_bytes))
    }
}

/// A count field against the range decoding accepts.
fn check(name: &str, value: Option<u64>) -> Result<(), String> {
    match value {
        Some(v) if v > crate::count::MAX_COUNT => Err(format!(
            "`{name}`: invalid value {v}, expected a non-negative integer no larger than {}",
            crate::count::MAX_COUNT
        )),
        _ => Ok(()),
    }
}

impl std::ops::Deref for EventItem {
    type Target = EngineEvent;

    fn deref(&self) -> &EngineEvent {
        &self.event
    }
}

/// Payload of `bb/events`: an ordered batch for one session.
///
/// A bridge that tracks tabs sets `tabId` and `seq` (per tab: 1, 2, 3, … never reused) on
/// every message; a webview keeps the last `seq` per tab and hands it back in
/// `bb.init({lastSeen})` to get exactly what it missed. A message with `resync: true`
/// replaces what the tab shows by `view` (the session's reduced view model) or, for a
/// webview that receives updates, by what its `updates` rebuild, instead of adding to it;
/// its `events` may be empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventsPayload {
    /// The session.
    // Shared by every message of it and every copy the host keeps (a ring's, the early
    // store's): not copied per message.
    #[schemars(with = "String")]
    pub session_id: Arc<str>,
    /// Events in engine order.
    #[schemars(with = "Vec<EventItem>")]
    pub events: Events,
    /// The tab this message is for.
    // The tab's own id, shared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub tab_id: Option<Arc<str>>,
    /// Delivery index of this message within its tab (from 1, +1 per message).
    #[serde(
        default,
        deserialize_with = "crate::count::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub seq: Option<u64>,
    /// A declared resync: what the tab missed is no longer held; `view` replaces its state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resync: Option<bool>,
    /// The session's reduced view model (sent with `resync` to a webview that receives
    /// events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<Map<String, Value>>,
    /// What the host's reducers made of this message's events (and of those before it that
    /// carried none), for a webview that asked for updates (`bb.init({receive})`). With
    /// `resync: true`, the updates that rebuild the session's whole view.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<WebviewUpdate<'static>>>")]
    pub updates: Option<Updates>,
    /// With `resync: true` and `updates`: the resync carries the session's recent turns
    /// only; the older ones come from `bb.history` with this `before`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earlier: Option<Earlier>,
}

/// The part of a session's transcript a paged resync or `bb.history` page left out: ask
/// `bb.history({sessionId, before})` for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Earlier {
    /// Cursor: where the part left out ends (the bridge's position in the transcript).
    #[serde(deserialize_with = "crate::count::required")]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub before: u64,
    /// Turns left out (a turn starts at a user message).
    #[serde(deserialize_with = "crate::count::required")]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub turns: u64,
}

impl EventsPayload {
    /// A message of `session_id` carrying `events` and nothing else (no tab, `seq`, resync
    /// or updates yet).
    pub fn new(session_id: impl Into<Arc<str>>, events: Events) -> Self {
        EventsPayload {
            session_id: session_id.into(),
            events,
            tab_id: None,
            seq: None,
            resync: None,
            view: None,
            updates: None,
            earlier: None,
        }
    }
}

/// A v1 event: topic plus its payload.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "topic", content = "payload")]
pub enum V1Topic {
    /// Connection updates.
    #[serde(rename = "bb/connection")]
    Connection(ConnectionPayload),
    /// Session list and run state.
    // Shared: the host keeps the last one it sent each connection and refreshes it in
    // place once written, so a send copies nothing.
    #[serde(rename = "bb/state")]
    State(Arc<StatePayload>),
    /// Batched engine events.
    #[serde(rename = "bb/events")]
    Events(EventsPayload),
}

impl V1Topic {
    /// Every topic name.
    pub const NAMES: [&'static str; 3] = ["bb/connection", "bb/state", "bb/events"];

    /// The topic name on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            V1Topic::Connection(_) => "bb/connection",
            V1Topic::State(_) => "bb/state",
            V1Topic::Events(_) => "bb/events",
        }
    }

    /// Checks the count fields against the range decoding accepts (a non-negative integer
    /// up to 2^53 - 1): the one thing a typed payload can hold that its line would not decode
    /// back to. Every count field of every topic is listed here.
    pub(crate) fn check_counts(&self) -> Result<(), String> {
        match self {
            V1Topic::Connection(c) => {
                check("retryCount", c.retry_count)?;
                check("attempt", c.attempt)?;
                let Some(d) = &c.diagnostics else { return Ok(()) };
                check("enginePid", d.engine_pid)?;
                check("enginePort", d.engine_port)?;
                check("reconnects", d.reconnects)?;
                check("queueDepth", d.queue_depth)
            }
            V1Topic::State(s) => {
                check("pendingPermissionCount", s.pending_permission_count)?;
                s.sessions.iter().try_for_each(|x| check("queuedPrompts", x.queued_prompts))
            }
            V1Topic::Events(e) => {
                check("seq", e.seq)?;
                e.events.unwritten().iter().try_for_each(EventItem::check_counts)
            }
        }
    }

    /// Decodes a payload for a topic name. `None` for an unknown topic.
    pub(crate) fn parse(topic: &str, payload: Value) -> Option<Result<Self, serde_json::Error>> {
        Some(match topic {
            "bb/connection" => serde_json::from_value(payload).map(V1Topic::Connection),
            "bb/state" => serde_json::from_value(payload).map(|s| V1Topic::State(Arc::new(s))),
            "bb/events" => serde_json::from_value(payload).map(V1Topic::Events),
            _ => return None,
        })
    }
}

/// The payload of the bridge's own `bb.prompt.closed` event (class `permission.response`):
/// a prompt card every view resolves. Sent when a prompt closes without the engine saying so
/// (`decision` `stale`, `settled`, `expired`, `cancelled`) and when the engine took a
/// webview's answer, to every window showing the session, with who answered (the first
/// answer wins; the others' cards resolve with this instead of a dead button).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptClosedPayload {
    /// The prompt's own session.
    #[serde(rename = "sessionID")]
    pub session_id: String,
    /// The engine's request id.
    pub request_id: String,
    /// How it closed: the answer's `decision` (`allow_once`, `allow_rule`, `deny`, or
    /// `reply` for a question's answers), or `stale` / `settled` / `expired` / `cancelled`.
    pub decision: String,
    /// Which webview answered, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<AnsweredBy>,
}

/// The webview connection (and its tab) whose answer the engine took.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnsweredBy {
    /// The bridge's number for that webview connection (per bridge process, from 0).
    #[serde(deserialize_with = "crate::count::required")]
    #[schemars(range(max = crate::count::MAX_COUNT))]
    pub connection: u64,
    /// The tab that showed the prompt there, when it named one (absent: the connection's
    /// implicit tab).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tab_id: Option<String>,
}
