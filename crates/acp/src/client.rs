//! The client side of the connection: what the agent sends the bridge. Session updates go
//! to the event channel (those of closed sessions are dropped and counted); permission
//! requests and elicitations wait for the user; file reads, writes and terminals are served
//! under the workspace's rules. Any other agent request is answered "method not found" by
//! the SDK. Handlers that do IO or wait run in their own task, so the dispatch loop (which
//! keeps updates in order) never waits on them.

use std::path::PathBuf;

use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    CompleteElicitationNotification, CreateElicitationRequest, CreateElicitationResponse,
    CreateTerminalRequest, CreateTerminalResponse, ElicitationMode, ElicitationScope,
    KillTerminalRequest, KillTerminalResponse, ReadTextFileRequest, ReadTextFileResponse,
    ReleaseTerminalRequest, ReleaseTerminalResponse, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, TerminalOutputRequest,
    TerminalOutputResponse, WaitForTerminalExitRequest, WaitForTerminalExitResponse,
    WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::{Agent, Client};
use bb_protocol::ws::{AcpRequestId, PermissionOutcome};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::asks::{Answer, ElicitationAsk, PermissionAsk, tool_call_paths};
use crate::conn::{Ctx, lock};
use crate::event::AcpEventKind;
use crate::fs::{self, FsRefusal};
use crate::terminal::exit_status;

/// `session/update` taken raw, so an update kind the SDK's typed enum does not know is
/// still forwarded rather than rejected.
#[derive(Debug, Clone, Serialize, Deserialize, agent_client_protocol::JsonRpcNotification)]
#[notification(method = "session/update")]
#[serde(rename_all = "camelCase")]
struct RawSessionUpdate {
    session_id: String,
    update: Value,
}

/// A JSON-RPC id as the wire type (number or string, as the agent sent it).
fn request_id(raw: &Value) -> AcpRequestId {
    match raw {
        Value::Number(n) => AcpRequestId::Number(n.as_i64().unwrap_or_default()),
        other => {
            AcpRequestId::Text(other.as_str().map_or_else(|| other.to_string(), str::to_owned))
        }
    }
}

/// Sends a handler's answer: its response, or its error.
fn answer<T: agent_client_protocol::JsonRpcResponse>(
    responder: Responder<T>,
    result: Result<T, agent_client_protocol::Error>,
) -> Result<(), agent_client_protocol::Error> {
    match result {
        Ok(response) => responder.respond(response),
        Err(err) => responder.respond_with_error(err),
    }
}

/// The SDK client with every handler this bridge offers.
pub(crate) fn builder(
    ctx: Ctx,
) -> agent_client_protocol::v1::Builder<Client, impl agent_client_protocol::HandleDispatchFrom<Agent>>
{
    let (c1, c2, c3, c4, c5, c6, c7, c8, c9, c10) = (
        ctx.clone(),
        ctx.clone(),
        ctx.clone(),
        ctx.clone(),
        ctx.clone(),
        ctx.clone(),
        ctx.clone(),
        ctx.clone(),
        ctx.clone(),
        ctx,
    );
    Client
        .v1()
        .name("bb-bridge")
        .on_receive_notification(
            async move |n: RawSessionUpdate, _cx| {
                session_update(&c1, n).await;
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: RequestPermissionRequest, responder, _cx| {
                permission(&c2, req, responder).await
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ReadTextFileRequest, responder: Responder<ReadTextFileResponse>, _cx| {
                tokio::spawn(read_file(c3.clone(), req, responder));
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: WriteTextFileRequest, responder: Responder<WriteTextFileResponse>, _cx| {
                tokio::spawn(write_file(c4.clone(), req, responder));
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: CreateTerminalRequest, responder: Responder<CreateTerminalResponse>, _cx| {
                let ctx = &c5;
                if !ctx.env.gate.trusted() {
                    lock(&ctx.shared).counters.terminals_refused += 1;
                    return responder.respond_with_error(agent_client_protocol::Error::new(
                        -32603,
                        "the workspace is not trusted: the bridge runs no terminal for the agent until the user trusts it",
                    ));
                }
                match ctx.terminals.create(&req) {
                    Ok(id) => {
                        lock(&ctx.shared).counters.terminals += 1;
                        responder.respond(CreateTerminalResponse::new(id))
                    }
                    Err(err) => {
                        lock(&ctx.shared).counters.terminals_refused += 1;
                        responder.respond_with_error(err)
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: TerminalOutputRequest, responder: Responder<TerminalOutputResponse>, _cx| {
                match c6.terminals.output(&req.session_id.to_string(), &req.terminal_id.to_string()) {
                    Ok((text, truncated, exit)) => responder.respond(
                        TerminalOutputResponse::new(text, truncated).exit_status(exit.map(exit_status)),
                    ),
                    Err(err) => responder.respond_with_error(err),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: WaitForTerminalExitRequest, responder: Responder<WaitForTerminalExitResponse>, _cx| {
                let ctx = c7.clone();
                tokio::spawn(async move {
                    let sid = req.session_id.to_string();
                    let tid = req.terminal_id.to_string();
                    let sent = match ctx.terminals.wait(&sid, &tid).await {
                        Ok(info) => responder.respond(WaitForTerminalExitResponse::new(exit_status(info))),
                        Err(err) => responder.respond_with_error(err),
                    };
                    if let Err(err) = sent {
                        tracing::debug!(%err, "answering terminal/wait_for_exit failed");
                    }
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: KillTerminalRequest, responder: Responder<KillTerminalResponse>, _cx| {
                let done = c8.terminals.kill(&req.session_id.to_string(), &req.terminal_id.to_string());
                answer(responder, done.map(|()| KillTerminalResponse::new()))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ReleaseTerminalRequest, responder: Responder<ReleaseTerminalResponse>, _cx| {
                let done = c9.terminals.release(&req.session_id.to_string(), &req.terminal_id.to_string());
                answer(responder, done.map(|()| ReleaseTerminalResponse::new()))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let ctx = c10.clone();
                async move |req: CreateElicitationRequest, responder: Responder<CreateElicitationResponse>, _cx| {
                    elicitation(&ctx, req, responder).await
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CompleteElicitationNotification, _cx| {
                let kind = AcpEventKind::ElicitationSettled {
                    session_id: None,
                    request_id: None,
                    outcome: json!({"elicitationId": n.elicitation_id.to_string(), "completed": true}),
                };
                c10.emit(kind).await;
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
}

async fn session_update(ctx: &Ctx, n: RawSessionUpdate) {
    {
        let mut s = lock(&ctx.shared);
        if s.closed.contains(&n.session_id) {
            s.counters.dropped_after_close += 1;
            return;
        }
        if n.update.get("sessionUpdate").and_then(Value::as_str) == Some("config_option_update")
            && let Some(options) = n.update.get("configOptions").and_then(Value::as_array)
            && let Some(open) = s.open.get_mut(&n.session_id)
        {
            open.config_options.clone_from(options);
        }
    }
    ctx.emit(AcpEventKind::SessionUpdate { session_id: n.session_id, update: n.update }).await;
}

async fn permission(
    ctx: &Ctx,
    req: RequestPermissionRequest,
    responder: Responder<RequestPermissionResponse>,
) -> Result<(), agent_client_protocol::Error> {
    let session_id = req.session_id.to_string();
    let raw_id = serde_json::to_value(responder.id()).unwrap_or(Value::Null);
    let cancelled = lock(&ctx.shared).cancelled.contains(&session_id);
    if cancelled {
        return responder
            .respond(RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled));
    }
    let tool_call = serde_json::to_value(&req.tool_call).unwrap_or(Value::Null);
    let options = serde_json::to_value(&req.options).unwrap_or(Value::Null);
    let offered = req
        .options
        .iter()
        .map(|o| {
            let kind = serde_json::to_value(o.kind)
                .ok()
                .and_then(|k| k.as_str().map(str::to_owned))
                .unwrap_or_default();
            (o.option_id.to_string(), kind)
        })
        .collect();
    let rid = request_id(&raw_id);
    lock(&ctx.shared).asks.push(PermissionAsk {
        key: raw_id.to_string(),
        request_id: rid.clone(),
        session_id: session_id.clone(),
        options: offered,
        kind: tool_call.get("kind").and_then(Value::as_str).map(str::to_owned),
        paths: tool_call_paths(&tool_call),
        answer: Answer::Agent(Box::new(responder)),
    });
    ctx.emit(AcpEventKind::PermissionRequest { session_id, request_id: rid, tool_call, options })
        .await;
    Ok(())
}

/// Reports a file access (done, or refused and why) and counts it.
async fn report_fs(
    ctx: &Ctx,
    session_id: &str,
    op: &'static str,
    path: &str,
    refusal: Option<&FsRefusal>,
) {
    {
        let mut s = lock(&ctx.shared);
        match (refusal, op) {
            (Some(_), _) => s.counters.fs_refused += 1,
            (None, "read") => s.counters.fs_reads += 1,
            (None, _) => s.counters.fs_writes += 1,
        }
    }
    let kind = AcpEventKind::FileAccess {
        session_id: session_id.to_owned(),
        op,
        path: path.to_owned(),
        refused: refusal.map(ToString::to_string),
    };
    ctx.emit(kind).await;
}

async fn read_file(ctx: Ctx, req: ReadTextFileRequest, responder: Responder<ReadTextFileResponse>) {
    let session_id = req.session_id.to_string();
    let shown = req.path.display().to_string();
    let root = ctx.env.terminal.workspace.clone();
    let (line, limit) = (req.line, req.limit);
    let result = tokio::task::spawn_blocking(move || {
        let path = fs::inside(&root, &req.path)?;
        fs::read(&path).map(|text| fs::slice_lines(&text, line, limit))
    })
    .await
    .unwrap_or_else(|e| Err(FsRefusal::Io(format!("the read failed: {e}"))));
    report_fs(&ctx, &session_id, "read", &shown, result.as_ref().err()).await;
    let sent = match result {
        Ok(content) => responder.respond(ReadTextFileResponse::new(content)),
        Err(refusal) => responder.respond_with_error(refusal.to_rpc()),
    };
    if let Err(err) = sent {
        tracing::debug!(%err, "answering fs/read_text_file failed");
    }
}

/// A write: inside the workspace, trusted, and approved (by an approval of an edit of the
/// same file in this turn, else by the user now).
async fn write_file(
    ctx: Ctx,
    req: WriteTextFileRequest,
    responder: Responder<WriteTextFileResponse>,
) {
    let session_id = req.session_id.to_string();
    let shown = req.path.display().to_string();
    let result = allowed_write(&ctx, &session_id, &req.path, req.content.len()).await;
    let result = match result {
        Ok(path) => tokio::task::spawn_blocking(move || fs::write(&path, &req.content))
            .await
            .unwrap_or_else(|e| Err(FsRefusal::Io(format!("the write failed: {e}")))),
        Err(refusal) => Err(refusal),
    };
    report_fs(&ctx, &session_id, "write", &shown, result.as_ref().err()).await;
    let sent = match result {
        Ok(()) => responder.respond(WriteTextFileResponse::new()),
        Err(refusal) => responder.respond_with_error(refusal.to_rpc()),
    };
    if let Err(err) = sent {
        tracing::debug!(%err, "answering fs/write_text_file failed");
    }
}

async fn allowed_write(
    ctx: &Ctx,
    session_id: &str,
    requested: &std::path::Path,
    bytes: usize,
) -> Result<PathBuf, FsRefusal> {
    let root = ctx.env.terminal.workspace.clone();
    let req = requested.to_path_buf();
    let path = tokio::task::spawn_blocking(move || fs::inside(&root, &req))
        .await
        .unwrap_or_else(|e| Err(FsRefusal::Io(format!("the path check failed: {e}"))))?;
    if !ctx.env.gate.trusted() {
        return Err(FsRefusal::Untrusted);
    }
    let lexical = bb_normalize::contain::normalize(
        bb_normalize::PathFlavor::Posix,
        &requested.to_string_lossy(),
        None,
    )
    .unwrap_or_default();
    let (ask_id, rx) = {
        let mut s = lock(&ctx.shared);
        let granted = s.grants.iter().position(|(sid, p)| {
            sid == session_id && (*p == lexical || std::path::Path::new(p) == path)
        });
        if let Some(at) = granted {
            s.grants.remove(at);
            return Ok(path);
        }
        let id = s.next_ask_id("write");
        let (tx, rx) = oneshot::channel();
        s.asks.push(PermissionAsk {
            key: Value::String(id.clone()).to_string(),
            request_id: AcpRequestId::Text(id.clone()),
            session_id: session_id.to_owned(),
            options: vec![
                ("allow".to_owned(), "allow_once".to_owned()),
                ("reject".to_owned(), "reject_once".to_owned()),
            ],
            kind: Some("edit".to_owned()),
            paths: Vec::new(),
            answer: Answer::Bridge(tx),
        });
        (id, rx)
    };
    let shown = path.display().to_string();
    let tool_call = json!({
        "toolCallId": ask_id,
        "title": format!("Write {shown}"),
        "kind": "edit",
        "status": "pending",
        "locations": [{"path": shown}],
        "rawInput": {"path": shown, "bytes": bytes},
    });
    let options = json!([
        {"optionId": "allow", "name": "Allow the write", "kind": "allow_once"},
        {"optionId": "reject", "name": "Refuse", "kind": "reject_once"},
    ]);
    let kind = AcpEventKind::PermissionRequest {
        session_id: session_id.to_owned(),
        request_id: AcpRequestId::Text(ask_id),
        tool_call,
        options,
    };
    ctx.emit(kind).await;
    match rx.await {
        Ok(PermissionOutcome::Selected { option_id }) if option_id == "allow" => Ok(path),
        Ok(PermissionOutcome::Selected { .. }) => Err(FsRefusal::Denied(shown)),
        Ok(PermissionOutcome::Cancelled) | Err(_) => Err(FsRefusal::Io(format!(
            "the write of {shown} was cancelled before the user answered"
        ))),
    }
}

async fn elicitation(
    ctx: &Ctx,
    req: CreateElicitationRequest,
    responder: Responder<CreateElicitationResponse>,
) -> Result<(), agent_client_protocol::Error> {
    let raw_id = serde_json::to_value(responder.id()).unwrap_or(Value::Null);
    let session_id = match req.scope() {
        ElicitationScope::Session(s) => Some(s.session_id.to_string()),
        _ => None,
    };
    let schema = match &req.mode {
        ElicitationMode::Form(f) => {
            Some(serde_json::to_value(&f.requested_schema).unwrap_or(Value::Null))
        }
        ElicitationMode::Url(_) => None,
        // A mode this client does not know is never shown as a known one.
        _ => {
            let answer: CreateElicitationResponse =
                serde_json::from_value(json!({"action": "cancel"}))
                    .map_err(agent_client_protocol::Error::into_internal_error)?;
            return responder.respond(answer);
        }
    };
    if let Some(s) = &session_id
        && lock(&ctx.shared).cancelled.contains(s)
    {
        let answer: CreateElicitationResponse = serde_json::from_value(json!({"action": "cancel"}))
            .map_err(agent_client_protocol::Error::into_internal_error)?;
        return responder.respond(answer);
    }
    let request = serde_json::to_value(&req).unwrap_or(Value::Null);
    let rid = request_id(&raw_id);
    {
        let mut s = lock(&ctx.shared);
        s.counters.elicitations += 1;
        s.elicitations.push(ElicitationAsk {
            key: raw_id.to_string(),
            request_id: rid.clone(),
            session_id: session_id.clone(),
            schema,
            responder,
        });
    }
    ctx.emit(AcpEventKind::Elicitation { session_id, request_id: rid, request }).await;
    Ok(())
}
