//! The seam for the ACP methods (`acp_*`): the gateway hands every such request to an
//! [`AcpHandler`]. Until an ACP bridge is plugged in, [`AcpUnavailable`] answers each with
//! `not_supported`.

use async_trait::async_trait;
use bb_protocol::ws::{WsCall, WsError};
use serde_json::Value;

/// Serves the `acp_*` methods of the WebSocket transport for one gateway. Implementations
/// return the method's result as JSON (checked against the method's result type before it
/// is sent) or a wire error.
#[async_trait]
pub trait AcpHandler: Send + Sync + std::fmt::Debug {
    /// Answers one `acp_*` call (`call` is never a platform method).
    async fn call(&self, call: WsCall) -> Result<Value, WsError>;
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
