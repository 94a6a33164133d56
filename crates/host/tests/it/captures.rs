//! The engine captures (`bb_test_support::captures`) as the engine events a host is fed.

use std::path::Path;

use bb_host::Engine;
use bb_protocol::v1::EngineEvent;

pub(crate) use bb_test_support::captures::captures;

/// The events of one capture, in order, as an adapter hands them to the host.
pub(crate) fn read(engine: Engine, path: &Path) -> Vec<EngineEvent> {
    bb_test_support::captures::raw_events(engine, path)
        .into_iter()
        .map(|ev| EngineEvent {
            id: ev.id.unwrap_or_default(),
            event_type: ev.kind,
            turn: ev.turn.and_then(|t| u64::try_from(t).ok()),
            ts: ev.ts.map(|t| t as f64),
            payload: if ev.payload.is_object() { ev.payload } else { Default::default() },
        })
        .collect()
}
