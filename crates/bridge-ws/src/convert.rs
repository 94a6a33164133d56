//! The service speaks v1; the WebSocket speaks its own envelope. Responses and topics map
//! one to one: `{code, message, details}` becomes `{message, code, data}` and a topic becomes
//! an event of the same name.

use bb_protocol::V1Message;
use bb_protocol::ws::{WsError, WsEvent, WsMessage, WsResponse};
use serde_json::Value;

/// The WebSocket form of an outbound v1 message; `None` for a request (the service never
/// sends one).
pub fn to_ws(message: V1Message) -> Option<WsMessage> {
    match message {
        V1Message::Response(r) => Some(WsMessage::Response(match (r.ok, r.error) {
            (false, Some(e)) => WsResponse::failure(
                r.id,
                WsError { message: e.message, code: Some(e.code), data: e.details },
            ),
            (false, None) => WsResponse::failure(
                r.id,
                WsError::new("internal_error", "the request failed without an error"),
            ),
            (true, _) => WsResponse::success(r.id, r.result.unwrap_or(Value::Null)),
        })),
        V1Message::Event(e) => Some(WsMessage::Event(WsEvent::new(e.topic.into()))),
        V1Message::Request(_) => None,
    }
}
