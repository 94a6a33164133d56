//! Decoding and validating one raw WebSocket message, in a fixed order of checks.

use serde_json::{Map, Value};

use super::envelope::{
    WsAnyMethod, WsError, WsEvent, WsMessage, WsRequest, WsRequestCall, WsResponse,
};
use super::events::WsEventKind;
use crate::decode::{
    envelope, params_object, parse_object, required_str, response_parts, type_name,
};
use crate::limits::Limits;
use crate::marker::{EventTag, RequestTag, ResponseTag};
use crate::reject::{RejectCode, Rejection};

/// Decodes one raw WebSocket message.
///
/// Checks, in order: byte length (`payload_too_large`), nesting depth and JSON syntax
/// (`invalid_json`), object shape and `type` (`invalid_envelope`), then the type's fields.
/// For requests: `id`, `method` (`unknown_method`; the WebSocket methods and the v1 `bb.*`
/// methods are known), params (`invalid_params`). There is no
/// version field, so `unsupported_version` never occurs here. The rejection carries the
/// request id whenever the message is a `request` with a string id.
pub fn decode_ws(raw: &[u8], limits: &Limits) -> Result<WsMessage, Rejection> {
    let mut obj = parse_object(raw, limits)?;
    let request_id = match (obj.get("type"), obj.get("id")) {
        (Some(Value::String(t)), Some(Value::String(id))) if t == "request" => Some(id.clone()),
        _ => None,
    };
    decode_object(&mut obj).map_err(|r| r.with_id(request_id.as_deref()))
}

fn decode_object(obj: &mut Map<String, Value>) -> Result<WsMessage, Rejection> {
    match required_str(obj, "type")? {
        "request" => decode_request(obj).map(WsMessage::Request),
        "response" => decode_response(obj).map(WsMessage::Response),
        "event" => decode_event(obj).map(WsMessage::Event),
        other => Err(envelope(format!("unknown type `{other}`"))),
    }
}

fn decode_request(obj: &mut Map<String, Value>) -> Result<WsRequest, Rejection> {
    let id = required_str(obj, "id")?.to_owned();
    let method_name = required_str(obj, "method")?;
    let method = WsAnyMethod::from_name(method_name).ok_or_else(|| {
        Rejection::new(RejectCode::UnknownMethod, format!("unknown method `{method_name}`"))
    })?;
    let params = params_object(obj.remove("params"))?;
    let invalid = |name: &str, e: serde_json::Error| {
        Rejection::new(RejectCode::InvalidParams, format!("{name}: {e}"))
    };
    let call = match method {
        WsAnyMethod::Ws(m) => {
            WsRequestCall::Ws(m.parse_params(params).map_err(|e| invalid(m.as_str(), e))?)
        }
        WsAnyMethod::Bb(m) => {
            WsRequestCall::Bb(m.parse_params(params).map_err(|e| invalid(m.as_str(), e))?)
        }
    };
    Ok(WsRequest { kind: RequestTag, id, call })
}

fn decode_response(obj: &mut Map<String, Value>) -> Result<WsResponse, Rejection> {
    let id = required_str(obj, "id")?.to_owned();
    let (ok, result, error) = response_parts(obj)?;
    let error = error
        .map(serde_json::from_value::<WsError>)
        .transpose()
        .map_err(|e| envelope(format!("`error` must be {{message, code?, data?}}: {e}")))?;
    Ok(WsResponse { kind: ResponseTag, id, ok, result, error })
}

fn decode_event(obj: &mut Map<String, Value>) -> Result<WsEvent, Rejection> {
    let name = required_str(obj, "event")?.to_owned();
    let payload = match obj.remove("payload") {
        Some(Value::Object(payload)) => payload,
        Some(other) => {
            return Err(envelope(format!(
                "`payload` of `{name}` must be an object, got {}",
                type_name(&other)
            )));
        }
        None => return Err(envelope("missing `payload`")),
    };
    match WsEventKind::from_parts(&name, payload) {
        None => Err(envelope(format!("unknown event `{name}`"))),
        Some(Err(e)) => Err(envelope(format!("payload does not match `{name}`: {e}"))),
        Some(Ok(event)) => Ok(WsEvent { kind: EventTag, event }),
    }
}

impl WsMessage {
    /// Serializes to one line (no trailing newline) after validating the result exactly as an
    /// inbound message would be: the check bridges run before writing.
    pub fn to_line(&self, limits: &Limits) -> Result<String, Rejection> {
        let line = serde_json::to_string(self)
            .map_err(|e| Rejection::new(RejectCode::InvalidJson, e.to_string()))?;
        decode_ws(line.as_bytes(), limits)?;
        Ok(line)
    }
}
