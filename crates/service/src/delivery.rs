//! What the runtime adds around an engine call for delivery: the host inputs a request
//! implies before it is dispatched (`messageId`, the tab a message's session streams to) and
//! after its response (`bb.init`: what the webview receives, readiness with `lastSeen`),
//! and the requests the bridge answers itself (`bb.command body.get`, `bb.history`).

use bb_host::{ConnId, Host, Input};
use bb_protocol::v1::{CommandResult, HistoryParams, V1Call, V1Error, V1Request, V1Response};
use serde_json::Value;

/// The `bb.command` the bridge answers itself: the full body behind a truncated item's `ref`.
pub(crate) const BODY_GET: &str = "body.get";

/// Bytes of body per `body.get` page: escaped as a JSON string it stays well under the
/// message limit.
pub(crate) const BODY_PAGE_BYTES: usize = 256 * 1024;

/// One page of a body from `offset` (bytes, moved back to a character boundary):
/// `{text, offset, totalBytes, nextOffset?}`. The body is the JSON text of the item's full
/// payload (or of the full string, for a resync view): concatenate the pages, then parse.
fn page(body: &str, offset: usize) -> Value {
    let start = body.floor_char_boundary(offset.min(body.len()));
    let end = body.floor_char_boundary(start.saturating_add(BODY_PAGE_BYTES).min(body.len()));
    let end =
        if end == start && start < body.len() { body.ceil_char_boundary(start + 1) } else { end };
    let mut out = serde_json::Map::new();
    out.insert("text".into(), Value::String(body[start..end].to_owned()));
    out.insert("offset".into(), Value::from(start as u64));
    out.insert("totalBytes".into(), Value::from(body.len() as u64));
    if end < body.len() {
        out.insert("nextOffset".into(), Value::from(end as u64));
    }
    Value::Object(out)
}

/// Inputs applied when a request is dispatched, before any of its events can arrive: a
/// create or select claims its session for this connection (released by
/// [`Input::Answered`] when its response goes out), a named tab marks the connection as one
/// that uses tabs, a message's session streams to the connection, and `bb.init` says whether
/// the workspace is trusted.
pub(crate) fn on_dispatch(conn: ConnId, req: &V1Request) -> Vec<Input> {
    let (named, claimed) = match &req.call {
        V1Call::CreateSession(p) => (p.tab_id.clone(), Some(None)),
        V1Call::SelectSession(p) => (p.tab_id.clone(), Some(Some(p.session_id.clone()))),
        _ => (None, None),
    };
    let mut inputs = Vec::new();
    // `bb.init {workspaceTrusted}`: the webview's word on trust, engine-wide.
    if let V1Call::Init(p) = &req.call
        && let Some(trusted) = p.workspace_trusted
    {
        inputs.push(Input::Trusted(trusted));
    }
    if let Some(session_id) = claimed {
        inputs.push(Input::Claimed { conn, request_id: req.id.clone(), session_id });
    }
    if let Some(tab_id) = named {
        inputs.push(Input::TabNamed { conn, tab_id });
    }
    if let V1Call::SendMessage(p) = &req.call {
        inputs.push(Input::SessionUsed { conn, session_id: p.session_id.clone(), tab_id: None });
        if let Some(message_id) = &p.message_id {
            inputs.push(Input::MessageSent {
                session_id: p.session_id.clone(),
                message_id: message_id.clone(),
            });
        }
    }
    inputs
}

/// Inputs applied after the response to `call`, whatever its outcome: a webview that called
/// `bb.init` listens from then on and gets what its tabs missed.
pub(crate) fn after_response(conn: ConnId, call: &V1Call) -> Vec<Input> {
    match call {
        V1Call::Init(p) => {
            // A later `bb.init` without `receive` (one that only says trust changed) keeps
            // what the webview chose.
            let receive = p.receive.map(|receive| Input::Receive { conn, receive });
            let ready =
                Input::WebviewReady { conn, last_seen: p.last_seen.clone().unwrap_or_default() };
            receive.into_iter().chain([ready]).collect()
        }
        _ => Vec::new(),
    }
}

/// `bb.history`: a page of the session's older turns from the host's view.
fn history(host: &mut Host, req: &V1Request, p: &HistoryParams) -> V1Response {
    match host.history(&p.session_id, p.before, p.limit) {
        Some(result) => V1Response::success_with(&req.id, &result).unwrap_or_else(|e| {
            V1Response::failure(&req.id, V1Error::new("internal_error", e.to_string()))
        }),
        None => V1Response::failure(
            &req.id,
            V1Error::new(
                "session_not_found",
                format!(
                    "the bridge holds no view of session `{}`: select it (bb.selectSession) \
                     and page from the resync's `earlier`",
                    p.session_id
                ),
            ),
        ),
    }
}

/// The response to a request the bridge answers without the engine, if it is one.
pub(crate) fn bridge_answer(host: &mut Host, req: &V1Request) -> Option<V1Response> {
    if let V1Call::History(p) = &req.call {
        return Some(history(host, req, p));
    }
    let V1Call::Command(p) = &req.call else { return None };
    if p.command != BODY_GET {
        return None;
    }
    let reference = p.args.as_ref().and_then(|a| a.get("ref")).and_then(Value::as_str);
    let Some(reference) = reference else {
        let error = V1Error::new(
            "invalid_params",
            "body.get needs args.ref: the `ref` of a truncated event item",
        );
        return Some(V1Response::failure(&req.id, error));
    };
    let offset = p.args.as_ref().and_then(|a| a.get("offset")).and_then(Value::as_u64).unwrap_or(0);
    let response = match host.session_body(&p.session_id, reference) {
        Some(body) => {
            let output = page(body, usize::try_from(offset).unwrap_or(usize::MAX));
            let result = CommandResult { session_id: p.session_id.clone(), output: Some(output) };
            V1Response::success_with(&req.id, &result).unwrap_or_else(|e| {
                V1Response::failure(&req.id, V1Error::new("internal_error", e.to_string()))
            })
        }
        None => V1Response::failure(
            &req.id,
            V1Error::new(
                "body_not_found",
                format!(
                    "no body `{reference}`: the bridge keeps the most recent {} MiB of \
                     truncated bodies and this one was evicted (or never existed); reselect \
                     the session to see it again",
                    bb_host::BODY_STORE_BYTES / (1024 * 1024)
                ),
            ),
        ),
    };
    Some(response)
}
