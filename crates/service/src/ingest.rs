//! The engine-input half of the service loop as a synchronous entry point: engine inputs
//! into the host core, `bb/*` envelopes out. [`Ingest`] runs the host core as the service
//! loop does, without the loop's tasks, for in-process replays of captures (`bb-harness
//! ingest`, with each engine crate's event mapping before it).

use std::time::Instant;

use bb_host::{ConnId, Host, HostConfig, Input};
use bb_protocol::V1Message;
use bb_protocol::v1::{ConnectionPayload, ConnectionStatus, EngineKind, V1Event};

/// A connection payload with no session and no gap.
pub(crate) fn connection(
    status: ConnectionStatus,
    retry_count: Option<u64>,
    last_error: Option<String>,
) -> ConnectionPayload {
    bb_host::connection_payload(status, retry_count, last_error)
}

/// The connection an [`Ingest`] replays to.
const CONN: ConnId = 1;

/// The service loop's engine side for one webview connection without the loop around it:
/// engine inputs into the host core (batching, coalescing, state), the outgoing envelopes
/// out. Time is passed in.
///
/// One webview connection, initialised (`bb.init` answered) and visible, drained as fast
/// as the host core publishes (tabs and per-tab `seq` as the runtime numbers them).
#[derive(Debug)]
pub struct Ingest {
    host: Host,
}

impl Ingest {
    /// The host core for `kind`'s events, with `config`'s batching, at `now`.
    pub fn new(kind: EngineKind, config: HostConfig, now: Instant) -> Self {
        let mut host = Host::new(crate::service::normalize_engine(kind), config);
        host.handle(Input::Opened(CONN), now);
        host.handle(Input::WebviewReady { conn: CONN, last_seen: Default::default() }, now);
        Self { host }
    }

    /// What the webview's `bb/events` messages carry (`bb.init({receive})`; events unless
    /// said otherwise).
    pub fn receive(&mut self, receive: bb_protocol::v1::Receive, now: Instant) {
        self.host.handle(Input::Receive { conn: CONN, receive }, now);
    }

    /// The webview selected `session_id` (its events publish at the active cadence).
    pub fn select(&mut self, session_id: &str, now: Instant) {
        let select =
            Input::SessionSelected { conn: CONN, session_id: session_id.to_owned(), tab_id: None };
        self.host.handle(select, now);
    }

    /// One engine input into the host core, as the service loop hands it over.
    pub fn engine_input(&mut self, input: Input, now: Instant) {
        self.host.handle(input, now);
    }

    /// Publishes the batches due at `now`.
    pub fn tick(&mut self, now: Instant) {
        self.host.handle_timeout(now);
    }

    /// The next envelope for the webview, as the service loop sends it.
    pub fn poll_output(&mut self) -> Option<V1Message> {
        self.host.poll_output().map(|(_, topic)| V1Message::Event(V1Event::new(topic)))
    }
}
