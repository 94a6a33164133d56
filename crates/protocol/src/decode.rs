//! Shared decoding steps: limits, JSON parsing, object field access, params normalisation and
//! response consistency. Transport-specific rules live in `v1::decode` and `ws::decode`.

use serde_json::{Map, Value};

use crate::limits::Limits;
use crate::reject::{RejectCode, Rejection};

/// Applies the limits, then parses one JSON object.
pub(crate) fn parse_object(raw: &[u8], limits: &Limits) -> Result<Map<String, Value>, Rejection> {
    limits.precheck(raw)?;
    let value: Value = serde_json::from_slice(raw)
        .map_err(|e| Rejection::new(RejectCode::InvalidJson, e.to_string()))?;
    match value {
        Value::Object(map) => Ok(map),
        other => Err(envelope(format!("expected a JSON object, got {}", type_name(&other)))),
    }
}

pub(crate) fn envelope(detail: impl Into<String>) -> Rejection {
    Rejection::new(RejectCode::InvalidEnvelope, detail)
}

/// Reads a required string field; missing or not a string is `invalid_envelope`.
pub(crate) fn required_str<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
) -> Result<&'a str, Rejection> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(envelope(format!("`{key}` must be a string, got {}", type_name(other)))),
        None => Err(envelope(format!("missing `{key}`"))),
    }
}

/// Reads a field, treating `null` as absent.
pub(crate) fn take_present(obj: &mut Map<String, Value>, key: &str) -> Option<Value> {
    obj.remove(key).filter(|v| !v.is_null())
}

/// Params as an object: absent or `null` become `{}`; anything but an object is an error.
pub(crate) fn params_object(params: Option<Value>) -> Result<Value, Rejection> {
    match params {
        None | Some(Value::Null) => Ok(Value::Object(Map::new())),
        Some(obj @ Value::Object(_)) => Ok(obj),
        Some(other) => Err(Rejection::new(
            RejectCode::InvalidParams,
            format!("params must be an object, got {}", type_name(&other)),
        )),
    }
}

/// Checks `ok` against `result`/`error` (null counts as absent) and returns them.
pub(crate) fn response_parts(
    obj: &mut Map<String, Value>,
) -> Result<(bool, Option<Value>, Option<Value>), Rejection> {
    let ok = match obj.get("ok") {
        Some(Value::Bool(ok)) => *ok,
        Some(other) => {
            return Err(envelope(format!("`ok` must be a boolean, got {}", type_name(other))));
        }
        None => return Err(envelope("missing `ok`")),
    };
    // A `null` result is kept (a method may return nothing) but never conflicts with `ok`.
    let result = obj.remove("result");
    let error = take_present(obj, "error");
    let has_result = result.as_ref().is_some_and(|r| !r.is_null());
    match (ok, has_result, &error) {
        (true, _, Some(_)) => Err(envelope("`ok: true` response carries an `error`")),
        (false, _, None) => Err(envelope("`ok: false` response lacks an `error`")),
        (false, true, _) => Err(envelope("`ok: false` response carries a `result`")),
        (false, false, _) => Ok((ok, None, error)),
        (true, _, None) => Ok((ok, result, error)),
    }
}

/// The JSON type of a value, for messages.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
