//! The gateway's `acp_*` methods: one `bb_acp::AcpHub` per WebSocket connection, so a
//! connection's agents and their events belong to it alone and end when it closes.

use std::sync::Arc;

use async_trait::async_trait;
use bb_acp::{AcpError, AcpHub, LaunchPolicy};
use bb_bridge_ws::{AcpConnectionPort, AcpHandler};
use bb_protocol::ws::{WsCall, WsError, WsEventKind};
use bb_supervisor::{ProcessSpawner, TokioSpawner};
use serde_json::Value;
use tokio::sync::mpsc;

/// Events queued per connection on their way to the WebSocket writer.
const EVENT_QUEUE: usize = 256;

/// Opens a hub for each connection.
#[derive(Debug)]
pub(crate) struct GatewayAcp {
    policy: LaunchPolicy,
    spawner: Arc<dyn ProcessSpawner>,
}

impl GatewayAcp {
    /// Agents start in `workspace` (or inside it; anywhere when `trusted`) with the
    /// gateway's allow-listed environment.
    pub(crate) fn new(workspace: std::path::PathBuf, trusted: bool) -> Self {
        Self {
            policy: LaunchPolicy::from_process_env(workspace, trusted),
            spawner: Arc::new(TokioSpawner::default()),
        }
    }
}

#[async_trait]
impl AcpHandler for GatewayAcp {
    async fn call(&self, call: WsCall) -> Result<Value, WsError> {
        // Every connection gets its own hub; this shared handler is never asked.
        Err(WsError::new(
            "internal_error",
            format!("{}: no ACP hub for this connection", call.method()),
        ))
    }

    fn open_connection(&self) -> Option<AcpConnectionPort> {
        let (hub, mut hub_events) = AcpHub::new(self.policy.clone(), self.spawner.clone());
        let (tx, rx) = mpsc::channel::<WsEventKind>(EVENT_QUEUE);
        tokio::spawn(async move {
            while let Some(event) = hub_events.recv().await {
                if tx.send(event.to_ws()).await.is_err() {
                    break;
                }
            }
        });
        Some(AcpConnectionPort { handler: Arc::new(ConnectionAcp { hub }), events: Some(rx) })
    }
}

/// One connection's hub.
#[derive(Debug)]
struct ConnectionAcp {
    hub: AcpHub,
}

fn wire(err: AcpError) -> WsError {
    WsError::new(err.code(), err.to_string())
}

fn json<T: serde::Serialize>(value: T) -> Result<Value, WsError> {
    serde_json::to_value(value).map_err(|e| WsError::new("internal_error", e.to_string()))
}

#[async_trait]
impl AcpHandler for ConnectionAcp {
    async fn call(&self, call: WsCall) -> Result<Value, WsError> {
        let hub = &self.hub;
        match call {
            WsCall::AcpConnect(p) => json(hub.connect(p).await.map_err(wire)?),
            WsCall::AcpDisconnect(p) => hub.disconnect(p).await.map_err(wire).map(|()| Value::Null),
            WsCall::AcpSessionNew(p) => json(hub.session_new(p).await.map_err(wire)?),
            WsCall::AcpSessionLoad(p) => {
                hub.session_load(p).await.map_err(wire).map(|()| Value::Null)
            }
            WsCall::AcpSessionPrompt(p) => json(hub.session_prompt(p).await.map_err(wire)?),
            WsCall::AcpSessionCancel(p) => {
                hub.session_cancel(p).await.map_err(wire).map(|()| Value::Null)
            }
            WsCall::AcpPermissionReply(p) => {
                hub.permission_reply(p).await.map_err(wire).map(|()| Value::Null)
            }
            WsCall::AcpSessionList(p) => json(hub.session_list(p).await.map_err(wire)?),
            WsCall::AcpSessionResume(p) => json(hub.session_resume(p).await.map_err(wire)?),
            WsCall::AcpSessionClose(p) => {
                hub.session_close(p).await.map_err(wire).map(|()| Value::Null)
            }
            WsCall::AcpSessionDelete(p) => {
                hub.session_delete(p).await.map_err(wire).map(|()| Value::Null)
            }
            WsCall::AcpSessionSetConfigOption(p) => {
                json(hub.session_set_config_option(p).await.map_err(wire)?)
            }
            WsCall::AcpElicitationReply(p) => {
                hub.elicitation_reply(p).await.map_err(wire).map(|()| Value::Null)
            }
            other => Err(WsError::new(
                "unknown_method",
                format!("{} is not an ACP method", other.method()),
            )),
        }
    }

    async fn close(&self) {
        self.hub.close_all().await;
    }
}
