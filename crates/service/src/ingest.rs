//! The engine-event half of the service loop as a synchronous entry point: engine updates
//! into the host core, `bb/*` envelopes out. The service loop routes every engine update
//! through [`route_update`]; [`Mapping`] (the adapters' event mapping) and [`Ingest`] (the
//! host core behind that routing) run the same code without the service's tasks, for
//! in-process replays of captures (`bb-harness ingest`).

use std::collections::HashMap;
use std::time::Instant;

use bb_engine_client::breadboard::StreamUpdate;
use bb_engine_client::kilo::KiloUpdate;
use bb_host::{ConnId, Host, HostConfig, Input};
use bb_protocol::V1Message;
use bb_protocol::v1::{ConnectionPayload, ConnectionStatus, EngineKind, V1Event};

use crate::breadboard::mapping::SessionState as BreadboardState;
use crate::engine::{ConnectionUpdate, EngineUpdate};
use crate::kilo::events::KiloEventState;

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

/// The adapters' event mapping without their tasks: what the Kilo pump does with each
/// router update, and what a BreadBoard stream task does with each stream update. Its
/// engine updates go to an [`Ingest`], as the pump's go to the service loop.
#[derive(Debug, Default)]
pub struct Mapping {
    kilo: KiloEventState,
    breadboard: HashMap<String, BreadboardState>,
}

impl Mapping {
    /// One update of the Kilo event router, mapped as the Kilo adapter maps it; the router's
    /// connection bookkeeping (reconnects, rehydration) is not replayed.
    pub fn kilo(&mut self, update: KiloUpdate) -> Vec<EngineUpdate> {
        match update {
            KiloUpdate::Event { event, .. } => self.kilo.apply(event),
            KiloUpdate::Sync(sync) => self.kilo.sync_echo(&sync),
            _ => Vec::new(),
        }
    }

    /// One update of a BreadBoard session stream, mapped as the BreadBoard adapter maps it.
    pub fn breadboard(&mut self, session_id: &str, update: StreamUpdate) -> Vec<EngineUpdate> {
        let state = self.breadboard.entry(session_id.to_owned()).or_default();
        state.apply(session_id, update)
    }
}

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
