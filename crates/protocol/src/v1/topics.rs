//! The three v1 event topics and their exact payloads.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::results::SessionSummary;

/// Connection state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionStatus {
    /// Connecting or reconnecting.
    Connecting,
    /// Connected.
    Connected,
    /// Failed; see `lastError`.
    Error,
}

/// Payload of `bb/connection`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
    pub id: String,
    /// Event type (open set; unknown types are forwarded).
    #[serde(rename = "type")]
    pub event_type: String,
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
    pub payload: Map<String, Value>,
}

/// Payload of `bb/events`: an ordered batch for one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventsPayload {
    /// The session.
    pub session_id: String,
    /// Events in engine order.
    pub events: Vec<EngineEvent>,
}

/// A v1 event: topic plus its payload.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "topic", content = "payload")]
pub enum V1Topic {
    /// Connection updates.
    #[serde(rename = "bb/connection")]
    Connection(ConnectionPayload),
    /// Session list and run state.
    #[serde(rename = "bb/state")]
    State(StatePayload),
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
        let check = |name: &str, value: Option<u64>| match value {
            Some(v) if v > crate::count::MAX_COUNT => Err(format!(
                "`{name}`: invalid value {v}, expected a non-negative integer no larger than {}",
                crate::count::MAX_COUNT
            )),
            _ => Ok(()),
        };
        match self {
            V1Topic::Connection(c) => check("retryCount", c.retry_count),
            V1Topic::State(s) => check("pendingPermissionCount", s.pending_permission_count),
            V1Topic::Events(e) => e.events.iter().try_for_each(|ev| check("turn", ev.turn)),
        }
    }

    /// Decodes a payload for a topic name. `None` for an unknown topic.
    pub(crate) fn parse(topic: &str, payload: Value) -> Option<Result<Self, serde_json::Error>> {
        Some(match topic {
            "bb/connection" => serde_json::from_value(payload).map(V1Topic::Connection),
            "bb/state" => serde_json::from_value(payload).map(V1Topic::State),
            "bb/events" => serde_json::from_value(payload).map(V1Topic::Events),
            _ => return None,
        })
    }
}
