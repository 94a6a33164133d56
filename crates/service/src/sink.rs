//! The webview sink port: the service receives validated requests and sends typed envelopes.
//! `memory()` builds an in-process pair for tests; the stdio framing lives in
//! `bb-bridge-stdio` (`bb_bridge_stdio::stdio()`), which validates at the boundary.

use bb_protocol::V1Message;
use bb_protocol::v1::V1Request;
use tokio::sync::mpsc;

/// Outbound queue depth; a slow webview applies back-pressure to the service loop.
pub const OUTBOUND_CAPACITY: usize = 256;
/// Inbound queue depth.
pub const INBOUND_CAPACITY: usize = 64;

/// A message from the webview, already validated by the bridge.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// A request to answer.
    Request(V1Request),
    /// The webview was hidden (`false`) or shown (`true`).
    Visibility(bool),
    /// The bridge refused a line that was a request with a readable id: the error response
    /// owed for it, sent in its turn (after the responses to earlier requests).
    Rejected(bb_protocol::v1::V1Response),
}

/// The service's side of a webview connection. The inbound channel closing means the
/// webview went away.
#[derive(Debug)]
pub struct WebviewSink {
    /// Requests from the webview.
    pub inbound: mpsc::Receiver<Inbound>,
    /// Envelopes to the webview (validated by the bridge before they are written).
    pub outbound: mpsc::Sender<V1Message>,
}

/// The test side of a [`memory`] sink.
#[derive(Debug)]
pub struct MemoryWebview {
    /// Send requests to the service; drop to close.
    pub to_service: mpsc::Sender<Inbound>,
    /// What the service sent.
    pub from_service: mpsc::Receiver<V1Message>,
}

/// An in-memory webview connection.
pub fn memory() -> (WebviewSink, MemoryWebview) {
    let (in_tx, in_rx) = mpsc::channel(INBOUND_CAPACITY);
    let (out_tx, out_rx) = mpsc::channel(OUTBOUND_CAPACITY);
    (
        WebviewSink { inbound: in_rx, outbound: out_tx },
        MemoryWebview { to_service: in_tx, from_service: out_rx },
    )
}

/// The raw channels behind a sink, for bridges: the sink for the service, the sender the
/// bridge feeds requests into, and the receiver it writes envelopes from.
pub fn channels() -> (WebviewSink, mpsc::Sender<Inbound>, mpsc::Receiver<V1Message>) {
    let (sink, memory) = memory();
    (sink, memory.to_service, memory.from_service)
}
