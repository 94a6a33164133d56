//! The BreadBoard event mapping without its tasks: what a session's stream task does with
//! each stream update, for in-process replays of captures (`bb-harness ingest`).

use bb_host::Input;

use crate::client::StreamUpdate;
use crate::mapping::States;

/// What each session's stream task does with its stream updates, without the tasks. Its
/// host inputs go to a `bb_service::Ingest`, as a stream task's go to the service loop.
#[derive(Debug, Default)]
pub struct Mapping {
    sessions: States,
}

impl Mapping {
    /// One update of `session_id`'s stream, mapped as the adapter maps it.
    pub fn map(&mut self, session_id: &str, update: StreamUpdate) -> Vec<Input> {
        self.sessions.entry(session_id.to_owned()).or_default().apply(session_id, update)
    }
}
