//! Decoding and validating one raw v1 message, in a fixed order of checks.

use serde_json::{Map, Value};

use super::envelope::{V1Error, V1Event, V1Message, V1Method, V1Request, V1Response};
use super::topics::V1Topic;
use crate::decode::{
    envelope, params_object, parse_object, required_str, response_parts, type_name,
};
use crate::limits::Limits;
use crate::marker::{EvtTag, ProtocolV1, ReqTag, ResTag};
use crate::reject::{RejectCode, Rejection};

/// Decodes one raw v1 message.
///
/// Checks, in order: byte length (`payload_too_large`), nesting depth and JSON syntax
/// (`invalid_json`), object shape (`invalid_envelope`), `v` (`invalid_envelope` when missing
/// or not a number, `unsupported_version` when a number other than 1), `kind`, then the
/// kind's fields. For requests: `id`, `method` (`unknown_method`), params (`invalid_params`).
/// The rejection carries the request id whenever the message is a `req` with a string id.
pub fn decode_v1(raw: &[u8], limits: &Limits) -> Result<V1Message, Rejection> {
    let mut obj = parse_object(raw, limits)?;
    let request_id = match (obj.get("kind"), obj.get("id")) {
        (Some(Value::String(kind)), Some(Value::String(id))) if kind == "req" => Some(id.clone()),
        _ => None,
    };
    decode_object(&mut obj).map_err(|r| r.with_id(request_id.as_deref()))
}

fn decode_object(obj: &mut Map<String, Value>) -> Result<V1Message, Rejection> {
    check_version(obj)?;
    let kind = required_str(obj, "kind")?;
    match kind {
        "req" => decode_request(obj).map(V1Message::Request),
        "res" => decode_response(obj).map(V1Message::Response),
        "evt" => decode_event(obj).map(V1Message::Event),
        other => Err(envelope(format!("unknown kind `{other}`"))),
    }
}

fn check_version(obj: &Map<String, Value>) -> Result<(), Rejection> {
    match obj.get("v") {
        None => Err(envelope("missing `v`")),
        Some(Value::Number(n)) if n.as_u64() == Some(1) => Ok(()),
        Some(Value::Number(n)) => Err(Rejection::new(
            RejectCode::UnsupportedVersion,
            format!("version {n} is not supported (this bridge speaks v1)"),
        )),
        Some(other) => Err(envelope(format!("`v` must be a number, got {}", type_name(other)))),
    }
}

fn decode_request(obj: &mut Map<String, Value>) -> Result<V1Request, Rejection> {
    let id = required_str(obj, "id")?.to_owned();
    let method_name = required_str(obj, "method")?;
    let method = V1Method::from_name(method_name).ok_or_else(|| {
        Rejection::new(RejectCode::UnknownMethod, format!("unknown method `{method_name}`"))
    })?;
    let params = params_object(obj.remove("params"))?;
    let call = method
        .parse_params(params)
        .map_err(|e| Rejection::new(RejectCode::InvalidParams, format!("{method}: {e}")))?;
    Ok(V1Request { v: ProtocolV1, kind: ReqTag, id, call })
}

fn decode_response(obj: &mut Map<String, Value>) -> Result<V1Response, Rejection> {
    let id = required_str(obj, "id")?.to_owned();
    let (ok, result, error) = response_parts(obj)?;
    let error = error
        .map(serde_json::from_value::<V1Error>)
        .transpose()
        .map_err(|e| envelope(format!("`error` must be {{code, message, details?}}: {e}")))?;
    Ok(V1Response { v: ProtocolV1, kind: ResTag, id, ok, result, error })
}

fn decode_event(obj: &mut Map<String, Value>) -> Result<V1Event, Rejection> {
    let topic = required_str(obj, "topic")?.to_owned();
    let payload = obj.remove("payload").ok_or_else(|| envelope("missing `payload`"))?;
    match V1Topic::parse(&topic, payload) {
        None => Err(envelope(format!("unknown topic `{topic}`"))),
        Some(Err(e)) => Err(envelope(format!("payload does not match `{topic}`: {e}"))),
        Some(Ok(topic)) => Ok(V1Event { v: ProtocolV1, kind: EvtTag, topic }),
    }
}

impl V1Message {
    /// Serializes to one line (no trailing newline) after validating the result exactly as an
    /// inbound message would be: the check bridges run before writing.
    ///
    /// An event is built from the typed topics, so its line always decodes back except where
    /// a limit or a value range applies: for events the same checks run on the line and the
    /// typed payload (byte length, nesting depth, count ranges) without parsing the line a
    /// second time; the rejection is the one decoding would give. Requests and responses are
    /// decoded again.
    pub fn to_line(&self, limits: &Limits) -> Result<String, Rejection> {
        let mut bytes = Vec::new();
        self.write_line(&mut bytes, limits)?;
        String::from_utf8(bytes).map_err(|e| Rejection::new(RejectCode::InvalidJson, e.to_string()))
    }

    /// [`V1Message::to_line`], the line appended to `out` (a writer's buffer) instead of
    /// returned: no line of its own to allocate and copy. On a rejection `out` is as it was.
    pub fn write_line(&self, out: &mut Vec<u8>, limits: &Limits) -> Result<(), Rejection> {
        let start = out.len();
        let written = self.write_checked(out, start, limits);
        if written.is_err() {
            out.truncate(start);
        }
        written
    }

    /// Writes the line at `out[start..]` and checks it there.
    fn write_checked(
        &self,
        out: &mut Vec<u8>,
        start: usize,
        limits: &Limits,
    ) -> Result<(), Rejection> {
        // Sized for a written event list and update list, so the line is not regrown as it
        // is written.
        out.reserve(match self {
            V1Message::Event(V1Event { topic: V1Topic::Events(p), .. }) => {
                let updates = p.updates.as_ref().map_or(0, |u| u.written_len() + 12);
                p.events.written_len() + updates + p.session_id.len() + 128
            }
            // About what a summary with an id, a title, a status and a time takes.
            V1Message::Event(V1Event { topic: V1Topic::State(s), .. }) => {
                s.sessions.len() * 128 + 128
            }
            _ => 256,
        });
        // A `bb/events` line, the one the delivery path writes per flush, and a `bb/state`
        // line, which lists every session, are written directly (`events_line.rs`,
        // `state_line.rs`: the derive's bytes without its generic layers).
        let written = match self {
            V1Message::Event(V1Event { topic: V1Topic::Events(p), .. }) => {
                super::events_line::write(out, p)
            }
            V1Message::Event(V1Event { topic: V1Topic::State(s), .. }) => {
                super::state_line::write(out, s)
            }
            _ => serde_json::to_writer(&mut *out, self),
        };
        written.map_err(|e| Rejection::new(RejectCode::InvalidJson, e.to_string()))?;
        // UTF-8 only: serde_json writes `str`s, and a `bb/events` or `bb/state` line adds
        // ASCII and texts serde_json wrote.
        let line = &out[start..];
        match self {
            V1Message::Event(event) => {
                limits.precheck(line)?;
                event.topic.check_counts().map_err(|e| {
                    let topic = event.topic.name();
                    envelope(format!("payload does not match `{topic}`: {e}"))
                })?;
            }
            V1Message::Request(_) | V1Message::Response(_) => {
                decode_v1(line, limits)?;
            }
        }
        Ok(())
    }
}
