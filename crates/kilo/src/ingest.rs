//! The Kilo event mapping without its task: what the pump does with each router update, for
//! in-process replays of captures (`bb-harness ingest`) through the sidecar's own path.

use bb_host::Input;

use crate::client::KiloUpdate;
use crate::events::KiloEventState;

/// What the Kilo pump does with each update of the event router, without its task. Its
/// host inputs go to a `bb_service::Ingest`, as the pump's go to the service loop.
#[derive(Debug, Default)]
pub struct Mapping {
    state: KiloEventState,
}

impl Mapping {
    /// One update of the event router, mapped as the adapter maps it; the router's
    /// connection bookkeeping (reconnects, rehydration) is not replayed.
    pub fn map(&mut self, update: KiloUpdate) -> Vec<Input> {
        match update {
            KiloUpdate::Event { event, .. } => self.state.apply(event),
            KiloUpdate::Sync(sync) => self.state.sync_echo(&sync),
            _ => Vec::new(),
        }
    }
}
