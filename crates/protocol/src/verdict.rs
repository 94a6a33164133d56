//! Transport selection and the one-line verdict a checker prints for a raw message.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::limits::Limits;
use crate::reject::Rejection;
use crate::v1::{V1Message, decode_v1};
use crate::ws::{WsMessage, decode_ws};

/// Which envelope a message uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// The host ↔ webview RPC v1 envelope (`req`/`res`/`evt`).
    V1,
    /// The WebSocket envelope (`request`/`response`/`event`).
    Ws,
}

impl Transport {
    /// `"v1"` or `"ws"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::V1 => "v1",
            Transport::Ws => "ws",
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A transport name other than `v1` or `ws`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown transport `{0}` (expected `v1` or `ws`)")]
pub struct UnknownTransport(pub String);

impl FromStr for Transport {
    type Err = UnknownTransport;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "v1" => Ok(Transport::V1),
            "ws" => Ok(Transport::Ws),
            other => Err(UnknownTransport(other.to_owned())),
        }
    }
}

/// A decoded message of either transport.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A v1 message.
    V1(V1Message),
    /// A WebSocket message.
    Ws(WsMessage),
}

/// Decodes one raw message of the given transport.
pub fn decode(transport: Transport, raw: &[u8], limits: &Limits) -> Result<Message, Rejection> {
    match transport {
        Transport::V1 => decode_v1(raw, limits).map(Message::V1),
        Transport::Ws => decode_ws(raw, limits).map(Message::Ws),
    }
}

/// What a raw message turned out to be, in the shape `bb-harness check-envelope` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// A valid request.
    Request {
        /// Its method name.
        method: String,
    },
    /// A valid response.
    Response {
        /// The id it answers.
        id: String,
    },
    /// A valid event.
    Event {
        /// The v1 topic or the WebSocket event name.
        topic: String,
    },
    /// A rejected message.
    Rejected {
        /// The stable rejection code.
        code: String,
    },
}

impl Verdict {
    /// Decodes a raw message and summarises the outcome.
    pub fn of(transport: Transport, raw: &[u8], limits: &Limits) -> Verdict {
        match decode(transport, raw, limits) {
            Ok(message) => Verdict::from(&message),
            Err(rejection) => Verdict::Rejected { code: rejection.code.as_str().to_owned() },
        }
    }
}

impl From<&Message> for Verdict {
    fn from(message: &Message) -> Self {
        match message {
            Message::V1(V1Message::Request(r)) => {
                Verdict::Request { method: r.call.method().as_str().to_owned() }
            }
            Message::V1(V1Message::Response(r)) => Verdict::Response { id: r.id.clone() },
            Message::V1(V1Message::Event(e)) => Verdict::Event { topic: e.topic.name().to_owned() },
            Message::Ws(WsMessage::Request(r)) => {
                Verdict::Request { method: r.call.method_name().to_owned() }
            }
            Message::Ws(WsMessage::Response(r)) => Verdict::Response { id: r.id.clone() },
            Message::Ws(WsMessage::Event(e)) => Verdict::Event { topic: e.event.name().to_owned() },
        }
    }
}
