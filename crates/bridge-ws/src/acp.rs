//! The seam for the ACP methods (`acp_*`): the gateway hands every such request to an
//! [`AcpHandler`]. Until an ACP bridge is plugged in, [`AcpUnavailable`] answers each with
//! `not_supported`. Each WebSocket connection opens its own ACP side
//! ([`AcpHandler::open_connection`]): its calls, its agents and the events routed to it alone.

use std::sync::Arc;

use async_trait::async_trait;
use bb_protocol::ws::{WsCall, WsError, WsEventKind};
use serde_json::Value;
use tokio::sync::mpsc;

/// The ACP side of one WebSocket connection.
#[derive(Debug)]
pub struct AcpConnectionPort {
    /// Serves this connection's `acp_*` calls.
    pub handler: Arc<dyn AcpHandler>,
    /// Events for this connection only (`acp-session-update`, …); `None` when there are none.
    pub events: Option<mpsc::Receiver<WsEventKind>>,
}

/// Serves the `acp_*` methods of the WebSocket transport for one gateway. Implementations
/// return the method's result as JSON (checked against the method's result type before it
/// is sent) or a wire error.
#[async_trait]
pub trait AcpHandler: Send + Sync + std::fmt::Debug {
    /// Answers one `acp_*` call (`call` is never a platform method).
    async fn call(&self, call: WsCall) -> Result<Value, WsError>;

    /// Opens the ACP side of one new WebSocket connection. `None` (the default): this
    /// handler serves every connection, without events.
    fn open_connection(&self) -> Option<AcpConnectionPort> {
        None
    }

    /// The WebSocket connection closed: stop everything it started (its agents) and wait
    /// until that is done.
    async fn close(&self) {}
}

/// The handler used when no ACP bridge is available: a clear error for every method.
#[derive(Debug, Default)]
pub struct AcpUnavailable;

#[async_trait]
impl AcpHandler for AcpUnavailable {
    async fn call(&self, call: WsCall) -> Result<Value, WsError> {
        Err(WsError::new(
            "not_supported",
            format!(
                "`{}`: ACP agents are not available in this gateway yet; use the bb.* methods \
                 with --engine demo|kilo|breadboard",
                call.method()
            ),
        ))
    }
}
