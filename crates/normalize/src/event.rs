//! The raw engine event both engines map into, and the parsers from their wire JSON.

use std::borrow::Cow;

pub use bb_payload::Payload;
use bb_protocol::v1::EventId;
use serde::Serialize;
use serde_json::{Map, Value};

/// Which engine produced an event; decides how its `type` is classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// The Kilo CLI server (or opencode): `{id, type, properties}` events.
    Kilo,
    /// The BreadBoard engine: `{id, seq, type, session_id, turn, timestamp, payload}` envelopes.
    #[serde(rename = "breadboard")]
    BreadBoard,
    /// An Agent Client Protocol agent: each event is one `session/update` object (its kind
    /// in `sessionUpdate`) or a bridge-made turn/permission event (its kind in `type`).
    Acp,
}

/// One engine event before classification. Ids are carried untouched.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RawEvent {
    /// The event's own id (BreadBoard envelope UUID, Kilo `evt_…`), or the SSE `id:` when the
    /// event carries none. Opaque; never rewritten. Kept as `EngineEvent.id` is (inline when
    /// short), so that it goes from the event to the batch and back without a copy on the heap.
    pub id: Option<EventId>,
    /// The engine that produced the event.
    pub engine: Engine,
    /// The engine's `type` discriminator, verbatim: borrowed when the adapter knows the type,
    /// so a known one costs no allocation per event (`bb_protocol::v1::EngineEvent` holds it
    /// the same way).
    #[serde(rename = "type")]
    pub kind: Cow<'static, str>,
    /// The session the event belongs to, when it names one.
    pub session_id: Option<String>,
    /// BreadBoard envelope `seq` (per-session counter), or Kilo `sync` seq.
    pub seq: Option<u64>,
    /// The turn number, when the engine gives one.
    pub turn: Option<i64>,
    /// Engine timestamp in epoch milliseconds, when given.
    pub ts: Option<u64>,
    /// The event body: BreadBoard `payload`, Kilo `properties` (or `syncEvent` for `sync`),
    /// kept as the engine's text where the adapter received it so (read typed with
    /// [`Payload::read`], or whole through its tree).
    pub payload: Payload,
}

/// Why a wire event could not be turned into a [`RawEvent`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EventError {
    /// The data is not valid JSON.
    #[error("event data is not valid JSON: {0}")]
    InvalidJson(String),
    /// The JSON is valid but not an object.
    #[error("event data is not a JSON object")]
    NotAnObject,
    /// The object has no string `type`.
    #[error("event has no string `type`")]
    MissingType,
}

impl RawEvent {
    /// Builds an event by hand (tests, adapters that already parsed the envelope).
    pub fn new(
        engine: Engine,
        kind: impl Into<Cow<'static, str>>,
        payload: impl Into<Payload>,
    ) -> Self {
        Self {
            id: None,
            engine,
            kind: kind.into(),
            session_id: None,
            seq: None,
            turn: None,
            ts: None,
            payload: payload.into(),
        }
    }

    /// Sets the id (builder style).
    #[must_use]
    pub fn with_id(mut self, id: impl Into<EventId>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets the turn (builder style).
    #[must_use]
    pub fn with_turn(mut self, turn: i64) -> Self {
        self.turn = Some(turn);
        self
    }

    /// Parses one SSE `data` payload of the given engine. `sse_id` is the SSE `id:` field, used
    /// as the id only when the JSON carries none.
    pub fn parse(engine: Engine, data: &str, sse_id: Option<&str>) -> Result<Self, EventError> {
        let value: Value =
            serde_json::from_str(data).map_err(|e| EventError::InvalidJson(e.to_string()))?;
        Self::from_value(engine, value, sse_id)
    }

    /// Like [`RawEvent::parse`], from an already parsed JSON value.
    pub fn from_value(
        engine: Engine,
        value: Value,
        sse_id: Option<&str>,
    ) -> Result<Self, EventError> {
        let Value::Object(obj) = value else {
            return Err(EventError::NotAnObject);
        };
        let mut ev = match engine {
            Engine::BreadBoard => from_breadboard(obj)?,
            Engine::Kilo => from_kilo(obj)?,
            Engine::Acp => from_acp(obj)?,
        };
        if ev.id.is_none() {
            ev.id = sse_id.map(EventId::from);
        }
        Ok(ev)
    }
}

fn take_str(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn take_u64(obj: &Map<String, Value>, key: &str) -> Option<u64> {
    obj.get(key).and_then(Value::as_u64)
}

fn from_breadboard(mut obj: Map<String, Value>) -> Result<RawEvent, EventError> {
    let kind = take_str(&obj, "type").ok_or(EventError::MissingType)?.into();
    let ts = take_u64(&obj, "timestamp_ms")
        .or_else(|| take_u64(&obj, "timestamp"))
        .or_else(|| take_u64(&obj, "ts"));
    Ok(RawEvent {
        id: take_str(&obj, "id").map(EventId::from),
        engine: Engine::BreadBoard,
        session_id: take_str(&obj, "session_id"),
        seq: take_u64(&obj, "seq"),
        turn: obj.get("turn").and_then(Value::as_i64),
        ts,
        payload: obj.remove("payload").unwrap_or(Value::Null).into(),
        kind,
    })
}

fn from_acp(obj: Map<String, Value>) -> Result<RawEvent, EventError> {
    let kind = take_str(&obj, "sessionUpdate")
        .or_else(|| take_str(&obj, "type"))
        .ok_or(EventError::MissingType)?
        .into();
    let session_id = take_str(&obj, "sessionId");
    Ok(RawEvent {
        id: take_str(&obj, "id").map(EventId::from),
        engine: Engine::Acp,
        kind,
        session_id,
        seq: None,
        turn: None,
        ts: None,
        payload: Value::Object(obj).into(),
    })
}

fn from_kilo(mut obj: Map<String, Value>) -> Result<RawEvent, EventError> {
    // `/global/event` wraps each event as `{directory?, project?, payload: {…event…}}`.
    if !obj.contains_key("type") {
        if let Some(Value::Object(inner)) = obj.remove("payload") {
            return from_kilo(inner);
        }
        return Err(EventError::MissingType);
    }
    let kind: Cow<'static, str> = take_str(&obj, "type").ok_or(EventError::MissingType)?.into();
    let id = take_str(&obj, "id").map(EventId::from);
    if kind == "sync" {
        let payload = obj.remove("syncEvent").unwrap_or(Value::Null);
        let session_id = payload.get("aggregateID").and_then(Value::as_str).map(str::to_owned);
        let seq = payload.get("seq").and_then(Value::as_u64);
        return Ok(RawEvent {
            id,
            engine: Engine::Kilo,
            kind,
            session_id,
            seq,
            turn: None,
            ts: None,
            payload: payload.into(),
        });
    }
    let payload = obj.remove("properties").unwrap_or(Value::Null);
    let session_id = payload.get("sessionID").and_then(Value::as_str).map(str::to_owned);
    let ts = payload.get("time").and_then(Value::as_u64);
    let payload = payload.into();
    Ok(RawEvent { id, engine: Engine::Kilo, kind, session_id, seq: None, turn: None, ts, payload })
}
