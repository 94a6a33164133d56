//! The webview sink port: the service receives validated requests and sends typed envelopes.
//! `memory()` builds an in-process pair for tests; the stdio framing lives in
//! `bb-bridge-stdio` (`bb_bridge_stdio::stdio()`), which validates at the boundary.
//!
//! # Write acknowledgement
//!
//! A bridge that writes envelopes to a transport reports how many it has written (and
//! flushed) so far on a [`WriteAck`] (`tokio::sync::watch` of a count, transport-neutral: the
//! stdio writer and a WebSocket writer both just count). The runtime numbers what it hands to
//! `outbound` the same way, so "message n was written" is `written >= n`; only then does it
//! tell the engine adapter that the events in it were delivered. An envelope the bridge
//! drops (failed validation) still counts as handled. A sink without acknowledgements
//! (`written: None`, as [`memory`] builds) counts a message as written once the channel
//! took it.

use bb_protocol::V1Message;
use bb_protocol::v1::V1Request;
use tokio::sync::{mpsc, watch};

/// Outbound queue depth. The runtime never waits on a full queue: it holds that
/// connection's output back (events wait in their tabs' rings) until there is room again.
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
}

/// The service's side of a webview connection. The inbound channel closing means the
/// webview went away.
#[derive(Debug)]
pub struct WebviewSink {
    /// Requests from the webview.
    pub inbound: mpsc::Receiver<Inbound>,
    /// Envelopes to the webview (validated by the bridge before they are written).
    pub outbound: mpsc::Sender<V1Message>,
    /// How many envelopes taken from `outbound` the bridge has written, when it reports it.
    pub written: Option<watch::Receiver<u64>>,
}

/// The bridge's side of a write acknowledgement: call [`WriteAck::wrote`] after each
/// envelope taken from the outbound channel was written (or dropped).
#[derive(Debug)]
pub struct WriteAck {
    tx: watch::Sender<u64>,
}

impl WriteAck {
    /// One more envelope was written (or dropped) and flushed.
    pub fn wrote(&self) {
        self.tx.send_modify(|n| *n += 1);
    }
}

/// The test side of a [`memory`] sink.
#[derive(Debug)]
pub struct MemoryWebview {
    /// Send requests to the service; drop to close.
    pub to_service: mpsc::Sender<Inbound>,
    /// What the service sent.
    pub from_service: mpsc::Receiver<V1Message>,
}

/// An in-memory webview connection (without write acknowledgements).
pub fn memory() -> (WebviewSink, MemoryWebview) {
    let (in_tx, in_rx) = mpsc::channel(INBOUND_CAPACITY);
    let (out_tx, out_rx) = mpsc::channel(OUTBOUND_CAPACITY);
    (
        WebviewSink { inbound: in_rx, outbound: out_tx, written: None },
        MemoryWebview { to_service: in_tx, from_service: out_rx },
    )
}

/// The raw channels behind a sink, for bridges: the sink for the service, the sender the
/// bridge feeds requests into, and the receiver it writes envelopes from.
pub fn channels() -> (WebviewSink, mpsc::Sender<Inbound>, mpsc::Receiver<V1Message>) {
    let (sink, memory) = memory();
    (sink, memory.to_service, memory.from_service)
}

/// Like [`channels`], with the acknowledgement the bridge reports written envelopes on.
pub fn channels_with_ack()
-> (WebviewSink, mpsc::Sender<Inbound>, mpsc::Receiver<V1Message>, WriteAck) {
    let (mut sink, to_service, from_service) = channels();
    let (tx, rx) = watch::channel(0);
    sink.written = Some(rx);
    (sink, to_service, from_service, WriteAck { tx })
}

/// A channel of webview connections for [`crate::Service::run`] holding just `sink`: the
/// runtime serves it and ends when it closes.
pub fn single(sink: WebviewSink) -> mpsc::Receiver<WebviewSink> {
    let (tx, rx) = mpsc::channel(1);
    // Capacity 1, fresh channel: this cannot fail.
    let _ = tx.try_send(sink);
    rx
}
