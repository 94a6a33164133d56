//! The engine-event half of the service loop as a synchronous entry point: engine updates
//! into the host core, `bb/*` envelopes out. The service loop routes every engine update
//! through [`route_update`]; [`Ingest`] (the host core behind that routing) runs the same
//! code without the service's tasks, for in-process replays of captures (`bb-harness
//! ingest`, with each engine crate's event mapping before it).

use std::time::Instant;

use bb_host::{ConnId, Host, HostConfig, Input};
use bb_protocol::V1Message;
use bb_protocol::v1::{ConnectionPayload, ConnectionStatus, EngineKind, V1Event};

use crate::engine::{ConnectionUpdate, EngineUpdate};

/// Where one engine update goes in the host core.
#[derive(Debug)]
pub(crate) enum Routed {
    /// The connection changed: the service keeps it as its current connection payload.
    Connection(ConnectionPayload),
    /// Any other host input.
    Input(Input),
}

/// Maps an engine update to the host input it implies (`current`: the connection payload
/// a gap report extends).
pub(crate) fn route_update(update: EngineUpdate, current: &ConnectionPayload) -> Routed {
    Routed::Input(match update {
        EngineUpdate::Connection(ConnectionUpdate { status, retry_count, last_error }) => {
            return Routed::Connection(connection(status, retry_count, last_error));
        }
        EngineUpdate::GapDetected { session_id } => {
            let mut payload = current.clone();
            payload.session_id = session_id;
            payload.gap_detected = Some(true);
            Input::Connection(payload)
        }
        EngineUpdate::Events { session_id, events } => Input::EngineEvents { session_id, events },
        EngineUpdate::ClassifiedEvents { session_id, events } => {
            Input::ClassifiedEvents { session_id, events }
        }
        EngineUpdate::SessionUpserted(s) => Input::SessionUpserted(s),
        EngineUpdate::SessionRemoved(id) => Input::SessionRemoved(id),
        EngineUpdate::SessionsListed(list) => Input::SessionsListed(list),
        EngineUpdate::SessionRunning { session_id, running } => {
            Input::SessionRunning { session_id, running }
        }
        EngineUpdate::PendingPermissions { session_id, count } => {
            Input::PendingPermissions { session_id, count }
        }
        EngineUpdate::QueuedPrompts { session_id, count } => {
            Input::QueuedPrompts { session_id, count }
        }
    })
}

/// A connection payload with no session and no gap.
pub(crate) fn connection(
    status: ConnectionStatus,
    retry_count: Option<u64>,
    last_error: Option<String>,
) -> ConnectionPayload {
    ConnectionPayload {
        status,
        session_id: None,
        retry_count,
        last_error,
        gap_detected: None,
        // A reconnecting stream's retry count is its attempt number.
        attempt: retry_count.filter(|_| status == ConnectionStatus::Connecting),
        restarting: None,
        diagnostics: None,
    }
}

/// The connection an [`Ingest`] replays to.
const CONN: ConnId = 1;

/// The service loop's engine side for one webview connection without the loop around it:
/// engine updates into the host core (batching, coalescing, state), the outgoing envelopes
/// out. Time is passed in.
///
/// One webview connection, initialised (`bb.init` answered) and visible, drained as fast
/// as the host core publishes (tabs and per-tab `seq` as the runtime numbers them).
#[derive(Debug)]
pub struct Ingest {
    host: Host,
    connection: ConnectionPayload,
}

impl Ingest {
    /// The host core for `kind`'s events, with `config`'s batching, at `now`.
    pub fn new(kind: EngineKind, config: HostConfig, now: Instant) -> Self {
        let mut host = Host::new(crate::service::normalize_engine(kind), config);
        host.handle(Input::Opened(CONN), now);
        host.handle(Input::WebviewReady { conn: CONN, last_seen: Default::default() }, now);
        Self { host, connection: connection(ConnectionStatus::Connected, None, None) }
    }

    /// The webview selected `session_id` (its events publish at the active cadence).
    pub fn select(&mut self, session_id: &str, now: Instant) {
        let select =
            Input::SessionSelected { conn: CONN, session_id: session_id.to_owned(), tab_id: None };
        self.host.handle(select, now);
    }

    /// One engine update into the host core, as the service loop hands it over.
    pub fn engine_update(&mut self, update: EngineUpdate, now: Instant) {
        match route_update(update, &self.connection) {
            Routed::Connection(payload) => {
                self.connection = payload.clone();
                self.host.handle(Input::Connection(payload), now);
            }
            Routed::Input(input) => self.host.handle(input, now),
        }
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
