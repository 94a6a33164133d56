//! What a connection holds open for the user: permission requests (the agent's, and the
//! bridge's own before an agent writes a file), elicitations, and the write grants an
//! approved edit leaves behind.

use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    CreateElicitationResponse, RequestPermissionOutcome, RequestPermissionResponse,
    SelectedPermissionOutcome,
};
use bb_protocol::ws::{AcpRequestId, PermissionOutcome};
use serde_json::{Map, Value};
use tokio::sync::oneshot;

/// Who takes the answer to a permission request.
pub(crate) enum Answer {
    /// The agent's `session/request_permission`.
    Agent(Box<Responder<RequestPermissionResponse>>),
    /// The bridge's own question (before an agent's write): the waiting handler.
    Bridge(oneshot::Sender<PermissionOutcome>),
}

impl Answer {
    /// Sends the outcome.
    pub(crate) fn send(self, outcome: &PermissionOutcome) -> Result<(), String> {
        match self {
            Answer::Agent(r) => r
                .respond(RequestPermissionResponse::new(sdk_outcome(outcome)))
                .map_err(|e| e.message),
            Answer::Bridge(tx) => {
                tx.send(outcome.clone()).map_err(|_| "the write is no longer waiting".to_owned())
            }
        }
    }
}

/// The ACP outcome for a wire outcome.
pub(crate) fn sdk_outcome(outcome: &PermissionOutcome) -> RequestPermissionOutcome {
    match outcome {
        PermissionOutcome::Cancelled => RequestPermissionOutcome::Cancelled,
        PermissionOutcome::Selected { option_id } => {
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option_id.clone()))
        }
    }
}

/// A permission request awaiting the user's answer.
pub(crate) struct PermissionAsk {
    /// The request id as JSON text (the table key).
    pub(crate) key: String,
    pub(crate) request_id: AcpRequestId,
    pub(crate) session_id: String,
    /// `(optionId, kind)` of each offered option.
    pub(crate) options: Vec<(String, String)>,
    /// The tool call's `kind` (`edit`, `execute`, …).
    pub(crate) kind: Option<String>,
    /// The paths the tool call names (its locations and raw input), normalized.
    pub(crate) paths: Vec<String>,
    pub(crate) answer: Answer,
}

/// An elicitation awaiting the user's answer.
pub(crate) struct ElicitationAsk {
    pub(crate) key: String,
    pub(crate) request_id: AcpRequestId,
    pub(crate) session_id: Option<String>,
    /// The form's JSON Schema (form mode).
    pub(crate) schema: Option<Value>,
    pub(crate) responder: Responder<CreateElicitationResponse>,
}

/// The paths a tool call names: `locations[].path` and the usual path fields of its raw
/// input (`filepath`, `filePath`, `path`), lexically normalized.
pub(crate) fn tool_call_paths(tool_call: &Value) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    let locations = tool_call.get("locations").and_then(Value::as_array);
    let raw = tool_call.get("rawInput");
    let candidates = locations
        .into_iter()
        .flatten()
        .filter_map(|l| l.get("path").and_then(Value::as_str))
        .chain(
            ["filepath", "filePath", "path", "file_path"]
                .iter()
                .filter_map(|k| raw.and_then(|r| r.get(*k)).and_then(Value::as_str)),
        );
    for p in candidates {
        if let Ok(n) = bb_normalize::contain::normalize(bb_normalize::PathFlavor::Posix, p, None)
            && !paths.contains(&n)
        {
            paths.push(n);
        }
    }
    paths
}

/// Whether a kind of tool call changes files (an approval of it covers writing its paths).
pub(crate) fn writes_files(kind: Option<&str>) -> bool {
    matches!(kind, Some("edit" | "delete" | "move"))
}

/// Checks an accepted form's content against the requested schema: required properties are
/// present and each given value has the property's type (and is one of its `enum` values).
pub(crate) fn check_form(schema: &Value, content: &Map<String, Value>) -> Result<(), String> {
    let props = schema.get("properties").and_then(Value::as_object);
    let mut problems = Vec::new();
    for name in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
        if let Some(name) = name.as_str()
            && !content.contains_key(name)
        {
            problems.push(format!("{name} is required"));
        }
    }
    for (name, value) in content {
        let Some(prop) = props.and_then(|p| p.get(name)) else {
            problems.push(format!("{name} is not a field of the form"));
            continue;
        };
        let ty = prop.get("type").and_then(Value::as_str);
        let ok = match ty {
            Some("string") => value.is_string(),
            Some("number") => value.is_number(),
            Some("integer") => value.is_i64() || value.is_u64(),
            Some("boolean") => value.is_boolean(),
            Some("array") => value.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
            _ => true,
        };
        if !ok {
            problems.push(format!("{name} must be a {}", ty.unwrap_or("value")));
            continue;
        }
        if let Some(allowed) = prop.get("enum").and_then(Value::as_array)
            && !allowed.contains(value)
        {
            problems.push(format!("{name} must be one of {}", Value::Array(allowed.clone())));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) }
}
