//! Small lookups over untrusted JSON payloads: every accessor tolerates any shape.

use serde_json::Value;

/// The value at a `/`-free key path, if every step is an object holding the key.
pub(crate) fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for key in path {
        cur = cur.get(*key)?;
    }
    Some(cur)
}

/// The first non-empty string found at any of the paths.
pub(crate) fn str_at<'a>(v: &'a Value, paths: &[&[&str]]) -> Option<&'a str> {
    paths.iter().filter_map(|p| at(v, p).and_then(Value::as_str)).find(|s| !s.is_empty())
}

/// The first string found at any of the paths, owned.
pub(crate) fn string_at(v: &Value, paths: &[&[&str]]) -> Option<String> {
    str_at(v, paths).map(str::to_owned)
}

/// A scalar id (string or integer) at any of the paths, as a string.
pub(crate) fn id_at(v: &Value, paths: &[&[&str]]) -> Option<String> {
    paths.iter().find_map(|p| match at(v, p)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// A boolean at the path.
pub(crate) fn bool_at(v: &Value, path: &[&str]) -> Option<bool> {
    at(v, path).and_then(Value::as_bool)
}

/// Renders a value as display text: strings verbatim, arrays of strings joined by newlines,
/// anything else as pretty JSON. `None` for null.
pub(crate) fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Array(items) if items.iter().all(Value::is_string) => {
            Some(items.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n"))
        }
        other => serde_json::to_string_pretty(other).ok(),
    }
}
