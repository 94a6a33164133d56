//! One WebSocket connection = one webview: its requests go to the runtime as a
//! `WebviewSink`, its envelopes come back through it; platform and ACP methods are answered
//! here through their ports.

use std::sync::Arc;

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use bb_protocol::v1::V1Request;
use bb_protocol::ws::{
    WsCall, WsError, WsEvent, WsEventKind, WsMessage, WsRequest, WsRequestCall, WsResponse,
};
use bb_protocol::{Limits, decode_ws};
use bb_service::Inbound;
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::acp::{AcpConnectionPort, AcpHandler};
use crate::convert::to_ws;
use crate::server::WsState;

/// WebSocket close code: a message was larger than the gateway accepts.
pub const CLOSE_TOO_BIG: u16 = 1009;
/// WebSocket close code: the server cannot serve the connection.
pub const CLOSE_UNAVAILABLE: u16 = 1011;
/// WebSocket close code: the server is going away.
pub const CLOSE_GOING_AWAY: u16 = 1001;

/// What the reader asks the writer to send besides the service's envelopes.
enum Local {
    Message(Box<WsMessage>),
    /// Close with this code and reason, then stop.
    Close(u16, String),
    /// The peer closed (the WebSocket layer answered the closing handshake): stop.
    End,
}

/// Serves one authenticated connection until either side closes.
pub(crate) async fn serve(socket: WebSocket, state: Arc<WsState>) {
    let (mut ws_tx, ws_rx) = socket.split();
    let (sink, to_service, mut from_service, ack) = bb_service::sink::channels_with_ack();
    if state.connections.send(sink).await.is_err() {
        let frame =
            CloseFrame { code: CLOSE_UNAVAILABLE, reason: "the gateway is stopping".into() };
        let _ = ws_tx.send(Message::Close(Some(frame))).await;
        return;
    }
    let (local_tx, mut local_rx) = mpsc::channel::<Local>(64);
    let limits = state.limits;
    let mut stopping = state.stopping.clone();
    let AcpConnectionPort { handler: acp, events: acp_events } = state
        .acp
        .open_connection()
        .unwrap_or_else(|| AcpConnectionPort { handler: state.acp.clone(), events: None });
    let mut acp_events = acp_events;
    let reader = tokio::spawn(read_loop(ws_rx, to_service, local_tx, state.clone(), acp.clone()));
    let writer = async move {
        loop {
            // Biased: a close the reader queued goes out before the runtime's end of the
            // connection is noticed (which would close without a code).
            let line = tokio::select! {
                biased;
                () = async { drop(stopping.wait_for(|stop| *stop).await) } => {
                    let frame = CloseFrame { code: CLOSE_GOING_AWAY, reason: "the gateway is stopping".into() };
                    let _ = ws_tx.send(Message::Close(Some(frame))).await;
                    break;
                }
                local = local_rx.recv() => match local {
                    Some(Local::Message(message)) => encode(*message, &limits),
                    Some(Local::Close(code, reason)) => {
                        let frame = CloseFrame { code, reason: reason.into() };
                        let _ = ws_tx.send(Message::Close(Some(frame))).await;
                        break;
                    }
                    Some(Local::End) | None => break,
                },
                message = from_service.recv() => {
                    let Some(message) = message else {
                        let frame = CloseFrame { code: CLOSE_UNAVAILABLE, reason: "the runtime stopped serving this connection".into() };
                        let _ = ws_tx.send(Message::Close(Some(frame))).await;
                        break;
                    };
                    // The runtime learns an envelope was written (or dropped) once this
                    // iteration is over.
                    let line = to_ws(message).and_then(|m| encode(m, &limits));
                    let Some(line) = line else {
                        ack.wrote();
                        continue;
                    };
                    let sent = ws_tx.send(Message::Text(line.into())).await;
                    ack.wrote();
                    if let Err(err) = sent {
                        tracing::debug!(%err, "writing to the webview failed; closing the connection");
                        break;
                    }
                    continue;
                }
                Some(event) = next_acp_event(&mut acp_events) => {
                    encode(WsMessage::Event(WsEvent::new(event)), &limits)
                }
            };
            let Some(line) = line else { continue };
            if let Err(err) = ws_tx.send(Message::Text(line.into())).await {
                tracing::debug!(%err, "writing to the webview failed; closing the connection");
                break;
            }
        }
        let _ = ws_tx.close().await;
    };
    // The writer runs until the reader says the connection ended (after queueing a close
    // frame when the gateway closes it), the runtime drops the connection, or a write fails.
    writer.await;
    reader.abort();
    // The connection's agents end with it.
    acp.close().await;
    tracing::info!("webview connection closed");
}

/// The next ACP event of this connection; pends forever when it has none (or no more).
async fn next_acp_event(events: &mut Option<mpsc::Receiver<WsEventKind>>) -> Option<WsEventKind> {
    match events {
        Some(rx) => match rx.recv().await {
            Some(event) => Some(event),
            None => {
                *events = None;
                std::future::pending().await
            }
        },
        None => std::future::pending().await,
    }
}

/// Validates an outbound message; an invalid response becomes an `internal_error` response,
/// an invalid event is dropped and logged.
fn encode(message: WsMessage, limits: &Limits) -> Option<String> {
    match message.to_line(limits) {
        Ok(line) => Some(line),
        Err(rejection) => {
            tracing::error!(code = %rejection.code, detail = %rejection.detail, "outbound message failed validation; not sent");
            let WsMessage::Response(response) = message else { return None };
            let error = WsError::new("internal_error", "the bridge produced an invalid response");
            WsMessage::Response(WsResponse::failure(response.id, error)).to_line(limits).ok()
        }
    }
}

async fn read_loop(
    ws_rx: futures_util::stream::SplitStream<WebSocket>,
    to_service: mpsc::Sender<Inbound>,
    local: mpsc::Sender<Local>,
    state: Arc<WsState>,
    acp: Arc<dyn AcpHandler>,
) {
    read_messages(ws_rx, to_service, &local, state, acp).await;
    let _ = local.send(Local::End).await;
}

async fn read_messages(
    mut ws_rx: futures_util::stream::SplitStream<WebSocket>,
    to_service: mpsc::Sender<Inbound>,
    local: &mpsc::Sender<Local>,
    state: Arc<WsState>,
    acp: Arc<dyn AcpHandler>,
) {
    while let Some(frame) = ws_rx.next().await {
        let raw: Vec<u8> = match frame {
            Ok(Message::Text(text)) => text.as_str().as_bytes().to_vec(),
            Ok(Message::Binary(bytes)) => bytes.to_vec(),
            // Reading on lets the WebSocket layer complete the closing handshake; the stream
            // then ends.
            Ok(Message::Close(_) | Message::Ping(_) | Message::Pong(_)) => continue,
            Err(err) => {
                // Over-long messages and frames end here (tungstenite's capacity limits),
                // as do protocol errors: the connection is closed with a reason.
                let text = err.to_string();
                let (code, reason) = if text.contains("Space limit exceeded")
                    || text.contains("too long")
                    || text.contains("too big")
                {
                    (CLOSE_TOO_BIG, format!("message larger than {} bytes", state.limits.max_bytes))
                } else {
                    (1002, "WebSocket protocol error".to_owned())
                };
                tracing::warn!(%err, "closing a webview connection");
                let _ = local.send(Local::Close(code, reason)).await;
                return;
            }
        };
        match decode_ws(&raw, &state.limits) {
            Ok(WsMessage::Request(request)) => {
                if !dispatch(request, &to_service, local, &state, &acp).await {
                    break;
                }
            }
            Ok(other) => {
                let kind =
                    if matches!(other, WsMessage::Response(_)) { "response" } else { "event" };
                tracing::warn!(kind, "protocol violation: the webview may only send requests");
            }
            Err(rejection) => {
                tracing::warn!(code = %rejection.code, detail = %rejection.detail, "protocol violation");
                if let Some(response) = rejection.ws_response()
                    && local
                        .send(Local::Message(Box::new(WsMessage::Response(response))))
                        .await
                        .is_err()
                {
                    break;
                }
            }
        }
    }
}

/// Routes one request; `false` when the connection is gone.
async fn dispatch(
    request: WsRequest,
    to_service: &mpsc::Sender<Inbound>,
    local: &mpsc::Sender<Local>,
    state: &Arc<WsState>,
    acp: &Arc<dyn AcpHandler>,
) -> bool {
    let WsRequest { id, call, .. } = request;
    match call {
        WsRequestCall::Bb(call) => {
            let method = call.method();
            if to_service.send(Inbound::Request(V1Request::new(id.clone(), call))).await.is_ok() {
                return true;
            }
            let error = WsError::new(
                "engine_unavailable",
                format!("{method}: the runtime is gone; reload the page to reconnect"),
            );
            let _ = local
                .send(Local::Message(Box::new(WsMessage::Response(WsResponse::failure(id, error)))))
                .await;
            false
        }
        WsRequestCall::Ws(call) => {
            // Platform and ACP calls may take a while (a dialog waits for the user): they run
            // beside the reader and answer when done.
            let local = local.clone();
            let state = state.clone();
            let acp = acp.clone();
            tokio::spawn(async move {
                let response = answer(id, call, &state, acp.as_ref()).await;
                let _ = local.send(Local::Message(Box::new(WsMessage::Response(response)))).await;
            });
            true
        }
    }
}

async fn answer(id: String, call: WsCall, state: &WsState, acp: &dyn AcpHandler) -> WsResponse {
    let method = call.method();
    let outcome = match call {
        WsCall::DialogOpen(params) => state
            .platform
            .dialog_open(params)
            .await
            .and_then(|r| serde_json::to_value(r).map_err(internal)),
        WsCall::ShellOpenPath(params) => {
            state.platform.open_path(params).await.map(|()| Value::Null)
        }
        other => acp.call(other).await,
    };
    match outcome {
        Ok(result) => match method.check_result(&result) {
            Ok(()) => WsResponse::success(id, result),
            Err(err) => {
                tracing::error!(%method, %err, "a handler returned a result of the wrong shape");
                WsResponse::failure(
                    id,
                    WsError::new(
                        "internal_error",
                        format!("{method}: the handler returned an invalid result"),
                    ),
                )
            }
        },
        Err(error) => WsResponse::failure(id, error),
    }
}

fn internal(err: serde_json::Error) -> WsError {
    WsError::new("internal_error", err.to_string())
}
