//! The Kilo event mapping without its task: what the pump does with each router update, for
//! in-process replays of captures (`bb-harness ingest`) through the sidecar's own path.

use bb_host::{Input, push_merged};

use crate::client::KiloUpdate;
use crate::events::KiloEventState;

/// What the Kilo pump does with each update of the event router, without its task. Its
/// host inputs go to a `bb_service::Ingest`, as the pump's go to the service loop.
#[derive(Debug, Default)]
pub struct Mapping {
    state: KiloEventState,
    /// One update's inputs (a buffer kept across updates).
    inputs: Vec<Input>,
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

    /// [`Mapping::map`], the inputs pushed onto `out` as the pump pushes them: adjacent
    /// events of one session merged (`bb_host::push_merged`).
    pub fn map_merged(&mut self, update: KiloUpdate, out: &mut Vec<Input>) {
        let mut inputs = std::mem::take(&mut self.inputs);
        match update {
            KiloUpdate::Event { event, .. } => self.state.apply_into(event, &mut inputs),
            KiloUpdate::Sync(sync) => inputs.extend(self.state.sync_echo(&sync)),
            _ => {}
        }
        for input in inputs.drain(..) {
            push_merged(out, input);
        }
        self.inputs = inputs;
    }
}
