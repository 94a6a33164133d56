//! The host ↔ webview RPC envelope, version 1.

mod applied;
mod decode;
mod envelope;
mod events;
pub(crate) mod events_line;
mod params;
mod results;
mod state_line;
mod topics;
mod update_list;
mod updates;

pub use applied::{AppliedBlock, UNKNOWN_KEPT, UpdatedView};
pub use decode::decode_v1;
pub use envelope::{V1Call, V1Error, V1Event, V1Message, V1Method, V1Request, V1Response};
pub use events::{Events, EventsWriter, Refused};
pub use params::*;
pub use results::*;
pub use topics::*;
pub use update_list::Updates;
pub use updates::*;
